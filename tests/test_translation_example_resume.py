"""A stopped training of examples/translation/multi30k.sh resumes, in the example and in the benchmark
row that runs it; the example skips a finished one, and the row refuses a model another run trained.
Fast: fairseq-train is a stand-in script."""

import argparse
import os
import subprocess

import conftest
import pytest
import torch
from conftest import benchmarks_module

EXAMPLE = os.path.join(conftest.ROOT, "examples", "translation", "multi30k.sh")

# fairseq-train's stand-in: notes each call and writes the checkpoints, or stops half-way with STOP set
FAKE_TRAIN = """#!/usr/bin/env bash
while [ "$1" != --save-dir ]; do shift; done
echo run >> "$2/calls"
touch "$2/checkpoint_best.pt" "$2/checkpoint_last.pt"
[ -z "${STOP:-}" ] || exit 1
"""


def train(tmp_path, save, stop=False):
    """The example's train() on ``save`` with the stand-in fairseq-train; its exit status."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "fairseq-train").write_text(FAKE_TRAIN)
    (bin_dir / "fairseq-train").chmod(0o755)
    script = f"set -euo pipefail; eval \"$(sed -n '/^train() {{/,/^}}/p' {EXAMPLE})\"; train {save} data --cpu"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", **({"STOP": "1"} if stop else {})}
    return subprocess.run(["bash", "-c", script], env=env).returncode


def test_the_example_resumes_a_stopped_training_and_skips_a_finished_one(tmp_path):
    save = tmp_path / "save"
    assert train(tmp_path, save, stop=True) != 0
    assert (save / "unfinished").exists() and (save / "checkpoint_best.pt").exists()
    assert train(tmp_path, save) == 0  # its checkpoint_best.pt is not taken for a finished model
    assert not (save / "unfinished").exists()
    assert train(tmp_path, save) == 0
    assert (save / "calls").read_text().split() == ["run", "run"]  # the finished training was not run again


def pairs_row_in(tmp_path, monkeypatch):
    """benchmarks.translation with its root at ``tmp_path``, and a 2,000-pair row's parser and arguments."""
    translation = benchmarks_module("translation")
    monkeypatch.setattr(translation, "ROOT", str(tmp_path))
    args = argparse.Namespace(parallel_pairs=2000, arch="attentive_nmt_small", json=str(tmp_path / "pairs.json"))
    return translation, argparse.ArgumentParser(prog="translation"), args


def test_a_pairs_row_resumes_its_own_models_and_refuses_another_runs(tmp_path, monkeypatch, capsys):
    """A model folder with checkpoints is this row's only while its starts file (kept until the record is
    written) says so; each start notes the commit and the updates it resumes from."""
    translation, parser, args = pairs_row_in(tmp_path, monkeypatch)
    monkeypatch.setattr(translation, "commit", lambda: "abc1234")
    save = tmp_path / "checkpoints" / "multi30k-2000-attentive_nmt_small"
    save.mkdir(parents=True)
    (save / "checkpoint_best.pt").write_bytes(b"")
    with pytest.raises(SystemExit) as stopped:
        translation.pairs_row(parser, args)
    assert stopped.value.code == 2 and "holds a trained model" in capsys.readouterr().err  # another run's
    (save / translation.STARTS).write_text("0000000 0 training\n")
    with pytest.raises(SystemExit):
        translation.pairs_row(parser, args)
    assert "no " + str(tmp_path / "lm-alm_lstm_small.json") in capsys.readouterr().err  # past it, at the next
    torch.save({"optimizer_history": [{"num_updates": 300}, {"num_updates": 750}]}, save / "checkpoint_last.pt")
    assert translation.note_start(str(save)) == [
        {"commit": "0000000", "updates": 0, "state": "training"},
        {"commit": "abc1234", "updates": 750, "state": "finished"},  # no marker: the example trains no more
    ]
    assert translation.note_start(str(tmp_path / "fresh")) == [{"commit": "abc1234", "updates": 0, "state": "training"}]
    (save / translation.STARTS).write_text("0000000 0 training\n 750\n")  # a line without its commit
    with pytest.raises(SystemExit, match="starts.txt:2: not 'commit updates training|finished'"):
        translation.note_start(str(save))


def test_a_pairs_row_waits_only_for_a_language_model_row_under_way(tmp_path, monkeypatch, capsys):
    """A language model folder without its record is waited for while its row's marker stays; without
    the marker the row is refused in one line, and a wait ends when the marker goes without a record."""
    translation, parser, args = pairs_row_in(tmp_path, monkeypatch)
    lm = tmp_path / "checkpoints" / "multi30k-en-mono-alm_lstm_small"
    lm.mkdir(parents=True)
    (lm / "checkpoint_best.pt").write_bytes(b"")
    with pytest.raises(SystemExit) as stopped:
        translation.pairs_row(parser, args)
    error = capsys.readouterr().err
    assert stopped.value.code == 2 and "no --language-model alm_lstm_small row under way" in error
    assert len(error.strip().splitlines()) == 1
    record = str(tmp_path / "lm-alm_lstm_small.json")
    with pytest.raises(SystemExit, match="ended without writing"):
        translation.wait_for_language_model(record, str(lm / "checkpoint_best.pt"), poll=0)
