"""A file planted where the project reads one runs no code: every loader of a checkpoint (the tools, fairseq's
commands, benchmarks/table.py, the quickstart's check) reads it as data (torch's weights_only=True) and
refuses a pickle that would run code; no loader of the project's code is written to unpickle."""

import builtins
import os
import re
import runpy
import sys

import pytest
import torch
from cli import refused, run, run_module
from conftest import ROOT, SAMPLE_DATA


class Planted:
    """Unpickled, it opens (creates) the file ``marker``: what any code planted in a pickle could do."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return builtins.open, (self.marker, "w")


@pytest.fixture
def planted(tmp_path):
    """(a checkpoint_last.pt whose unpickling would create ``marker``, marker)."""
    marker = tmp_path / "code-ran"
    save = tmp_path / "save"
    save.mkdir()
    path = save / "checkpoint_last.pt"
    torch.save({"cfg": {}, "extra_state": Planted(str(marker)), "model": {}}, path)
    return path, marker


def test_fairseq_eval_lm_refuses_a_planted_pickle_without_running_it(planted):
    path, marker = planted
    code, output = run("eval_lm", SAMPLE_DATA, "--user-dir", "alm_plugin", "--path", path, "--cpu", check=False)
    assert code != 0 and refused(output, "fairseq-eval-lm", f"{path} could not be read as a fairseq checkpoint")
    assert not marker.exists()


def test_alm_score_refuses_a_planted_pickle_without_running_it(planted):
    path, marker = planted
    code, _, stderr = run_module("alm_plugin.cli.score", "--path", path, stdin="the cat\n")
    assert code == 1 and refused(stderr, "alm-score", str(path)) and not marker.exists()


def test_the_table_reads_a_rows_checkpoint_as_data(planted):
    """benchmarks/table.py's checkpoint_state reads a row's checkpoint_last.pt as data (resume, --cut)."""
    from benchmarks.table import checkpoint_state

    path, marker = planted
    with pytest.raises(SystemExit) as exit:
        checkpoint_state(str(path))
    assert str(exit.value.code) == (
        f"{path} could not be read as a fairseq checkpoint (UnpicklingError): move it aside and train the row again"
    )
    assert not marker.exists()


def test_the_quickstart_reads_its_checkpoint_as_data(planted, capsys, monkeypatch):
    """The quickstart reads the epoch of checkpoint_last.pt as data."""
    path, marker = planted
    script = os.path.join(ROOT, "examples", "quickstart_checkpoint.py")
    monkeypatch.setattr(sys, "argv", [script, str(path.parent), "8"])
    runpy.run_path(script, run_name="__main__")
    assert capsys.readouterr().out.strip() == f"other {path} is not a checkpoint read as data (UnpicklingError)"
    assert not marker.exists()


def test_no_loader_of_the_project_unpickles():
    """Every torch.load of the project's code, its scripts and its tests reads as data: weights_only=False only
    on a line whose comment says why it is safe there; no pickle.load, no numpy allow_pickle."""
    unsafe = re.compile(r"weights_only\s*=\s*False|\bpickle\.loads?\(|allow_pickle\s*=\s*True|\btorch\.load\(")
    found = []
    for top in ("alm_plugin", "benchmarks", "examples", "scripts", "tests"):
        for folder, _, names in os.walk(os.path.join(ROOT, top)):
            for name in names:
                if not name.endswith((".py", ".sh")):
                    continue
                path = os.path.join(folder, name)
                for number, line in enumerate(open(path, encoding="utf-8"), 1):
                    code = line.split("#", 1)[0]
                    if not unsafe.search(code) or name == os.path.basename(__file__):
                        continue
                    if "torch.load(" in code and "weights_only=True" in line:
                        continue
                    if "weights_only=False" in code and "#" in line:
                        continue  # its comment says why
                    found.append(f"{os.path.relpath(path, ROOT)}:{number}: {line.strip()}")
    assert found == []


def test_the_hub_refuses_a_planted_pickle_without_running_it(planted):
    from alm_plugin.errors import CheckpointError
    from alm_plugin.models.attentive_lm import AttentiveLanguageModel

    path, marker = planted
    with pytest.raises(CheckpointError, match="could not be read as a fairseq checkpoint"):
        AttentiveLanguageModel.from_pretrained(str(path.parent), path.name, data_name_or_path=SAMPLE_DATA)
    assert not marker.exists()


def test_fairseqs_loads_are_refused_where_torch_is_told_to_unpickle(planted, monkeypatch):
    """TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1 (often advised for fairseq's checkpoints) would make fairseq's own
    torch.load unpickle: the plugin refuses to load under it."""
    path, marker = planted
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    code, output = run("eval_lm", SAMPLE_DATA, "--user-dir", "alm_plugin", "--path", path, "--cpu", check=False)
    assert code != 0 and refused(output, "fairseq-eval-lm", "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD is set: torch would")
    assert not marker.exists()
