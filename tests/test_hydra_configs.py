"""The paper setups in alm_plugin/config run through fairseq-hydra-train (shrunk to the
shipped sample), and say what the papers say."""

import glob
import os
import re
import subprocess
import sys

import pytest
import yaml
from conftest import ROOT, SAMPLE_DATA

CONFIG_DIR = os.path.join(ROOT, "alm_plugin", "config")
CONFIGS = sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(CONFIG_DIR, "*.yaml")))
SMALL = {
    "attentive_lm": ["model.embed_dim=16", "model.hidden_size=16"],
    "amsrn": ["model.embed_dim=16", "model.hidden_size=16"],
    "char_cache_lm": ["model.char_embed_dim=8", "model.hidden_size=16", "dataset.batch_size=4"],
}


def test_the_configs_are_those_docs_tools_md_lists():
    """A config added without a word in docs/tools.md, or one it names that is gone, fails here."""
    with open(os.path.join(ROOT, "docs", "tools.md"), encoding="utf-8") as f:
        listed = re.search(r"hydra configs \(`alm_plugin/config/`: (.*?)\)", f.read(), re.S)
    assert listed, "docs/tools.md lists the hydra configs nowhere this test reads"
    assert sorted(re.findall(r"`(\w+)`", listed.group(1))) == CONFIGS


@pytest.mark.parametrize("name", CONFIGS)
def test_config_trains_with_fairseq_hydra_train(name, tmp_path):
    with open(os.path.join(CONFIG_DIR, f"{name}.yaml")) as f:
        config = yaml.safe_load(f)
    code = "import sys; from fairseq_cli.hydra_train import cli_main; sys.argv[0] = 'fairseq-hydra-train'; cli_main()"
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "--config-dir",
            CONFIG_DIR,
            "--config-name",
            name,
            f"task.data={SAMPLE_DATA}",
            "common.cpu=true",
            "optimization.max_update=2",
            "optimization.max_epoch=1",
            f"checkpoint.save_dir={tmp_path}",
            *SMALL[config["model"]["_name"]],
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-3000:]
    assert "done training" in output and os.path.exists(tmp_path / "checkpoint_last.pt")
    assert not os.path.exists(os.path.join(ROOT, "outputs"))  # hydra stayed in the repository root


def test_the_attentive_config_is_the_papers_recipe():
    with open(os.path.join(CONFIG_DIR, "attentive_lm_ptb.yaml")) as f:
        config = yaml.safe_load(f)
    assert config["model"]["embed_dim"] == config["model"]["hidden_size"] == 650
    assert config["optimization"]["sentence_avg"] is True and config["optimization"]["clip_norm"] == 5.0
    assert config["lr_scheduler"] == {"_name": "fixed", "force_anneal": 13, "lr_shrink": 0.5}
