"""A broken file of a data directory, refused where our code loads it (alm_plugin/data/splits.py:
the tasks' setup_task reads dict.txt, load_split the .idx / .bin): one line naming the file and
how to rebuild it, a non-zero exit, in fairseq-train, fairseq-eval-lm and fairseq-validate on our
three tasks and in every alm-* tool that reads the data directory.

Before: a truncated valid.bin gave `ValueError: buffer is smaller than requested size` (a
traceback in fairseq's tools, a line naming no file in alm-cache-grid / alm-cache-posterior), a
random valid.idx `AssertionError: Index file doesn't match expected format`, a truncated one two
tracebacks (or one line and an `Exception ignored in __del__` traceback), a duplicated dictionary
line `RuntimeError: Duplicate word`, a malformed one `ValueError: Incorrect dictionary format`;
an index whose first size is 10^7 was taken (fairseq-eval-lm then advised raising --max-tokens to
10,000,000) and a split binarised with a larger dictionary ended in an embedding's IndexError."""

import os
import random
import shutil
import struct

import pytest
from cli import last_line, refused, run, run_module
from conftest import SAMPLE_DATA

REBUILD = (
    "rebuild the data directory with fairseq-preprocess --only-source (see examples/language_model/prepare_lm_data.py)"
)


def truncate(path, size):
    with open(path, "r+b") as f:
        f.truncate(size)


def set_first_size(data, size):
    with open(data / "valid.idx", "r+b") as f:
        f.seek(26)
        f.write(struct.pack("<i", size))


def write_at(path, offset, data):
    """``data`` over ``path``'s bytes from ``offset`` on."""
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(data)


def random_bytes(path):
    length = os.path.getsize(path)
    path.write_bytes(random.Random(0).randbytes(length))


def dictionary_lines(data, change):
    lines = (data / "dict.txt").read_text(encoding="utf-8").splitlines(keepends=True)
    (data / "dict.txt").write_text("".join(change(lines)), encoding="utf-8")


