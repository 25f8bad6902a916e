"""Text that is not UTF-8 plain text, refused in one line by alm-score (files and stdin) and
alm-rescore (n-best lists and references), as examples/language_model/prepare_lm_data.py refuses
it in a corpus (alm_plugin/cli/plain_text.py).

Before: UTF-16LE piped to alm-score without a byte-order mark was read as UTF-8 (a NUL is a valid
character) and scored, rc 0 (2 sentences, 5 <unk>, ppl 25.40); `the\\x00game` was scored as one
<unk>; UTF-16 with its mark was refused with the advice `iconv -f latin1`."""

import pytest
from cli import refused, run_module

TEXT = "The game was released in Japan .\nIt met with positive sales .\n"
NUL_ADVICE = (
    "this is not plain text (UTF-16, or a binary file?); convert it to UTF-8, e.g. iconv -f utf-16 -t utf-8, "
    "or remove the NUL bytes"
)

CASES = {  # name -> (the bytes, what the one line says after the file's name)
    "UTF-16LE without a byte-order mark": (TEXT.encode("utf-16-le"), f":1: a NUL byte at column 2: {NUL_ADVICE}"),
    "UTF-16BE without a byte-order mark": (TEXT.encode("utf-16-be"), f":1: a NUL byte at column 1: {NUL_ADVICE}"),
    "UTF-16 with its byte-order mark (FF FE)": (
        b"\xff\xfe" + TEXT.encode("utf-16-le"),
        ": UTF-16 text (it begins with the byte-order mark FF FE), not UTF-8: "
        "convert it, e.g. iconv -f utf-16 -t utf-8",
    ),
    "UTF-16BE with its byte-order mark (FE FF)": (
        b"\xfe\xff" + TEXT.encode("utf-16-be"),
        ": UTF-16 text (it begins with the byte-order mark FE FF)",
    ),
    "UTF-32 with its byte-order mark": (
        TEXT.encode("utf-32"),
        ": UTF-32 text (it begins with the byte-order mark "
        "FF FE 00 00), not UTF-8: convert it, e.g. iconv -f "
        "utf-32 -t utf-8",
    ),
    "a NUL byte inside a word": (
        b"The game .\nthe\x00game was released .\n",
        f":2: a NUL byte at column 4: {NUL_ADVICE}",
    ),
    "UTF-32BE without a byte-order mark": (  # before: told to convert it from UTF-16
        TEXT.encode("utf-32-be"),
        ":1: a NUL byte at column 1: this looks like UTF-32BE text without a byte-order mark, not UTF-8; "
        "convert it, e.g. iconv -f utf-32be -t utf-8",
    ),
    "UTF-32LE without a byte-order mark": (
        TEXT.encode("utf-32-le"),
        ":1: a NUL byte at column 2: this looks like UTF-32LE text without a byte-order mark",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_alm_score_refuses_a_file_that_is_not_utf8_text(tiny_attentive, tmp_path, case):
    checkpoint, _ = tiny_attentive
    data, says = CASES[case]
    text = tmp_path / "text.txt"
    text.write_bytes(data)
    code, stdout, stderr = run_module("alm_plugin.cli.score", "--path", checkpoint, text)
    assert code == 1 and refused(stderr, "alm-score", f"{text}{says}") and stdout == ""


@pytest.mark.parametrize("case", ["UTF-16LE without a byte-order mark", "a NUL byte inside a word"])
def test_alm_score_refuses_stdin_that_is_not_utf8_text(tiny_attentive, case):
    """The pipe the issue names: `iconv -t utf-16le | alm-score` (bytes below 0x80 pass stdin as they are)."""
    checkpoint, _ = tiny_attentive
    data, says = CASES[case]
    code, stdout, stderr = run_module("alm_plugin.cli.score", "--path", checkpoint, stdin=data.decode("latin-1"))
    assert code == 1 and refused(stderr, "alm-score", f"stdin{says}") and stdout == ""


def test_the_second_file_is_named_and_nothing_is_scored(tiny_attentive, tmp_path):
    checkpoint, _ = tiny_attentive
    good, bad = tmp_path / "good.txt", tmp_path / "bad.txt"
    good.write_text(TEXT, encoding="utf-8")
    bad.write_bytes(TEXT.encode("utf-16-le"))
    code, stdout, stderr = run_module("alm_plugin.cli.score", "--path", checkpoint, good, bad)
    assert code == 1 and refused(stderr, "alm-score", f"{bad}:1: a NUL byte at column 2") and stdout == ""


NBEST = "H-0\t-1.5\tthe cat sat\nP-0\t-0.5 -0.5 -0.25 -0.25\nH-1\t-0.5\tthe dog\nP-1\t-0.25 -0.25 -0.25\n"


def encoded(text, case):
    """``text`` in the encoding of ``case`` (its NUL case: a NUL inside the first line's last word)."""
    return {
        "UTF-16LE without a byte-order mark": lambda: text.encode("utf-16-le"),
        "UTF-16BE without a byte-order mark": lambda: text.encode("utf-16-be"),
        "UTF-16 with its byte-order mark (FF FE)": lambda: b"\xff\xfe" + text.encode("utf-16-le"),
        "UTF-16BE with its byte-order mark (FE FF)": lambda: b"\xfe\xff" + text.encode("utf-16-be"),
        "UTF-32 with its byte-order mark": lambda: text.encode("utf-32"),
        "a NUL byte inside a word": lambda: text.replace("cat sat", "cat s\0at", 1).encode("utf-8"),
        "UTF-32BE without a byte-order mark": lambda: text.encode("utf-32-be"),
        "UTF-32LE without a byte-order mark": lambda: text.encode("utf-32-le"),
    }[case]()


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("which", ["--nbest", "--ref"])
def test_alm_rescore_refuses_an_nbest_list_or_references_that_are_not_utf8_text(tiny_attentive, tmp_path, case, which):
    checkpoint, _ = tiny_attentive
    nbest, ref = tmp_path / "in.nbest", tmp_path / "ref.txt"
    nbest.write_text(NBEST, encoding="utf-8")
    ref.write_text("the cat sat\nthe dog\n", encoding="utf-8")
    bad = nbest if which == "--nbest" else ref
    bad.write_bytes(encoded(bad.read_text(encoding="utf-8"), case))
    out = tmp_path / "best.txt"
    code, stdout, stderr = run_module(
        "alm_plugin.cli.rescore",
        "--nbest",
        nbest,
        "--ref",
        ref,
        "--lm",
        checkpoint,
        "--hyp-form",
        "tok",
        "--lm-form",
        "tok",
        "--cpu",
        "--output-1best",
        out,
    )
    first_line = CASES[case][1].split(": ")[0]  # ":1", ":2" or "" (a byte-order mark)
    what = ": UTF-" if not first_line else ": a NUL byte at column"
    line = {"a NUL byte inside a word": ":1"}.get(case, first_line)
    assert code == 1 and refused(stderr, "alm-rescore", f"{bad}{line}{what}")
    assert not out.exists()
