"""alm-score: plain text scored with a trained LM, as a user runs it."""

import json
import math
import os
import random
import threading

import pytest
from cli import TRAIN_COMMON, eval_lm_result, run, run_module
from conftest import SAMPLE_DATA, short_split
from fairseq.data import Dictionary, data_utils


@pytest.fixture(scope="module")
def model_and_text(tmp_path_factory):
    """A small attentive LM (10 updates), the first 60 lines of the sample's test split as text, and
    a data directory (``root / "data"``) whose test split holds those lines."""
    root = tmp_path_factory.mktemp("score")
    run(
        "train",
        SAMPLE_DATA,
        *TRAIN_COMMON,
        "--arch",
        "attentive_lm",
        "--embed-dim",
        "32",
        "--hidden-size",
        "32",
        "--attention-score",
        "combined",
        "--optimizer",
        "adam",
        "--lr",
        "0.01",
        "--batch-size",
        "32",
        "--max-update",
        "10",
        "--save-dir",
        root,
        "--no-epoch-checkpoints",
        "--disable-validation",
    )
    d = Dictionary.load(os.path.join(SAMPLE_DATA, "dict.txt"))
    lines = data_utils.load_indexed_dataset(str(short_split(root / "data", 60, name="test", source="test") / "test"), d)
    text = root / "test.txt"
    text.write_text("".join(d.string(lines[i]) + "\n" for i in range(len(lines))), encoding="utf-8")
    return root / "checkpoint_last.pt", text


def score(*args, stdin=None):
    return run_module("alm_plugin.cli.score", *args, stdin=stdin)


def rows(stdout):
    return [json.loads(line) for line in stdout.splitlines()]


def test_corpus_perplexity_equals_fairseq_eval_lm(model_and_text):
    checkpoint, text = model_and_text
    code, stdout, stderr = score("--path", checkpoint, text, "--batch-size", "16")
    assert code == 0, stderr
    summary = stderr.strip().splitlines()[-1]
    _, eval_ppl = eval_lm_result(
        run(
            "eval_lm",
            checkpoint.parent / "data",
            "--path",
            checkpoint,
            "--user-dir",
            "alm_plugin",
            "--task",
            "sentence_language_modeling",
            "--cpu",
        )[1]
    )
    split = data_utils.load_indexed_dataset(str(checkpoint.parent / "data" / "test"), None)
    tokens = sum(len(split[i]) for i in range(len(split)))  # each line's </s> included
    assert len(split) == 60 and tokens > 1000
    summary_start = f"alm-score: 60 sentences, {tokens} tokens"
    assert summary.startswith(summary_start) and summary.endswith(f"ppl {eval_ppl:.2f}"), summary
    table = [line.split("\t") for line in stdout.splitlines()]
    assert table[0] == ["line", "logprob", "tokens", "unk", "ppl"] and len(table) == 61
    total = sum(float(r[1]) for r in table[1:])
    assert math.exp(-total / tokens) == pytest.approx(eval_ppl, rel=1e-4)


def test_scores_do_not_depend_on_batch_size_or_line_order(model_and_text):
    checkpoint, text = model_and_text
    lines = text.read_text(encoding="utf-8").splitlines()[:60]
    order = list(range(len(lines)))
    random.Random(0).shuffle(order)
    _, one, _ = score("--path", checkpoint, "--format", "jsonl", "--batch-size", "1", stdin="\n".join(lines) + "\n")
    _, many, _ = score(
        "--path", checkpoint, "--format", "jsonl", "--batch-size", "64", stdin="".join(lines[i] + "\n" for i in order)
    )
    alone = [r["logprob"] for r in rows(one)]
    shuffled = {order[k]: r["logprob"] for k, r in enumerate(rows(many))}
    assert [shuffled[i] for i in range(len(lines))] == pytest.approx(alone, abs=2e-4)


def test_empty_lines_unknown_words_and_tokenisation(model_and_text):
    checkpoint, _ = model_and_text
    code, stdout, stderr = score(
        "--path",
        checkpoint,
        "--format",
        "jsonl",
        "--base2",
        "--tokenize",
        "en",
        stdin="The game , it was good.\n\nZyzzyva Quetzalcoatlus\n",
    )
    assert code == 0, stderr
    first, empty, unknown = rows(stdout)
    assert first["tokens"] == 8  # sacremoses split "good." into "good ." ; </s> counted
    assert empty["tokens"] == 1 and math.isfinite(empty["logprob"])  # its </s> is scored
    assert unknown["unk"] == 2 and unknown["tokens"] == 3
    assert first["log2prob"] == pytest.approx(first["logprob"] / math.log(2), abs=1e-3)