# case -> (how the copy of the sample is broken, what the one line says; {data}: the folder)
SPLIT_CASES = {
    "truncated valid.bin": (
        lambda d: truncate(d / "valid.bin", 10000),
        "{data}/valid.idx says line 199 holds 13 tokens at byte 9,998, beyond the 10,000 bytes of "
        "valid.bin: the index does not match the data",
    ),
    "valid.bin cut by one token": (
        lambda d: truncate(d / "valid.bin", os.path.getsize(d / "valid.bin") - 2),
        "{data}/valid.idx says line 400 holds",
    ),
    "valid.bin longer than its index": (
        lambda d: open(d / "valid.bin", "ab").write(b"\x05\x00" * 7),
        "{data}/valid.bin holds 20,696 bytes and {data}/valid.idx lists 10,341 tokens "
        "(20,682 bytes): the two files do not match (valid.bin longer than its index",
    ),
    "random valid.idx": (
        lambda d: random_bytes(d / "valid.idx"),
        "{data}/valid.idx is not a fairseq index (it does not begin with MMIDIDX",
    ),
    "truncated valid.idx": (
        lambda d: truncate(d / "valid.idx", 1000),
        "{data}/valid.idx declares 400 lines, whose sizes and offsets take 4,826 bytes, but holds "
        "1,000: it is truncated",
    ),
    "valid.idx of another split": (
        lambda d: shutil.copy(d / "train.idx", d / "valid.idx"),
        "{data}/valid.idx says line",
    ),
    "a size in the index beyond the data": (
        lambda d: set_first_size(d, 10_000_000),
        "{data}/valid.idx says line 1 holds 10,000,000 tokens at byte 0, beyond the 20,682 bytes of valid.bin",
    ),
    "a negative size in the index": (
        lambda d: set_first_size(d, -3),
        "{data}/valid.idx says line 1 holds -3 tokens at byte 0: a negative size",
    ),
    "valid.bin missing": (lambda d: os.unlink(d / "valid.bin"), "{data}/valid.idx has no valid.bin beside it"),
}
DICTIONARY_CASES = {
    "a duplicated dictionary line": (
        lambda d: dictionary_lines(d, lambda lines: lines[:100] + [lines[4]] + lines[100:]),
        "{data}/dict.txt:101: the word 'and' is listed twice (already on line 5)",
    ),
    "a malformed dictionary line": (
        lambda d: dictionary_lines(d, lambda lines: lines[:2] + ["of\n"] + lines[3:]),
        "{data}/dict.txt:3: 'of' is not a dictionary line ('<word> <count>')",
    ),
    "a count that is no number": (
        lambda d: dictionary_lines(d, lambda lines: lines[:6] + ["in many\n"] + lines[7:]),
        "{data}/dict.txt:7: 'in many' is not a dictionary line",
    ),
    "a special symbol in the dictionary": (
        lambda d: dictionary_lines(d, lambda lines: ["</s> 9\n"] + lines),
        "{data}/dict.txt:1: the word '</s>' is listed twice (fairseq's own symbol)",
    ),
    "a dictionary that is not UTF-8": (
        lambda d: (d / "dict.txt").write_bytes((d / "dict.txt").read_bytes().replace(b"the 5527", b"th\xe9 5527")),
        "{data}/dict.txt:1: not UTF-8 (byte 0xe9)",
    ),
}
# more cases the same checks refuse (splits.py)
FEW_CASES = {
    "a <pad> id in valid.bin": (  # before: scored (264.58 for 263.99)
        lambda d: write_at(d / "valid.bin", 0, struct.pack("<H", 1)),
        "{data}/valid.bin: line 1 holds the id 1 (<pad>), which fairseq-preprocess never writes into a split",
    ),
    "a legacy TNTIDX header over a modern index": (  # before: a bare AssertionError (fairseq's read_index)
        lambda d: (d / "valid.idx").write_bytes(b"TNTIDX\x00\x00" + (d / "valid.idx").read_bytes()[9:]),
        "{data}/valid.idx: an index header (TNTIDX) of version",
    ),
    "a dictionary that is a directory": (  # before: IsADirectoryError's traceback in fairseq-eval-lm
        lambda d: (os.unlink(d / "dict.txt"), os.mkdir(d / "dict.txt")),
        "{data}/dict.txt is a directory, not a dictionary",
    ),
}
SHORTER_DICTIONARY = (lambda d: dictionary_lines(d, lambda lines: lines[:1000]), "{data}/valid.bin holds the word id")


def broken(tmp_path, case):
    """A copy of the sample, broken as ``case`` says; (folder, the message expected)."""
    data = tmp_path / "data"
    shutil.copytree(SAMPLE_DATA, data)
    change, message = {
        **SPLIT_CASES,
        **DICTIONARY_CASES,
        **FEW_CASES,
        "a dictionary shorter than the split's ids": SHORTER_DICTIONARY,
    }[case]
    change(data)
    return data, message.format(data=data)


def one_line(output, program, message):
    assert refused(output, program, message) and message in last_line(output)
    assert REBUILD in last_line(output) and "Exception ignored" not in output
    return True


TASKS = {  # task -> the arguments fairseq-train trains a tiny model with (failing before it trains)
    "sentence_language_modeling": ["--arch", "alm_lstm", "--batch-size", "8"],
    "document_language_modeling": ["--arch", "alm_lstm", "--batch-size", "4", "--tokens-per-sample", "20"],
    "open_vocabulary_language_modeling": [
        "--arch",
        "char_lstm_lm_small",
        "--criterion",
        "open_vocabulary_cross_entropy",
        "--batch-size",
        "4",
    ],
}
MODELS = {
    "sentence_language_modeling": "tiny_attentive",
    "document_language_modeling": "tiny_pointer",
    "open_vocabulary_language_modeling": "tiny_char",
}
COMMON = ["--user-dir", "alm_plugin", "--cpu", "--no-progress-bar", "--num-workers", "0"]
TRAIN = [
    "--embed-dim",
    "16",
    "--hidden-size",
    "16",
    "--optimizer",
    "adam",
    "--lr",
    "0.01",
    "--max-update",
    "1",
    "--no-epoch-checkpoints",
]


ALL_CASES = [*SPLIT_CASES, *DICTIONARY_CASES, *FEW_CASES, "a dictionary shorter than the split's ids"]


