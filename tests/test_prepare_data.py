"""examples/language_model/prepare_lm_data.py: sentence splitting, sacremoses, binarising."""

import os
import shutil
import subprocess
import sys

import pytest
from cli import in_process, run
from conftest import ROOT, needs_shared_data
from fairseq.data import Dictionary, data_utils

import examples.language_model.prepare_lm_data as prepare_lm_data
from examples.language_model.prepare_lm_data import split_sentences

SCRIPT = os.path.join(ROOT, "examples", "language_model", "prepare_lm_data.py")


_PROCESS = subprocess.run  # a process, whatever a test puts in subprocess.run


class _PreprocessInProcess:
    """The ``subprocess`` a script sees: ``fairseq-preprocess`` runs as ``cli.run`` runs it (in
    this process, its output printed where the script's goes, its exit code returned); any other
    command runs as a process."""

    def __getattr__(self, name):
        return getattr(subprocess, name)

    @staticmethod
    def run(command, *args, **kwargs):
        if command[0] != "fairseq-preprocess":
            return _PROCESS(command, *args, **kwargs)
        code, output = run("preprocess", *command[1:], check=False)
        print(output, end="")
        if kwargs.get("check") and code != 0:
            raise subprocess.CalledProcessError(code, command)
        return subprocess.CompletedProcess(command, code)


