"""fairseq-train options refused in one line before anything is trained or written.

Before: `--save-dir data-bin/.../dict.txt` ended in a `NotADirectoryError` traceback (a path
through a file: `FileExistsError` / `NotADirectoryError`); `--task document_language_modeling
--stream-burn-in -5 --disable-validation` trained, rc 0 (the value was checked only where a split
is scored as streams, which validation does)."""
import hashlib

import pytest

from cli import run
from test_refusals import refused

COMMON = ["--user-dir", "alm_plugin", "--cpu", "--no-progress-bar", "--num-workers", "0", "--arch", "alm_lstm",
          "--embed-dim", "16", "--hidden-size", "16", "--optimizer", "adam", "--lr", "0.01", "--max-update", "1"]
TASKS = {"sentence_language_modeling": ["--batch-size", "8"],
         "document_language_modeling": ["--batch-size", "4", "--tokens-per-sample", "20"]}


@pytest.mark.parametrize("task", list(TASKS))
@pytest.mark.parametrize("where, says", [("dict.txt", "is a file, not a folder"),
                                         ("valid.bin/checkpoints", "runs through {data}/valid.bin, a file, not a folder")])
def test_a_save_dir_naming_a_file_is_refused_in_one_line(tiny_attentive, tmp_path, task, where, says):
    _, sample = tiny_attentive
    data = tmp_path / "data"
    data.mkdir()
    for name in ("dict.txt", "train.bin", "train.idx", "valid.bin", "valid.idx"):
        (data / name).write_bytes((sample / name).read_bytes())
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in data.iterdir()}
    save = data / where
    code, output = run("train", data, *COMMON, "--task", task, *TASKS[task], "--save-dir", save, check=False)
    assert code == 1 and refused(output, "fairseq-train", f"--save-dir {save} {says.format(data=data)}: give the "
                                                          "folder the checkpoints go to (made if missing)")
    assert {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in data.iterdir()} == before


@pytest.mark.parametrize("value", ["-5", "-1"])
def test_a_negative_stream_burn_in_is_refused_when_nothing_is_validated(tiny_pointer, tmp_path, value):
    _, data = tiny_pointer
    code, output = run("train", data, *COMMON, "--task", "document_language_modeling",
                       *TASKS["document_language_modeling"], "--stream-burn-in", value, "--disable-validation",
                       "--save-dir", tmp_path / "save", check=False)
    assert code == 1 and refused(output, "fairseq-train", f"--stream-burn-in {value}: the words a stream reads before "
                                                          "it scores must be 0 or more (default 100)")
    assert not (tmp_path / "save").exists() or not list((tmp_path / "save").iterdir())


def test_a_negative_stream_burn_in_is_refused_by_eval_lm_on_one_stream(tiny_pointer):
    checkpoint, data = tiny_pointer
    code, output = run("eval_lm", data, "--user-dir", "alm_plugin", "--task", "document_language_modeling", "--cpu",
                       "--path", checkpoint, "--batch-size", "1", "--stream-burn-in", "-5", check=False)
    assert code == 1 and refused(output, "fairseq-eval-lm", "--stream-burn-in -5: the words a stream reads")