@pytest.mark.parametrize("case", ALL_CASES)
def test_the_checks_refuse_each_broken_data_directory_naming_the_file_and_the_fix(tmp_path, case):
    """What every task runs on a data directory (setup_task: ``check_dictionary``; load_dataset:
    ``load_split`` with the task's dictionary) refuses each case with the line the tools print.
    Which tool reads the directory changes only how that line reaches the user: the tests below run
    each case through a tool, and every tool and task with a broken split and a broken dictionary."""
    from fairseq.data import Dictionary

    from alm_plugin.data.splits import check_dictionary, load_split
    from alm_plugin.errors import CorruptDataError

    data, message = broken(tmp_path, case)
    with pytest.raises(CorruptDataError) as refusal:
        check_dictionary(str(data / "dict.txt"))
        load_split(str(data), "valid", Dictionary.load(str(data / "dict.txt")))
    assert message in str(refusal.value) and REBUILD in str(refusal.value)


# (task, case): a broken split and a broken dictionary a task, the cases taken in turn over the tools
TRAIN_CASES = [
    ("sentence_language_modeling", "truncated valid.bin"),
    ("sentence_language_modeling", "a duplicated dictionary line"),
    ("sentence_language_modeling", "a dictionary shorter than the split's ids"),
    ("document_language_modeling", "valid.bin cut by one token"),
    ("document_language_modeling", "a malformed dictionary line"),
    ("document_language_modeling", "a dictionary shorter than the split's ids"),
    ("open_vocabulary_language_modeling", "valid.bin longer than its index"),
    ("open_vocabulary_language_modeling", "a count that is no number"),
]


@pytest.mark.parametrize("task, case", TRAIN_CASES)
def test_fairseq_train_refuses_a_broken_data_directory_in_one_line(tmp_path, task, case):
    data, message = broken(tmp_path, case)
    extra = TRAIN if task != "open_vocabulary_language_modeling" else TRAIN[4:]
    code, output = run(
        "train", data, *COMMON, "--task", task, *TASKS[task], *extra, "--save-dir", tmp_path / "save", check=False
    )
    assert code == 1 and one_line(output, "fairseq-train", message)


# fairseq-validate goes through the same checks as fairseq-eval-lm; a dictionary that is a directory
# on every task (the two task bases look for dict.txt apart)
EVALUATION_CASES = [
    ("eval_lm", "sentence_language_modeling", "random valid.idx"),
    ("eval_lm", "sentence_language_modeling", "a <pad> id in valid.bin"),
    ("eval_lm", "sentence_language_modeling", "a special symbol in the dictionary"),
    ("eval_lm", "sentence_language_modeling", "a dictionary that is a directory"),
    ("eval_lm", "document_language_modeling", "truncated valid.idx"),
    ("eval_lm", "document_language_modeling", "a dictionary that is not UTF-8"),
    ("eval_lm", "document_language_modeling", "a dictionary that is a directory"),
    ("eval_lm", "open_vocabulary_language_modeling", "valid.idx of another split"),
    ("eval_lm", "open_vocabulary_language_modeling", "a legacy TNTIDX header over a modern index"),
    ("eval_lm", "open_vocabulary_language_modeling", "a duplicated dictionary line"),
    ("eval_lm", "open_vocabulary_language_modeling", "a dictionary that is a directory"),
    ("validate", "sentence_language_modeling", "a size in the index beyond the data"),
    ("validate", "sentence_language_modeling", "a malformed dictionary line"),
    ("validate", "document_language_modeling", "a negative size in the index"),
    ("validate", "document_language_modeling", "a count that is no number"),
    ("validate", "open_vocabulary_language_modeling", "valid.bin missing"),
    ("validate", "open_vocabulary_language_modeling", "a special symbol in the dictionary"),
]


@pytest.mark.parametrize("tool, task, case", EVALUATION_CASES)
def test_evaluation_refuses_a_broken_data_directory_in_one_line(request, tmp_path, tool, task, case):
    checkpoint, _ = request.getfixturevalue(MODELS[task])
    data, message = broken(tmp_path, case)
    split = ["--gen-subset", "valid"] if tool == "eval_lm" else ["--valid-subset", "valid"]
    code, output = run(
        tool, data, *COMMON, "--task", task, "--path", checkpoint, "--batch-size", "4", *split, check=False
    )
    assert code == 1 and one_line(output, "fairseq-" + tool.replace("_", "-"), message)