def test_a_dictionary_mismatch_and_a_missing_file_are_one_line(model_and_text, tmp_path):
    checkpoint, text = model_and_text
    lines = open(os.path.join(SAMPLE_DATA, "dict.txt"), encoding="utf-8").read().splitlines()
    lines[0], lines[1] = lines[1], lines[0]
    (tmp_path / "dict.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, _, stderr = score("--path", checkpoint, "--data", tmp_path, text)
    assert code != 0 and "Traceback" not in stderr
    assert "dictionary mismatch" in stderr.strip().splitlines()[-1] and "--data" in stderr.strip().splitlines()[-1]
    code, _, stderr = score(
        "--path", checkpoint, "--context", "line", "--neural-cache-window", "10", "--neural-cache-lambda", "0.1", text
    )
    assert code != 0 and "--context line" in stderr.strip().splitlines()[-1]
    code, _, stderr = score("--path", checkpoint, tmp_path / "nope.txt")
    assert (
        code != 0
        and stderr.strip().splitlines()[-1] == f"alm-score: error: input file {tmp_path / 'nope.txt'} does not exist"
    )


@pytest.mark.parametrize("option", [["--neural-cache-window", "10"], ["--dynamic-eval-lr", "0.1"]])
def test_a_test_time_option_is_refused_before_the_input_is_read(model_and_text, option):
    checkpoint, _ = model_and_text
    # the input's <pad> would be refused first were stdin read before the options
    code, _, stderr = score("--path", checkpoint, "--context", "line", *option, stdin="a <pad> line\n")
    last = stderr.strip().splitlines()[-1]
    assert code != 0 and f"{option[0]}:" in last and "drop --context line" in last


def test_a_sentence_model_read_as_a_document_without_a_cache_scores_each_line_alone(model_and_text):
    """--context document only lets a cache span the lines: a sentence model still restarts at each line."""
    checkpoint, text = model_and_text
    code, line_out, stderr = score("--path", checkpoint, "--format", "jsonl", text)
    assert code == 0, stderr
    code, doc_out, stderr = score("--path", checkpoint, "--format", "jsonl", "--context", "document", text)
    assert code == 0, stderr
    assert [r["logprob"] for r in rows(doc_out)] == pytest.approx([r["logprob"] for r in rows(line_out)], abs=1e-3)


def test_a_line_longer_than_the_model_context_is_refused(model_and_text):
    from alm_plugin.cli.scoring import LanguageModelScorer
    from alm_plugin.errors import ScoringError

    checkpoint, _ = model_and_text
    scorer = LanguageModelScorer([str(checkpoint)], None, use_cpu=True)
    scorer.max_tokens = 5  # a transformer_lm's --max-target-positions, say
    with pytest.raises(ScoringError, match="sentence 2 has 7 tokens .*more than the model's context of 5"):
        scorer.token_log_probs([scorer.encode("the cat"), scorer.encode("the cat sat on the mat")])


# ------------------------------------------------------------- the text as fairseq reads it


def test_lines_end_at_cr_and_a_byte_order_mark_is_dropped(model_and_text, tmp_path):
    """CR-only and CR LF files score as the LF file: fairseq-preprocess ends lines at all three;
    a UTF-8 byte-order mark is no part of the first word."""
    checkpoint, text = model_and_text
    lines = text.read_text(encoding="utf-8").splitlines()[:5] + ["", "the game"]
    scored = {}
    for name, data in (
        ("lf", "\n".join(lines) + "\n"),
        ("cr", "\r".join(lines) + "\r"),
        ("crlf", "\r\n".join(lines)),
        ("bom", "\ufeff" + "\n".join(lines) + "\n"),
    ):
        (tmp_path / name).write_bytes(data.encode("utf-8"))
        code, stdout, stderr = score("--path", checkpoint, "--format", "jsonl", tmp_path / name)
        assert code == 0, stderr
        scored[name] = rows(stdout)
    assert len(scored["lf"]) == 7 and scored["lf"][-1]["unk"] == 0
    assert scored["cr"] == scored["lf"] and scored["crlf"] == scored["lf"] and scored["bom"] == scored["lf"]


@pytest.mark.parametrize("stdin", ["", "\ufeff"])
def test_empty_input_is_refused_not_scored_as_ppl_1(model_and_text, tmp_path, stdin):
    checkpoint, _ = model_and_text
    code, stdout, stderr = score("--path", checkpoint, stdin=stdin)
    assert code != 0 and stdout == "" and "Traceback" not in stderr
    assert stderr.strip().splitlines()[-1].startswith("alm-score: error: nothing to score: stdin has no lines")
    (tmp_path / "empty.txt").write_bytes(b"")
    code, stdout, stderr = score("--path", checkpoint, tmp_path / "empty.txt")
    assert code != 0 and stdout == "" and "nothing to score" in stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("word", ["</s>", "<pad>", "<s>"])
def test_control_symbols_in_the_text_are_refused_with_the_line(model_and_text, tmp_path, word):
    checkpoint, _ = model_and_text
    (tmp_path / "in.txt").write_text(f"the game\nthe {word} game\n", encoding="utf-8")
    code, stdout, stderr = score("--path", checkpoint, tmp_path / "in.txt")
    assert code != 0 and stdout == "" and "Traceback" not in stderr
    assert (
        f"{tmp_path / 'in.txt'}:2: the text contains {word}, which fairseq would read as"
        in stderr.strip().splitlines()[-1]
    )
    code, _, _ = score("--path", checkpoint, stdin="the <unk> game\n")  # the unknown word is a word
    assert code == 0


# ---------------------------------------------------------------- a pipe as FILE, each FILE a text of its own


def test_alm_score_reads_a_pipe_as_a_file(tiny_pointer, tmp_path):
    """`alm-score ... <(head valid.txt)` (a /dev/fd path) is read as a file."""
    checkpoint, _ = tiny_pointer
    text = "The game was released in Japan .\nIt met with positive sales .\n"
    plain = tmp_path / "text.txt"
    plain.write_text(text)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)

    def feed():
        with open(fifo, "w") as pipe:  # blocks until the tool opens the pipe
            pipe.write(text)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    try:
        code, piped, stderr = run_module("alm_plugin.cli.score", "--path", checkpoint, fifo)
    finally:
        if writer.is_alive():  # the tool never opened the pipe: let the writer go
            os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
        writer.join(5)
    assert code == 0, stderr
    code, from_file, _ = run_module("alm_plugin.cli.score", "--path", checkpoint, plain)
    assert code == 0 and piped == from_file and len(piped.splitlines()) == 3  # the header and two rows


