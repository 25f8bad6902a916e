"""alm-rescore fed bad input (a truncated or repeated n-best, missing sentences, a file that is not
UTF-8, a corrupt checkpoint, a dictionary that does not match, a grid that never ends, an output on an
input): one clear line, a non-zero exit, no half-written output; CR LF line ends and an infinite
score are read as they should be."""

import os

import pytest
from cli import last_line, run_module
from conftest import SAMPLE_DATA

NBEST = (
    "H-0\t-1.5\tthe cat sat\nP-0\t-0.5 -0.5 -0.25 -0.25\nH-0\t-2.0\ta cat\nP-0\t-1.0 -0.5 -0.5\n"
    "H-1\t-0.5\tthe dog\nP-1\t-0.25 -0.25 -0.25\n"
)


def rescore(tmp_path, nbest, *args, lm="checkpoint"):
    path = tmp_path / "in.nbest"
    path.write_bytes(nbest if isinstance(nbest, bytes) else nbest.encode("utf-8"))
    code, stdout, stderr = run_module(
        "alm_plugin.cli.rescore", "--nbest", path, "--lm", lm, "--hyp-form", "tok", "--lm-form", "tok", "--cpu", *args
    )
    return code, stdout + stderr


def test_rescore_refuses_a_truncated_positional_score_line(tmp_path, tiny_lm):
    code, output = rescore(tmp_path, NBEST.replace("-0.5 -0.5 -0.25 -0.25", "-0.5 -0.5"), lm=tiny_lm)
    assert code != 0 and "in.nbest:2: P-0 has 2 scores but its hypothesis (line 1) has 3 tokens" in last_line(output)


def test_rescore_refuses_a_1best_with_missing_sentences(tmp_path, tiny_lm):
    out = tmp_path / "best.txt"
    truncated = NBEST + "H-3\t-0.5\tthe dog\nP-3\t-0.25 -0.25 -0.25\n"  # ids 0, 1, 3: 2 is missing
    code, output = rescore(tmp_path, truncated, "--output-1best", out, lm=tiny_lm)
    assert code != 0 and "sentence ids 2 have no hypotheses" in last_line(output), output
    assert not out.exists() and not os.path.exists(f"{out}.partial")


def test_rescore_refuses_a_repeated_hypothesis(tmp_path, tiny_lm):
    code, output = rescore(tmp_path, NBEST + NBEST, lm=tiny_lm)
    assert code != 0 and "in.nbest:7: the hypothesis of line 1 appears again for sentence 0" in last_line(output)


def test_rescore_ranks_an_infinite_score_last_and_writes_no_nan(tmp_path, tiny_lm):
    out = tmp_path / "out.nbest"
    minus_inf = NBEST.replace(
        "H-0\t-1.5\tthe cat sat\nP-0\t-0.5 -0.5 -0.25 -0.25", "H-0\t-inf\tthe cat sat\nP-0\t-0.5 -inf -0.25 -0.25"
    )
    code, output = rescore(tmp_path, minus_inf, "--output-nbest", out, "--weights", "TM=1,LM=0,Len=0.5", lm=tiny_lm)
    assert code == 0, output
    written = out.read_text().splitlines()
    assert "nan" not in out.read_text().lower()
    assert written[0].startswith("0 ||| a cat |||") and written[1].startswith("0 ||| the cat sat |||")


def test_rescore_names_a_missing_or_latin1_file(tmp_path, tiny_lm):
    code, output = rescore(tmp_path, NBEST, "--ref", tmp_path / "nope.txt", lm=tiny_lm)
    assert code != 0 and "the reference file" in last_line(output) and "does not exist" in last_line(output)
    code, output = rescore(tmp_path, NBEST.encode() + "H-2\t-0.5\tcafé\n".encode("latin-1"), lm=tiny_lm)
    assert code != 0 and "Traceback" not in output and "in.nbest:7: not UTF-8" in last_line(output)