TOOLS = {  # prog -> (module, the model, its arguments before --data; True: it reads the split too)
    "alm-cache-grid": (
        "alm_plugin.cli.cache_grid",
        "tiny_attentive",
        ["--windows", "10", "--thetas", "0.3", "--lambdas", "0.1"],
        True,
    ),
    "alm-cache-grid (streams)": (
        "alm_plugin.cli.cache_grid",
        "tiny_pointer",
        ["--windows", "10", "--thetas", "0.3", "--lambdas", "0.1"],
        True,
    ),
    "alm-cache-posterior": ("alm_plugin.cli.cache_posterior", "tiny_pointer", ["--gen-subset", "valid"], True),
    "alm-score": ("alm_plugin.cli.score", "tiny_attentive", [], False),
    "alm-plot-attention": ("alm_plugin.cli.plot_attention", "tiny_attentive", ["the cat"], False),
    "alm-rescore": ("alm_plugin.cli.rescore", "tiny_attentive", [], False),
}


# (tool, case): a tool that reads the split, a broken split and a broken dictionary; one that reads none, a
# broken dictionary
TOOL_CASES = [
    ("alm-cache-grid", "a <pad> id in valid.bin"),
    ("alm-cache-grid", "a legacy TNTIDX header over a modern index"),
    ("alm-cache-grid", "a dictionary that is a directory"),
    ("alm-cache-grid (streams)", "truncated valid.bin"),
    ("alm-cache-grid (streams)", "a dictionary that is not UTF-8"),
    ("alm-cache-posterior", "a size in the index beyond the data"),
    ("alm-cache-posterior", "a duplicated dictionary line"),
    ("alm-score", "a malformed dictionary line"),
    ("alm-plot-attention", "a count that is no number"),
    ("alm-rescore", "a special symbol in the dictionary"),
]


@pytest.mark.parametrize("tool, case", TOOL_CASES)
def test_every_alm_tool_refuses_a_broken_data_directory_in_one_line(request, tmp_path, tool, case):
    module, model, arguments, _ = TOOLS[tool]
    checkpoint, _ = request.getfixturevalue(model)
    data, message = broken(tmp_path, case)
    if tool == "alm-rescore":
        nbest = tmp_path / "in.nbest"
        nbest.write_text("H-0\t-1.5\tthe cat sat\nP-0\t-0.5 -0.5 -0.25 -0.25\n", encoding="utf-8")
        arguments = [
            "--nbest",
            nbest,
            "--lm",
            checkpoint,
            "--lm-data",
            data,
            "--hyp-form",
            "tok",
            "--lm-form",
            "tok",
            "--cpu",
        ]
    else:
        arguments = ["--path", checkpoint, *arguments, "--data", data]
    code, stdout, stderr = run_module(module, *arguments, stdin="the cat sat\n")
    assert code == 1 and one_line(stderr, tool.split()[0], message)


def test_a_sound_data_directory_passes_the_checks_unchanged():
    """The checks read the sample's own files without a word (every split, the dictionary), leave
    them as they are, and load every line the index holds (its count read from the .idx header)."""
    from fairseq.data import Dictionary

    from alm_plugin.data.splits import check_dictionary, check_split_files, load_split

    def contents():
        return {name: open(os.path.join(SAMPLE_DATA, name), "rb").read() for name in sorted(os.listdir(SAMPLE_DATA))}

    before = contents()
    check_dictionary(os.path.join(SAMPLE_DATA, "dict.txt"))
    dictionary = Dictionary.load(os.path.join(SAMPLE_DATA, "dict.txt"))
    for split in ("train", "valid", "test"):
        check_split_files(os.path.join(SAMPLE_DATA, split), dictionary)
        header = before[f"{split}.idx"]  # fairseq's mmap index: 9-byte magic, version <Q, dtype <B, count <Q
        assert len(load_split(SAMPLE_DATA, split, dictionary)) == struct.unpack("<Q", header[18:26])[0]
    assert contents() == before
