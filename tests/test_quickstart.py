"""examples/quickstart.sh run again: a model already trained for its epochs is not trained again, the run
says so in one line and how to train again, and still prints the test perplexity; a checkpoint that is not
the quickstart's own (another architecture, task, data or epochs; a file that is no checkpoint) is set aside,
said why, and the model trained from the start; the checkpoint is read as data, never unpickled."""

import os
import runpy
import subprocess
import sys

import pytest
import torch
from conftest import ROOT

QUICKSTART_CHECK = os.path.join(ROOT, "examples", "quickstart_checkpoint.py")


def quickstart_state(tiny_attentive, epochs=8):
    """A tiny model's checkpoint made to say what the quickstart trains: its architecture, task, data and
    ``epochs`` finished."""
    state = torch.load(tiny_attentive[0], map_location="cpu", weights_only=True)
    state["cfg"]["model"]["_name"] = "attentive_lm_small"
    state["cfg"]["model"]["attention_score"] = "single"
    state["cfg"]["model"].update(embed_dim=256, hidden_size=256, num_layers=2)  # what it claims (weights: 16)
    state["cfg"]["task"]["data"] = "data-bin/wikitext-2-sample"
    state["extra_state"]["train_iterator"]["epoch"] = epochs + 1  # the next epoch would be the (epochs + 1)th
    return state


def save_as_quickstart(state, save):
    save.mkdir(exist_ok=True)
    for name in ("checkpoint_last.pt", "checkpoint_best.pt"):
        torch.save(state, save / name)


