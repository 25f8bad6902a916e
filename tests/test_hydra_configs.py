"""The paper setups in alm_plugin/config run through fairseq-hydra-train (shrunk to the
shipped sample), and say what the papers say."""

import glob
import json
import os
import re
import subprocess
import sys

import pytest
import yaml
from conftest import ROOT, SAMPLE_DATA, short_split

CONFIG_DIR = os.path.join(ROOT, "alm_plugin", "config")
CONFIGS = sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(CONFIG_DIR, "*.yaml")))
SMALL = {
    "attentive_lm": ["model.embed_dim=16", "model.hidden_size=16"],
    "amsrn": ["model.embed_dim=16", "model.hidden_size=16"],
    "char_cache_lm": ["model.char_embed_dim=8", "model.hidden_size=16", "dataset.batch_size=4"],
}
MARK = "=== fairseq-hydra-train config "
# fairseq-hydra-train's console script, once a config, in one fresh process: the first config imports
# the plugin through its common.user_dir (every config names it: test_config_trains_with_fairseq_hydra_train);
# between configs the globals a fresh process starts without are cleared (hydra's, fairseq's best loss)
TRAIN_EACH = f"""
import json, sys, traceback
from hydra.core.global_hydra import GlobalHydra
from fairseq import checkpoint_utils
from fairseq_cli import train
from fairseq_cli.hydra_train import cli_main
for name, argv in json.loads(sys.argv.pop(1)):
    print({MARK!r} + name, flush=True)
    GlobalHydra.instance().clear()
    for function, attribute in ((checkpoint_utils.save_checkpoint, "best"), (train.should_stop_early, "best"),
                                (train.should_stop_early, "num_runs")):
        if hasattr(function, attribute):
            delattr(function, attribute)
    sys.argv = ["fairseq-hydra-train", *argv]
    try:
        cli_main()
        code = 0
    except SystemExit as exit:
        code = exit.code if isinstance(exit.code, int) else int(exit.code is not None)
    except BaseException:
        traceback.print_exc()
        code = 1
    print({MARK!r} + name + " exit code " + str(code), flush=True)
"""


def test_the_configs_are_those_docs_tools_md_lists():
    """A config added without a word in docs/tools.md, or one it names that is gone, fails here."""
    with open(os.path.join(ROOT, "docs", "tools.md"), encoding="utf-8") as f:
        listed = re.search(r"hydra configs \(`alm_plugin/config/`: (.*?)\)", f.read(), re.S)
    assert listed, "docs/tools.md lists the hydra configs nowhere this test reads"
    assert sorted(re.findall(r"`(\w+)`", listed.group(1))) == CONFIGS


def read_config(name):
    with open(os.path.join(CONFIG_DIR, f"{name}.yaml")) as f:
        return yaml.safe_load(f)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """{config: (exit code, output, save dir)}: every config trained by fairseq-hydra-train for 2 updates on
    the shipped sample (its valid split cut to 8 sentences), the model shrunk."""
    root = tmp_path_factory.mktemp("hydra")
    # run from a folder of its own, as a user's project: hydra writes its log (hydra_train.log) where it runs, and
    # the configs' user_dir names alm_plugin from there
    os.symlink(os.path.join(ROOT, "alm_plugin"), root / "alm_plugin")
    data = short_split(root / "data", 8)
    for split in ("train", "test"):
        for ext in ("bin", "idx"):
            os.symlink(os.path.join(SAMPLE_DATA, f"{split}.{ext}"), data / f"{split}.{ext}")
    runs = [
        (
            name,
            [
                "--config-dir",
                CONFIG_DIR,
                "--config-name",
                name,
                f"task.data={data}",
                "common.cpu=true",
                "optimization.max_update=2",
                "optimization.max_epoch=1",
                f"checkpoint.save_dir={root / name}",
                *SMALL[read_config(name)["model"]["_name"]],
            ],
        )
        for name in CONFIGS
    ]
    proc = subprocess.run(
        [sys.executable, "-c", TRAIN_EACH, json.dumps(runs)],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    results = {}
    for part in proc.stdout.split(MARK)[1:]:  # "<name>\n<its output>", then "<name> exit code <n>\n"
        head, _, output = part.partition("\n")
        name, _, code = head.partition(" exit code ")
        results[name] = (int(code), results[name][1], root / name) if code else (None, output, root / name)
    return results, proc.stdout, root


@pytest.mark.parametrize("name", CONFIGS)
def test_config_trains_with_fairseq_hydra_train(name, trained):
    results, everything, root = trained
    assert read_config(name)["common"]["user_dir"] == "alm_plugin"  # the plugin, imported by the config itself
    assert name in results, everything[-3000:]
    code, output, save_dir = results[name]
    assert code == 0, output[-3000:]
    assert "done training" in output and os.path.exists(save_dir / "checkpoint_last.pt")
    assert not os.path.exists(root / "outputs")  # hydra stayed in the folder it was started from
    assert os.path.exists(root / "hydra_train.log") and not os.path.exists(os.path.join(ROOT, "hydra_train.log"))


def test_the_attentive_config_is_the_papers_recipe():
    config = read_config("attentive_lm_ptb")
    assert config["model"]["embed_dim"] == config["model"]["hidden_size"] == 650
    assert config["optimization"]["sentence_avg"] is True and config["optimization"]["clip_norm"] == 5.0
    assert config["lr_scheduler"] == {"_name": "fixed", "force_anneal": 13, "lr_shrink": 0.5}