def run_script(*args, module=prepare_lm_data):
    """``python SCRIPT args`` run in this process (``module.main`` with that argv, its
    fairseq-preprocess in this process too); returns (exit code, stdout, stderr)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(module, "subprocess", _PreprocessInProcess())
        return in_process(module.main, [module.__file__, *map(str, args)])


def test_paragraphs_split_after_sentence_final_tokens():
    line = "It was released in 2011 . Was it good ? Yes ! The U.S. version followed"
    assert list(split_sentences(line)) == [
        "It was released in 2011 .",
        "Was it good ?",
        "Yes !",
        "The U.S. version followed",
    ]


def test_raw_text_is_tokenised_and_binarised(made):
    """--tokenize en: sacremoses splits the punctuation off; a blank line is dropped."""
    root, code, output = made
    assert code == 0, output
    dictionary = Dictionary.load(str(root / "bin" / "d" / "dict.txt"))
    assert "," in dictionary.symbols and "(" in dictionary.symbols  # sacremoses split punctuation
    sentences = data_utils.load_indexed_dataset(str(root / "bin" / "d" / "train"), dictionary)
    assert len(sentences) == 2  # the blank line is dropped
    assert (
        dictionary.string(sentences[0]) == "Hello , world ! It &apos;s a test ."
        or dictionary.string(sentences[0]) == "Hello , world ! It 's a test ."
    )


@needs_shared_data("wikitext-2", "valid.tokens")
def test_shipped_sample_is_what_the_script_makes(tmp_path):
    """The committed data-bin/wikitext-2-sample is reproducible from ../shared/data (the script
    run in this process, its fairseq-preprocess too)."""
    code, _, stderr = run_script(
        "--corpus",
        "wikitext-2",
        "--sample-sentences",
        "4000",
        "--threshold",
        "2",
        "--name",
        "wikitext-2-sample",
        "--destdir",
        tmp_path,
        "--text-dir",
        tmp_path / "text",
    )
    assert code == 0, stderr
    for name in ("dict.txt", "valid.bin", "test.idx"):
        made = (tmp_path / "wikitext-2-sample" / name).read_bytes()
        shipped = open(os.path.join(ROOT, "data-bin", "wikitext-2-sample", name), "rb").read()
        assert made == shipped, name


# ----------------------------------------------------------------- an existing dataset

GOOD = "The cat sat on the mat .\nA dog ran far away .\n"


def prepare(tmp_path, texts, *extra, env=None):
    """Run the script on raw/{train,valid,test}.txt (``texts``: split -> str or bytes; others GOOD)
    into tmp_path/bin/d and tmp_path/text/d; returns (exit code, output). With ``env``, a
    process of its own with that environment (its fairseq-preprocess found on env's PATH);
    without, in this process."""
    raw = tmp_path / "raw"
    raw.mkdir(exist_ok=True)
    for split in ("train", "valid", "test"):
        data = texts.get(split, GOOD)
        (raw / f"{split}.txt").write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    command = ["--raw-dir", raw, "--name", "d", "--destdir", tmp_path / "bin", "--text-dir", tmp_path / "text", *extra]
    if env is None:  # in this process (fairseq-preprocess too), one preprocessing worker
        code, stdout, stderr = run_script(*command, "--workers", "1")
        return code, stdout + stderr
    proc = subprocess.run([sys.executable, SCRIPT, *command], capture_output=True, text=True, cwd=tmp_path, env=env)
    return proc.returncode, proc.stdout + proc.stderr


def snapshot(*folders):
    return {
        str(path): path.read_bytes()
        for folder in folders
        for path in sorted(folder.rglob("*"))
        if path.is_file() and path.name != "preprocess.log"
    }


def last_line(output):
    return output.strip().splitlines()[-1]


def leftovers(tmp_path):
    """Staging folders the script left beside its destinations."""
    return [
        p.name
        for parent in (tmp_path / "bin", tmp_path / "text")
        if parent.exists()
        for p in parent.iterdir()
        if p.name != "d"
    ]


# raw text to tokenise, its lines ended by CR alone (train: a blank line too) or CR LF (valid)
MADE_TEXTS = {
    "train": "Hello, world! It's a test.\r\rThe cat and the dog sat (on the mat).\r",
    "valid": "The cat sat .\r\nA dog ran .\r\n\r\nThe dog sat .\r\n",
}


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """(folder, exit code, output): the script run once with --tokenize en on MADE_TEXTS (test: GOOD)
    into folder/bin/d and folder/text/d; the tests that need an existing dataset copy it."""
    root = tmp_path_factory.mktemp("made")
    code, output = prepare(root, MADE_TEXTS, "--tokenize", "en")
    return root, code, output


def existing_dataset(made, tmp_path):
    """The dataset ``made`` wrote, copied to tmp_path/bin/d and tmp_path/text/d."""
    for folder in ("bin", "text"):
        shutil.copytree(made[0] / folder, tmp_path / folder)


@pytest.mark.parametrize("extra", [[], ["--open-vocabulary"]])
def test_prepare_refuses_an_existing_dataset_and_leaves_it_whole(made, tmp_path, extra):
    existing_dataset(made, tmp_path)
    before = snapshot(tmp_path / "bin", tmp_path / "text")
    assert any(name.endswith("train.bin") for name in before) and any(name.endswith("train.txt") for name in before)
    code, output = prepare(tmp_path, {"train": "Other words entirely .\n"}, *extra)
    assert code != 0 and "Traceback" not in output
    assert "already exist" in last_line(output) and "--force" in last_line(output), output
    assert str(tmp_path / "bin" / "d") in last_line(output)
    assert snapshot(tmp_path / "bin", tmp_path / "text") == before


def test_prepare_refuses_existing_sentence_files_too(tmp_path):
    (tmp_path / "text" / "d").mkdir(parents=True)
    (tmp_path / "text" / "d" / "train.txt").write_text("my own sentences .\n")
    code, output = prepare(tmp_path, {})
    assert code != 0 and "already exists" in last_line(output) and str(tmp_path / "text" / "d") in last_line(output)
    assert (tmp_path / "text" / "d" / "train.txt").read_text() == "my own sentences .\n"
    assert not (tmp_path / "bin" / "d").exists()


def test_prepare_force_replaces_the_dataset(made, tmp_path):
    existing_dataset(made, tmp_path)
    code, output = prepare(tmp_path, {"train": "Zebras graze .\n"}, "--force")
    assert code == 0, output
    dictionary = Dictionary.load(str(tmp_path / "bin" / "d" / "dict.txt"))
    assert "Zebras" in dictionary.symbols and "cat" not in dictionary.symbols
    assert (tmp_path / "text" / "d" / "train.txt").read_text() == "Zebras graze .\n"
    assert len(data_utils.load_indexed_dataset(str(tmp_path / "bin" / "d" / "train"), dictionary)) == 1
    assert leftovers(tmp_path) == []


def test_prepare_force_keeps_the_old_dataset_when_preprocessing_fails(made, tmp_path):
    """fairseq-preprocess writes part of the new dataset and fails: the old one is untouched."""
    existing_dataset(made, tmp_path)
    before = snapshot(tmp_path / "bin", tmp_path / "text")
    stub = tmp_path / "stub"
    stub.mkdir()
    (stub / "fairseq-preprocess").write_text(
        '#!/bin/sh\nwhile [ "$1" != --destdir ]; do shift; done\n'
        'echo \'half a dictionary\' > "$2/dict.txt"; : > "$2/train.bin"; exit 3\n'
    )
    (stub / "fairseq-preprocess").chmod(0o755)
    env = {**os.environ, "PATH": f"{stub}{os.pathsep}{os.environ['PATH']}"}
    code, output = prepare(tmp_path, {"train": "Zebras graze .\n"}, "--open-vocabulary", "--force", env=env)
    assert code != 0 and "Traceback" not in output
    assert "fairseq-preprocess failed (exit code 3" in last_line(output), output
    assert "existing data is unchanged" in last_line(output)
    assert snapshot(tmp_path / "bin", tmp_path / "text") == before
    assert leftovers(tmp_path) == []


def test_prepare_force_keeps_the_old_dataset_when_the_text_is_refused(made, tmp_path):
    existing_dataset(made, tmp_path)
    before = snapshot(tmp_path / "bin", tmp_path / "text")
    code, output = prepare(tmp_path, {"valid": ""}, "--force")
    assert code != 0 and "valid.txt has no sentences" in last_line(output)
    assert snapshot(tmp_path / "bin", tmp_path / "text") == before
    assert leftovers(tmp_path) == []


# ---------------------------------------------------------- lines as fairseq-preprocess reads them


def test_prepare_ends_lines_at_cr_as_fairseq_preprocess_does(made):
    """A CR-only (old Mac) file: its sentences reported and stored, no CR inside a word."""
    root, code, output = made
    assert code == 0, output
    assert "train: 2 sentences" in output and "valid: 3 sentences" in output
    dictionary = Dictionary.load(str(root / "bin" / "d" / "dict.txt"))
    assert not any("\r" in symbol for symbol in dictionary.symbols)
    for split, n in (("train", 2), ("valid", 3)):
        stored = data_utils.load_indexed_dataset(str(root / "bin" / "d" / split), dictionary)
        assert len(stored) == n, split
    assert dictionary.string(stored[2]) == "The dog sat ."


def test_prepare_refuses_a_nul_byte_with_its_line(tmp_path):
    code, output = prepare(tmp_path, {"test": b"The cat sat .\nA d\x00og ran .\n"})
    assert code != 0 and "Traceback" not in output
    assert "test.txt:2: a NUL byte at column 4" in last_line(output) and "UTF-8" in last_line(output), output
    assert not (tmp_path / "bin" / "d").exists() and not (tmp_path / "text" / "d").exists()


def test_sample_train_only_keeps_the_dev_splits_and_the_whole_dictionary(tmp_path):
    """--sample-train-only: a slice of the training text, scored on the whole valid and test with
    the dictionary of the whole training text (so its figures count the full corpus's words)."""
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "train.txt").write_text("a b\nc d\ne f\ng h\n")
    for split in ("valid", "test"):
        (raw / f"{split}.txt").write_text("a c\ne g\nb d\n")
    code, _, stderr = run_script(
        "--raw-dir",
        raw,
        "--sample-sentences",
        "2",
        "--sample-train-only",
        "--name",
        "slice",
        "--destdir",
        tmp_path / "bin",
        "--text-dir",
        tmp_path / "text",
        "--workers",
        "1",
    )
    assert code == 0, stderr
    dictionary = Dictionary.load(str(tmp_path / "bin" / "slice" / "dict.txt"))
    assert {"g", "h"} <= set(dictionary.symbols)  # from training sentences past the slice
    counts = {
        split: len(data_utils.load_indexed_dataset(str(tmp_path / "bin" / "slice" / split), dictionary))
        for split in ("train", "valid", "test")
    }
    assert counts == {"train": 2, "valid": 3, "test": 3}
    code, _, stderr = run_script("--raw-dir", raw, "--sample-train-only", "--name", "x", "--destdir", tmp_path / "bin")
    assert code == 2 and "give --sample-sentences N" in stderr


@pytest.mark.parametrize("count", ["-5", "0"])
def test_a_sample_of_no_sentences_is_refused_by_name(tmp_path, count):
    """A sample size below 1 is refused naming the option, not the corpus, and 0 does not keep the whole corpus."""
    code, output = prepare(tmp_path, {}, "--sample-sentences", count)
    assert code == 2 and "Traceback" not in output
    assert last_line(output).endswith(
        f"argument --sample-sentences: {count}: keep at least 1 sentence (leave the option out to keep the whole "
        "corpus)"
    ), output
    assert not (tmp_path / "bin").exists() and not (tmp_path / "text").exists()