def check(save, epochs, capsys, monkeypatch):
    """What examples/quickstart_checkpoint.py prints for ``save`` (run in this process, from the root)."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(sys, "argv", [QUICKSTART_CHECK, str(save), str(epochs)])
    runpy.run_path(QUICKSTART_CHECK, run_name="__main__")
    return capsys.readouterr().out.strip()


def test_a_rerun_finds_the_install_and_the_model_done_and_trains_nothing(tiny_attentive, tmp_path):
    """A run after a finished install (its record matches this Python and the install script) and a model
    trained for its epochs skips both: it says so and how to install or train again, leaves the first
    install's log as it was, trains nothing, and still prints the test perplexity."""
    save = tmp_path / "quickstart"
    save_as_quickstart(quickstart_state(tiny_attentive), save)
    made_from = subprocess.run(  # the quickstart's own record of what an install is made from
        "(command -v python3; cat scripts/install.sh scripts/requirements.txt setup.py) | sha256sum | cut -c1-16",
        shell=True,
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout
    (save / "install.done").write_text(made_from)
    (save / "install.log").write_text("the first install's 61 lines\n")
    # an install it did not find would fail at once (install.sh's Python is `false`), never reinstall here;
    # fairseq-eval-lm stood in for (the checkpoint claims the quickstart's size over a tiny model's weights)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "fairseq-eval-lm").write_text("#!/bin/sh\necho 'Perplexity: 12.5'\n")
    (bin_dir / "fairseq-eval-lm").chmod(0o755)
    env = {**os.environ, "SAVE_DIR": str(save), "EPOCHS": "8", "PYTHONPATH": ROOT, "PYTHON": "false"}
    env["PATH"] = f"{bin_dir}:{env['PATH']}"
    env.pop("SKIP_INSTALL", None)
    done = subprocess.run(
        ["bash", "examples/quickstart.sh"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Install found (this Python, this install script): skipped (REINSTALL=1 installs again)." in done.stdout
    assert "Installing" not in done.stdout
    assert (save / "install.log").read_text() == "the first install's 61 lines\n"
    assert f"Found a model trained for 8 epochs in {save}: training skipped (to train again: rm -r {save})." in (
        done.stdout
    )
    assert "Training attentive_lm_small" not in done.stdout and not (save / "train.log").exists()
    assert "Test perplexity (fairseq-eval-lm, every word and </s> counted): 12.5" in done.stdout


@pytest.mark.parametrize(
    "change, says",
    [
        (lambda s: s["cfg"]["model"].update(_name="alm_lstm_small"), "is a alm_lstm_small"),
        (lambda s: s["cfg"]["model"].update(attention_score="combined"), "(attention score combined)"),
        (lambda s: s["cfg"]["task"].update(_name="document_language_modeling"), "--task document_language_modeling"),
        (lambda s: s["cfg"]["task"].update(data="data-bin/other"), "was trained on data-bin/other"),
        (lambda s: s["alm_plugin"]["fingerprints"].update({"decoder.dictionary_fingerprint": 7}), "(its dictionary)"),
        (lambda s: s["extra_state"]["train_iterator"].update(epoch=12), "trained for 11 epochs, more than the 8"),
        (lambda s: s["cfg"]["model"].update(hidden_size=16), "is a model of 2 x 16 (256-d embeddings), not the"),
    ],
)
def test_a_checkpoint_not_the_quickstarts_own_is_not_reused(
    tiny_attentive, tmp_path, capsys, monkeypatch, change, says
):
    """Only the quickstart's own checkpoint (architecture, task, data, epochs) is taken as its model; another
    is set aside, and the quickstart trains from the start and says why."""
    state = quickstart_state(tiny_attentive)
    save_as_quickstart(state, tmp_path / "own")
    assert check(tmp_path / "own", 8, capsys, monkeypatch) == "done 8"
    assert check(tmp_path / "own", 9, capsys, monkeypatch) == "resume 8"
    change(state)
    save_as_quickstart(state, tmp_path / "other")
    line = check(tmp_path / "other", 8, capsys, monkeypatch)
    assert line.startswith(f"other {tmp_path / 'other' / 'checkpoint_last.pt'} ") and says in line, line


def test_the_file_it_scores_is_checked_too_and_a_pipe_is_never_read(tiny_attentive, tmp_path, capsys, monkeypatch):
    """checkpoint_best.pt, the file the quickstart scores, is checked as checkpoint_last.pt is: another model there
    is not its own; a pipe in either place is said not to be a regular file (reading it would block)."""
    state = quickstart_state(tiny_attentive)
    save_as_quickstart(state, tmp_path / "mixed")
    other = {**state, "cfg": {**state["cfg"], "model": {**state["cfg"]["model"], "_name": "amsrn_small"}}}
    torch.save(other, tmp_path / "mixed" / "checkpoint_best.pt")
    line = check(tmp_path / "mixed", 8, capsys, monkeypatch)
    assert line.startswith(f"other {tmp_path / 'mixed' / 'checkpoint_best.pt'} is a amsrn_small"), line
    for name in ("checkpoint_last.pt", "checkpoint_best.pt"):
        save_as_quickstart(state, tmp_path / name)
        os.unlink(tmp_path / name / name)
        os.mkfifo(tmp_path / name / name)
        line = check(tmp_path / name, 8, capsys, monkeypatch)
        assert line == f"other {tmp_path / name / name} is not a regular file", line


def test_the_quickstart_sets_a_foreign_checkpoint_aside_and_trains_from_the_start(tmp_path):
    """The script's side, with fairseq-train and fairseq-eval-lm stood in for: the reason said in one line,
    the checkpoints moved aside whole, the training run."""
    save = tmp_path / "quickstart"
    save.mkdir()
    (save / "checkpoint_last.pt").write_bytes(b"not a checkpoint")
    (save / "checkpoint_best.pt").write_bytes(b"best")
    precious = tmp_path / "README.md"  # a log's name planted as links onto another file: never written through
    precious.write_text("the project's readme\n")
    (save / "check.log").symlink_to(precious)
    os.link(precious, save / "eval.log")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool, says in (("fairseq-train", "trained"), ("fairseq-eval-lm", "Perplexity: 12.5")):
        (bin_dir / tool).write_text(f"#!/bin/sh\necho '{says}'\n")
        (bin_dir / tool).chmod(0o755)
    env = {**os.environ, "SKIP_INSTALL": "1", "SAVE_DIR": str(save), "EPOCHS": "1", "PYTHONPATH": ROOT}
    env["PATH"] = f"{bin_dir}:{env['PATH']}"
    done = subprocess.run(
        ["bash", "examples/quickstart.sh"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    aside = [name for name in os.listdir(save) if name.startswith("set-aside-")]
    assert len(aside) == 1 and sorted(os.listdir(save / aside[0])) == ["checkpoint_best.pt", "checkpoint_last.pt"]
    assert (save / aside[0] / "checkpoint_last.pt").read_bytes() == b"not a checkpoint"
    assert (
        f"Not the quickstart's model: {save / 'checkpoint_last.pt'} is not a checkpoint read as data "
        f"(UnpicklingError): training from the start (it is kept in {save / aside[0]})."
    ) in done.stdout
    assert "Training attentive_lm_small" in done.stdout and "Test perplexity" in done.stdout
    assert precious.read_text() == "the project's readme\n"
    assert not (save / "check.log").is_symlink() and os.stat(save / "eval.log").st_nlink == 1