@pytest.fixture(scope="module")
def two_texts(tmp_path_factory):
    from fairseq.data import Dictionary, data_utils

    root = tmp_path_factory.mktemp("texts")
    d = Dictionary.load(os.path.join(SAMPLE_DATA, "dict.txt"))
    lines = data_utils.load_indexed_dataset(os.path.join(SAMPLE_DATA, "valid"), d)
    first, second = root / "first.txt", root / "second.txt"
    first.write_text("".join(d.string(lines[i]) + "\n" for i in range(12)), encoding="utf-8")
    second.write_text("".join(d.string(lines[i]) + "\n" for i in range(12, 20)), encoding="utf-8")
    return first, second


def score_rows(*args):
    code, out, err = run_module("alm_plugin.cli.score", *args, "--format", "jsonl")
    assert code == 0, err
    import json

    return [json.loads(line) for line in out.splitlines()], err


@pytest.mark.parametrize(
    "options", [["--dynamic-eval-lr", "0.3"], ["--neural-cache-window", "100", "--neural-cache-lambda", "0.3"]]
)
def test_alm_score_reads_each_file_as_a_text_of_its_own(adaptive_sentence, two_texts, options):
    """Each FILE is a text of its own: the second is not adapted on the first, nor its cache filled by it."""
    first, second = two_texts
    both, _ = score_rows("--path", adaptive_sentence, *options, first, second)
    alone = score_rows("--path", adaptive_sentence, *options, second)[0]
    assert [row["logprob"] for row in both[12:]] == [row["logprob"] for row in alone]
    assert [row["line"] for row in both] == list(range(1, 21))  # numbered over all the files
    twice, _ = score_rows("--path", adaptive_sentence, *options, second, second)
    assert [row["logprob"] for row in twice] == [row["logprob"] for row in alone] * 2
    code, out, _ = run_module("alm_plugin.cli.score", "--help")
    assert "each a text of its own" in " ".join(out.split())


def test_alm_score_with_stderr_closed_writes_the_scores_alone(tiny_pointer, tmp_path, monkeypatch):
    """`alm-score ... > out.tsv 2>&-`: the rows in the TSV, the summary (stderr's) nowhere, exit 0. Before: the
    run failed at the summary where a launcher's file (pyenv's shim) held descriptor 2 for reading, and where
    Python left sys.stderr None, print(file=sys.stderr) put the summary into the TSV."""
    import subprocess
    import sys

    from conftest import ROOT

    from alm_plugin.cli.tool import hold_closed_stderr

    checkpoint, _ = tiny_pointer
    (tmp_path / "in.txt").write_text("The game was released in Japan .\n")
    out = tmp_path / "out.tsv"
    proc = subprocess.run(  # descriptor 2 a file open for reading, as a launcher that closed stderr leaves it
        [sys.executable, "-m", "alm_plugin.cli.score", "--path", checkpoint, tmp_path / "in.txt"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": ROOT, "OMP_NUM_THREADS": "1"},
        stdout=open(out, "w"),
        stderr=open(os.path.join(ROOT, "README.md")),
    )
    lines = out.read_text().splitlines()
    assert proc.returncode == 0 and lines[0].startswith("line\t") and len(lines) == 2, lines
    monkeypatch.setattr(sys, "stderr", None)
    hold_closed_stderr()
    assert sys.stderr is not None and sys.stderr.name == os.devnull
