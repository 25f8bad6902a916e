"""examples/quickstart.sh run again: a model already trained for its epochs is not trained again,
the run says so in one line and how to train again, and still prints the test perplexity."""

import os
import subprocess

import torch
from conftest import ROOT


def test_a_rerun_skips_training_and_says_how_to_train_again(tiny_attentive, tmp_path):
    state = torch.load(tiny_attentive[0], map_location="cpu", weights_only=False)
    state["extra_state"]["train_iterator"]["epoch"] = 9  # 8 epochs finished: the next would be the 9th
    save = tmp_path / "quickstart"
    save.mkdir()
    for name in ("checkpoint_last.pt", "checkpoint_best.pt"):
        torch.save(state, save / name)
    env = {**os.environ, "SKIP_INSTALL": "1", "SAVE_DIR": str(save), "EPOCHS": "8"}
    done = subprocess.run(
        ["bash", "examples/quickstart.sh"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Found a model trained for 8 epochs in {save}: training skipped (to train again: rm -r {save})." in (
        done.stdout
    )
    assert "Training attentive_lm_small" not in done.stdout and not (save / "train.log").exists()
    assert "Test perplexity (fairseq-eval-lm, every word and </s> counted): " in done.stdout