def test_rescore_names_a_corrupt_checkpoint_and_a_dictionary_mismatch(tmp_path, tiny_lm):
    corrupt = tmp_path / "corrupt.pt"
    corrupt.write_bytes(tiny_lm.read_bytes()[:5000])
    code, output = rescore(tmp_path, NBEST, lm=corrupt)
    assert code != 0 and "Traceback" not in output
    assert "could not be read as a fairseq checkpoint" in last_line(output)
    other = tmp_path / "other-data"
    other.mkdir()
    lines = open(os.path.join(SAMPLE_DATA, "dict.txt"), encoding="utf-8").read().splitlines()
    lines[0], lines[1] = lines[1], lines[0]  # same size, two words swapped
    (other / "dict.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, output = rescore(tmp_path, NBEST, "--lm-data", other, lm=tiny_lm)
    assert code != 0 and "Traceback" not in output
    assert "dictionary mismatch" in last_line(output) and "--lm-data" in last_line(output)


@pytest.mark.parametrize("bad_grid", ["0:1:0", "0:1:-0.1", "1:0:0.1", "0:1"])
def test_rescore_refuses_a_grid_that_is_empty_or_never_ends(tmp_path, bad_grid):
    code, output = rescore(tmp_path, NBEST, "--lm-grid", bad_grid, lm="unused.pt")
    assert code == 2 and "--lm-grid" in last_line(output) and "low:high:step" in last_line(output)


@pytest.mark.parametrize("clash", ["--output-1best", "--nbest", "--ref", "--tune-nbest", "--tune-ref"])
def test_rescore_refuses_an_output_on_an_input_or_on_the_other_output(tmp_path, tiny_lm, clash):
    files = {
        "--nbest": NBEST,
        "--ref": "The cat sat.\nThe dog.\n",
        "--tune-nbest": NBEST,
        "--tune-ref": "The cat sat.\nThe dog.\n",
        "--output-1best": "an earlier 1-best\n",
    }
    paths = {option: tmp_path / f"file{i}.txt" for i, option in enumerate(files)}
    for option, text in files.items():
        paths[option].write_text(text, encoding="utf-8")
    before = {path: path.read_bytes() for path in paths.values()}
    same = os.path.join(tmp_path, ".", paths[clash].name)  # the file under another spelling
    code, stdout, stderr = run_module(
        "alm_plugin.cli.rescore",
        "--lm",
        tiny_lm,
        "--hyp-form",
        "tok",
        "--lm-form",
        "tok",
        "--cpu",
        *(str(a) for option in files if option != "--output-1best" for a in (option, paths[option])),
        "--output-1best",
        paths["--output-1best"],
        "--output-nbest",
        same,
    )
    assert code == 1 and stdout == "", stdout
    assert last_line(stderr) == (
        f"alm-rescore: error: --output-nbest {same} is also {clash}: "
        + (
            "the second output written would replace the first"
            if clash == "--output-1best"
            else "writing it would destroy the input"
        )
        + "; give another path"
    ), stderr
    assert {path: path.read_bytes() for path in paths.values()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in paths.values())  # no .partial


def test_rescore_writes_the_same_outputs_for_a_crlf_nbest(tmp_path, tiny_lm):
    outputs = {}
    for name, text in (("lf", NBEST), ("crlf", NBEST.replace("\n", "\r\n"))):
        best, nbest = tmp_path / f"{name}.1best", tmp_path / f"{name}.nbest"
        code, output = rescore(
            tmp_path, text, "--output-form", "tok", "--output-1best", best, "--output-nbest", nbest, lm=tiny_lm
        )
        assert code == 0, output
        outputs[name] = best.read_bytes(), nbest.read_bytes()
    assert b"\r" not in b"".join(outputs["crlf"])
    assert [len(output.decode().splitlines()) for output in outputs["crlf"]] == [2, 3]  # sentences, hypotheses
    assert outputs["crlf"] == outputs["lf"]


def test_rescore_finds_an_unwritable_output_before_scoring(tmp_path):
    code, output = rescore(
        tmp_path, NBEST, "--output-1best", tmp_path / "no" / "such" / "dir.txt", lm=tmp_path / "never-loaded.pt"
    )
    assert code != 0 and "--output-1best" in last_line(output) and "does not exist; create it" in last_line(output)


def test_rescore_refuses_a_1best_of_a_billion_lines_before_the_model_loads(tmp_path):
    """A far sentence id is counted among the missing ones, never listed id by id (a set of 10^9)."""
    out = tmp_path / "best.txt"
    far = "H-1000000000\t-0.5\tthe dog\nP-1000000000\t-0.25 -0.25 -0.25\n"
    code, output = rescore(tmp_path, NBEST + far, "--output-1best", out, lm="never.pt")
    assert code != 0 and "sentence ids 2, 3, 4, 5, 6, ... have no hypotheses (999999998 of 1000000001)" in (
        last_line(output)
    ), output
    assert not out.exists()


def test_rescore_refuses_a_grid_of_a_billion_points_in_one_line(tmp_path):
    """A grid of a billion weights is refused before it is built."""
    code, output = rescore(tmp_path, NBEST, "--lm-grid", "0:1:1e-9", lm="never.pt")
    assert code == 2 and "a grid low:high:step of at most 1000 steps (each is scored), got '0:1:1e-9'" in (
        last_line(output)
    ), output


def test_rescore_refuses_a_moses_list_it_could_not_read_back(tmp_path):
    """A hypothesis holding ' ||| ' is refused with --output-nbest, whose Moses line could not be read back."""
    out = tmp_path / "out.nbest"
    separated = "H-1\t-0.5\tthe ||| dog\nP-1\t-0.25 -0.25 -0.25 -0.25\n"
    with_separator = NBEST.replace("H-1\t-0.5\tthe dog\nP-1\t-0.25 -0.25 -0.25\n", separated)
    code, output = rescore(tmp_path, with_separator, "--output-nbest", out, lm="never.pt")
    assert code != 0 and "in.nbest:5: the hypothesis holds '|||', the Moses list's field separator" in (
        last_line(output)
    ), output
    assert not out.exists()
