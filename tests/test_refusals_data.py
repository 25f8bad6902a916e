"""Bad data refused in one line (what is wrong, what to do), a non-zero exit, nothing half-written:
texts examples/language_model/prepare_lm_data.py cannot binarise (an empty split, text that is not
UTF-8, a literal </s>, an unknown tokeniser language; a byte-order mark is dropped), and an empty
split handed to fairseq-eval-lm, fairseq-validate and alm-cache-grid."""

import importlib.util
import os
import subprocess
import sys

import pytest
from cli import in_process, last_line, refused, run, run_module
from conftest import ROOT, short_split
from fairseq.data import Dictionary

PREPARE = os.path.join(ROOT, "examples", "language_model", "prepare_lm_data.py")
GOOD = "The cat sat on the mat .\nA dog ran far away .\n"


# ---------------------------------------------------------------- examples/language_model/prepare_lm_data.py


def prepare(tmp_path, texts, *extra, process=False):
    """Run the script on ``texts`` (a split's text or bytes, GOOD otherwise): in this process, as its
    ``main()`` under the script's argv, or with ``process`` in a fresh one; (returncode, output)."""
    raw = tmp_path / "raw"
    raw.mkdir(exist_ok=True)
    for split in ("train", "valid", "test"):
        data = texts.get(split, GOOD)
        (raw / f"{split}.txt").write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    args = ["--raw-dir", raw, "--name", "bad", "--destdir", tmp_path / "bin", "--text-dir", tmp_path / "text", *extra]
    args = [str(a) for a in args]
    if process:
        proc = subprocess.run([sys.executable, PREPARE, *args], capture_output=True, text=True, cwd=tmp_path)
        return proc.returncode, proc.stdout + proc.stderr
    spec = importlib.util.spec_from_file_location("prepare_lm_data", PREPARE)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    code, stdout, stderr = in_process(script.main, [PREPARE, *args])
    return code, stdout + stderr


@pytest.mark.parametrize("text", ["", "   \n\n \t\n"])
def test_prepare_refuses_an_empty_split(tmp_path, text):
    code, output = prepare(tmp_path, {"valid": text})
    assert code != 0 and "valid.txt has no sentences" in last_line(output), output
    assert not (tmp_path / "bin" / "bad").exists()


def test_prepare_names_the_file_and_line_of_latin1_text(tmp_path):
    code, output = prepare(tmp_path, {"test": GOOD.encode() + "Café au lait .\n".encode("latin-1")})
    assert code != 0 and "Traceback" not in output
    assert "test.txt:3: not UTF-8" in last_line(output) and "iconv" in last_line(output)


def test_prepare_refuses_a_literal_end_of_sentence_symbol(tmp_path):
    code, output = prepare(tmp_path, {"train": GOOD + "one </s> two\n"})
    assert code != 0 and "train.txt:3: the text contains </s>" in last_line(output), output


def test_prepare_refuses_an_unknown_tokenizer_language(tmp_path):
    code, output = prepare(tmp_path, {}, "--tokenize", "xx")
    assert code != 0 and "no tokenisation rules for language 'xx'" in last_line(output), output


def test_prepare_drops_a_byte_order_mark(tmp_path):
    code, output = prepare(tmp_path, {"train": "\ufeff" + GOOD}, process=True)
    assert code == 0, output
    symbols = Dictionary.load(str(tmp_path / "bin" / "bad" / "dict.txt")).symbols
    assert "The" in symbols and not any("\ufeff" in s for s in symbols)


# ---------------------------------------------------------------- an empty split


EMPTY = "the 'valid' split in {} holds no line (valid.bin is empty): binarise a text of at least one line"


@pytest.mark.parametrize("tool", ["eval_lm", "validate", "alm-cache-grid"])
def test_an_empty_split_of_the_sentence_task_is_refused_by_name(tiny_lstm, tmp_path, tool):
    """An empty split is refused naming it, with no 'cannot mmap an empty file' nor 'Exception ignored' traceback."""
    data = short_split(tmp_path / "empty", 0)
    assert os.path.getsize(data / "valid.bin") == 0
    if tool == "alm-cache-grid":
        code, _, output = run_module(
            "alm_plugin.cli.cache_grid", "--path", tiny_lstm[0], "--data", data, "--gen-subset", "valid", "--cpu"
        )
        name = "alm-cache-grid"
    else:
        subset = "--gen-subset" if tool == "eval_lm" else "--valid-subset"
        code, output = run(
            tool,
            data,
            "--path",
            tiny_lstm[0],
            "--user-dir",
            "alm_plugin",
            "--task",
            "sentence_language_modeling",
            "--cpu",
            subset,
            "valid",
            "--batch-size",
            "8",
            check=False,
        )
        name = f"fairseq-{tool.replace('_', '-')}"
    assert code == 1 and refused(output, name, EMPTY.format(data))
    assert "Exception ignored" not in output and "mmap" not in output
