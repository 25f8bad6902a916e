"""The shell and benchmark scripts refuse in one line what they cannot do here: scripts/install.sh an
empty --wheelhouse, benchmarks/gpu/run.sh its GPU steps on a machine without a GPU, the GPU
benchmarks (stream_speed --device cuda, step_profile) without one."""

import os
import runpy
import subprocess
import sys

import pytest
import torch
from cli import last_line, run
from conftest import ROOT


@pytest.mark.parametrize("args", [["--wheelhouse="], ["--wheelhouse", ""], ["--wheelhouse"]])
def test_install_refuses_an_empty_wheelhouse_in_one_line(tmp_path, args):
    """An empty --wheelhouse is refused in one line of install.sh's own, never an install from the package index."""
    calls = tmp_path / "calls"
    python = tmp_path / "python"  # records every call: none may happen
    python.write_text(f'#!/bin/sh\necho "$@" >> {calls}\n')
    python.chmod(0o755)
    proc = subprocess.run(
        ["bash", "scripts/install.sh", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHON": str(python), "PIP_INDEX_URL": "http://127.0.0.1:9/simple"},
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        "install.sh: --wheelhouse needs a directory (one made by "
        "scripts/make_wheelhouse.sh); to install from the package index, leave the "
        "option out"
    ]
    assert not calls.exists()


def has_gpu():
    if torch.cuda.is_available():
        return True
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.startswith("GPU")
    except OSError:
        return False


@pytest.mark.skipif(has_gpu(), reason="the refusal is for a machine without a GPU")
def test_run_sh_refuses_its_gpu_steps_on_a_machine_without_one_before_anything(tmp_path):
    """Refused before any step runs, the reason on the terminal, not only in the logs."""
    steps = ["install", "tests", "cli", "speed"]  # install alone runs anywhere: named nowhere, not run either
    env = {
        **os.environ,
        "ALM_GPU_RESULTS": str(tmp_path / "results"),
        "ALM_GPU_WORK": str(tmp_path / "work"),
        "GPU_RUN_BUDGET": "30",
    }
    proc = subprocess.run(
        ["bash", "benchmarks/gpu/run.sh", *steps], cwd=ROOT, capture_output=True, text=True, env=env, timeout=300
    )
    asked = " ".join(s for s in steps if s != "install")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        f"run.sh: {asked} run on a GPU and this machine has none (nvidia-smi lists no GPU, torch sees no CUDA): run "
        f"them on the lent GPU machine, or here with --dry-run (bash benchmarks/gpu/run.sh --dry-run {asked})"
    ]
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    "module, flags, message",
    [
        (
            "gpu.step_profile",
            [],
            "--device cuda (the default): this benchmark needs a GPU and torch sees none: run it "
            "on a GPU machine, or pass --device cpu for a quick look here",
        ),
        ("gpu.step_profile", ["--device", "cuda"], "--device cuda (the default): this benchmark needs a GPU"),
        (
            "stream_speed",
            ["--device", "cuda"],
            "--device cuda: torch sees no GPU here: run it on a GPU machine, or leave --device out (the CPU)",
        ),
    ],
    ids=["step_profile", "step_profile-cuda", "stream_speed-cuda"],
)
def test_the_gpu_benchmarks_on_a_machine_without_a_gpu_say_so_in_one_line(monkeypatch, capsys, module, flags, message):
    """The GPU benchmarks with --device cuda say in one line that there is no GPU (no CUDA assertion, no CPU figure
    under a GPU benchmark's name). Run as a machine without a GPU sees torch (in this process: no benchmark
    starts on a machine with one)."""
    script = module.rsplit(".", 1)[-1] + ".py"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(sys, "argv", [script, *flags])
    # run as a script is run: not as the module an earlier test of this worker imported (runpy warns of that)
    monkeypatch.delitem(sys.modules, f"benchmarks.{module}", raising=False)
    with pytest.raises(SystemExit) as exit:
        runpy.run_module(f"benchmarks.{module}", run_name="__main__")
    err = capsys.readouterr().err
    assert exit.value.code == 2 and len(err.strip().splitlines()) == 1, err
    assert last_line(err).startswith(f"{script}: error: {message}"), err


@pytest.mark.parametrize("python", ["/bin/false", "no-such-python"])
def test_install_refuses_a_python_that_does_not_run_in_one_line(python):
    """PYTHON naming no working Python is said to be that, before anything is installed (not blamed on torch)."""
    proc = subprocess.run(
        ["bash", "scripts/install.sh"], cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHON": python}
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        f"install.sh: PYTHON={python} does not run Python: give a Python 3.11, 3.12 or 3.13 (e.g. PYTHON=python3, "
        "or activate a venv first)"
    ]


@pytest.fixture(scope="module")
def dry_row(tmp_path_factory):
    """``(save_dir, results_dir)``: the dry-run corpus's `lstm` row (2 x 32 on the sample) after one update."""
    from benchmarks.rows import PTB_PAPER_DRY

    root = tmp_path_factory.mktemp("dry_row")
    row = PTB_PAPER_DRY.rows["lstm"]
    args = [*row.args, "--max-update", "1", "--save-dir", root / "save" / "lstm", "--cpu", "--no-progress-bar"]
    run(
        "train",
        PTB_PAPER_DRY.data,
        "--user-dir",
        "alm_plugin",
        "--task",
        "sentence_language_modeling",
        "--batch-size",
        "8",
        *args,
    )
    return root / "save", root / "results"


def cut(save, results, monkeypatch, capsys):
    from benchmarks import table

    argv = ["table.py", "--corpus", "ptb-paper-dry", "--rows", "lstm", "--cut", "--save-dir", save]
    monkeypatch.setattr(sys, "argv", [*map(str, argv), "--results-dir", str(results)])
    with pytest.raises(SystemExit) as exit:
        table.main()
    capsys.readouterr()
    return str(exit.value.code)


def test_a_cut_row_without_its_training_log_is_refused_in_one_line(dry_row, monkeypatch, capsys):
    """``table.py --cut`` makes the row's JSON from its train.log: missing or empty, refused, no JSON written."""
    from benchmarks import trainable

    save, results = dry_row
    log = save / "lstm" / "train.log"
    started = []
    monkeypatch.setattr(trainable, "start", lambda *row: started.append(row))
    for state in ("missing", "empty"):
        if state == "empty":
            log.write_text("")
        line = cut(save, results, monkeypatch, capsys)
        assert line == (
            f"lstm: {log} is missing or holds no training record (the row's JSON is made from it): train the row "
            "without --cut, which resumes its checkpoint_last.pt"
        )
        assert not (results / "lstm.json").exists()
    assert started == []  # a refused row starts no count of its parameters


def test_a_row_folder_holding_another_models_checkpoint_is_refused(dry_row, tiny_attentive, monkeypatch, capsys):
    """A checkpoint another model wrote in the row's folder (an attentive LM where `lstm` is) would give the row's
    JSON that model's figures: refused in one line, naming the file and the option that differs."""
    import shutil

    save, results = dry_row
    other = save.parent / "other"
    shutil.copytree(save, other)
    shutil.copy(tiny_attentive[0], other / "lstm" / "checkpoint_best.pt")
    line = cut(other, results, monkeypatch, capsys)
    assert line.startswith(f"lstm: {other / 'lstm' / 'checkpoint_best.pt'} holds a model with --arch attentive_lm,")
    assert not (results / "lstm.json").exists()
