"""Options that cannot work, refused by fairseq's own CLIs (and alm-score) in one line, naming the
problem and the fix: no traceback, a non-zero exit, nothing written (issue 26)."""
import os
import subprocess
import sys

import pytest

from cli import TRAIN_COMMON, run, run_module
from conftest import ROOT, SAMPLE_DATA

TINY = ["--embed-dim", "16", "--hidden-size", "16", "--num-layers", "1", "--optimizer", "adam", "--lr", "0.01",
        "--batch-size", "64", "--no-epoch-checkpoints", "--disable-validation"]
EVAL = ["--user-dir", "alm_plugin", "--task", "sentence_language_modeling", "--cpu", "--batch-size", "16",
        "--max-valid-steps", "1"]


def last_line(output):
    return output.strip().splitlines()[-1]


def refused(output, tool, message):
    """The run's last line is ``tool: error: ...message...`` and no traceback came before it."""
    assert "Traceback" not in output, output[-3000:]
    assert last_line(output).startswith(f"{tool}: error: ") and message in last_line(output), output[-3000:]
    return True


@pytest.fixture(scope="module")
def attentive(tmp_path_factory):
    save = tmp_path_factory.mktemp("attentive")
    run("train", SAMPLE_DATA, *TRAIN_COMMON, "--arch", "attentive_lm", *TINY, "--max-update", "2", "--save-dir", save)
    return save / "checkpoint_last.pt"


# ---------------------------------------------------------------------- sample lengths

@pytest.mark.parametrize("mode, tokens", [("eos", "0"), ("eos", "-3"), ("none", "0"), ("complete", "-1")])
def test_the_sentence_task_refuses_samples_of_no_tokens(tmp_path, mode, tokens):
    """Before: eos silently stopped cutting long training sentences; none divided by zero."""
    code, output = run("train", SAMPLE_DATA, *TRAIN_COMMON, "--arch", "alm_lstm", *TINY, "--max-update", "1",
                       "--sample-break-mode", mode, "--tokens-per-sample", tokens, "--save-dir", tmp_path, check=False)
    assert code != 0 and refused(output, "fairseq-train", f"--tokens-per-sample {tokens}: a training sample holds at "
                                                          "least 1 token")
    assert not list(tmp_path.iterdir())


def test_a_negative_eval_sample_length_is_refused(attentive):
    code, output = run("eval_lm", SAMPLE_DATA, "--path", attentive, *EVAL, "--eval-tokens-per-sample", "-5",
                       check=False)
    assert code != 0 and refused(output, "fairseq-eval-lm", "--eval-tokens-per-sample -5: give 0")


# ---------------------------------------------------------------------- sizes out of range

@pytest.mark.parametrize("arch, options, message", [
    # before: torch's negative-dimension traceback
    ("attentive_lm", ["--attention-dim", "-4"], "--attention-dim -4 is out of range: it must be at least 0"),
    # before: a ValueError traceback from the attention module
    ("attentive_lm", ["--memory-window", "-1"], "--memory-window -1 is out of range: it must be at least 0"),
    ("amsrn", ["--memory-window", "-2"], "--memory-window -2 is out of range: it must be at least 0"),
    ("alm_lstm", ["--num-layers", "0"], "--num-layers 0 is out of range: it must be at least 1"),
    # a named size overridden
    ("attentive_lm_small", ["--embed-dim", "-16", "--hidden-size", "-16"],
     "--embed-dim -16 is out of range: it must be at least 1"),
    ("pointer_sentinel_lm", ["--pointer-window", "0"], "--pointer-window 0 is out of range: it must be at least 1"),
    ("alm_lstm", ["--dropout", "1.5"], "--dropout 1.5 is out of range: a dropout probability lies in [0, 1]"),
])
def test_sizes_out_of_range_are_refused_by_name(tmp_path, arch, options, message):
    code, output = run("train", SAMPLE_DATA, *TRAIN_COMMON, "--arch", arch, *TINY, *options,
                       "--max-update", "1", "--save-dir", tmp_path, check=False)
    assert code != 0 and refused(output, "fairseq-train", message)
    assert not list(tmp_path.iterdir())


def test_character_model_sizes_and_python_configs_are_checked(tmp_path):
    code, output = run("train", SAMPLE_DATA, "--user-dir", "alm_plugin", "--cpu", "--task",
                       "open_vocabulary_language_modeling", "--batch-size", "4", "--arch", "char_cache_lm_small",
                       "--cache-size", "-1", "--max-update", "1", "--save-dir", tmp_path, check=False)
    assert code != 0 and refused(output, "fairseq-train", "--cache-size -1 is out of range: it must be at least 0")
    from types import SimpleNamespace

    from fairseq.data import Dictionary

    from alm_plugin.errors import OptionError
    from alm_plugin.models.attentive_lm import AttentiveLanguageModel, AttentiveLMConfig
    task = SimpleNamespace(target_dictionary=Dictionary())
    with pytest.raises(OptionError, match="--attention-dim -4 is out of range"):
        AttentiveLanguageModel.build_model(AttentiveLMConfig(attention_dim=-4), task)


# ---------------------------------------------------------------------- loading a checkpoint

def test_an_option_mismatch_on_load_is_our_last_line_without_a_traceback(attentive, tmp_path):
    code, output = run("eval_lm", SAMPLE_DATA, "--path", attentive, *EVAL,
                       "--model-overrides", "{'concat_activation': 'linear'}", check=False)
    assert code != 0 and refused(output, "fairseq-eval-lm", "this checkpoint was trained with --concat-activation "
                                                            "tanh, but the model being built has --concat-activation linear")
    save = tmp_path / "resume"
    save.mkdir()
    (save / "checkpoint_last.pt").write_bytes(attentive.read_bytes())
    before = (save / "checkpoint_last.pt").read_bytes()
    # fairseq-train re-raises it as "Cannot load model parameters ..."; ours is still the last line
    code, output = run("train", SAMPLE_DATA, *TRAIN_COMMON, "--arch", "attentive_lm", *TINY, "--memory-window", "5",
                       "--max-update", "4", "--save-dir", save, check=False)
    assert code != 0 and refused(output, "fairseq-train", "trained with --memory-window 0, but the model being built "
                                                          "has --memory-window 5")
    code, output = run("train", SAMPLE_DATA, *TRAIN_COMMON, "--arch", "amsrn", *TINY,
                       "--max-update", "4", "--save-dir", save, check=False)
    assert code != 0 and refused(output, "fairseq-train", "this checkpoint does not fit AMSRNLanguageModel")
    assert (save / "checkpoint_last.pt").read_bytes() == before


def test_an_unreadable_checkpoint_is_one_line(attentive, tmp_path):
    corrupt = tmp_path / "checkpoint_best.pt"
    corrupt.write_bytes(attentive.read_bytes()[:5000])
    code, output = run("eval_lm", SAMPLE_DATA, "--path", corrupt, *EVAL, check=False)
    assert code != 0 and refused(output, "fairseq-eval-lm", f"{corrupt} could not be read as a fairseq checkpoint")


def test_a_misspelt_override_is_refused_naming_the_key(attentive):
    """Before: fairseq dropped a key no config has, and scored the model as it was."""
    code, output = run("eval_lm", SAMPLE_DATA, "--path", attentive, *EVAL,
                       "--model-overrides", "{'concat_activaton': 'linear'}", check=False)
    assert code != 0 and refused(output, "fairseq-eval-lm", "the override 'concat_activaton'")
    assert "did you mean 'concat_activation'?" in last_line(output)
    code, output = run("eval_lm", SAMPLE_DATA, "--path", attentive, *EVAL,
                       "--model-overrides", "{'pointer_window': 5}", check=False)  # another model's option
    assert code != 0 and refused(output, "fairseq-eval-lm", "'pointer_window' (--model-overrides")
    # options of the model (training-only ones) and of fairseq's task and sections are fine
    for overrides in ("{'dropout': 0.1}", f"{{'data': '{SAMPLE_DATA}', 'seed': 3}}"):
        code, output = run("eval_lm", SAMPLE_DATA, "--path", attentive, *EVAL, "--model-overrides", overrides,
                           check=False)
        assert code == 0, output[-2000:]
    from alm_plugin.errors import OptionError
    from alm_plugin.models.attentive_lm import AttentiveLanguageModel
    with pytest.raises(OptionError, match="'memory_windw'.*did you mean 'memory_window'"):
        AttentiveLanguageModel.from_pretrained(str(attentive.parent), attentive.name, SAMPLE_DATA, memory_windw=3)


# ---------------------------------------------------------------------- alm-score

@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_alm_score_on_a_full_disk_is_one_line(attentive):
    """A real process: the failed write and the interpreter's last flush (before: a traceback)."""
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "alm_plugin.cli.score", "--path", attentive], cwd=ROOT,
                              input="the game\n" * 3000, stdout=full, stderr=subprocess.PIPE, text=True)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr
    assert last_line(proc.stderr) == ("alm-score: error: cannot write the scores to stdout (No space left on device): "
                                      "free space on its disk, or send the output elsewhere; the output is incomplete")


def test_alm_score_names_a_directory_and_an_empty_checkpoint_path(attentive, tmp_path):
    code, stdout, stderr = run_module("alm_plugin.cli.score", "--path", attentive, tmp_path)
    assert code != 0 and last_line(stderr) == f"alm-score: error: input {tmp_path} is a directory: give the text " \
                                              "file(s) to score"
    for path in (f"{attentive}:", f":{attentive}", f"{attentive}::{attentive}"):
        code, stdout, stderr = run_module("alm_plugin.cli.score", "--path", path, stdin="the game\n")
        assert code != 0 and stdout == ""
        assert last_line(stderr) == (f"alm-score: error: --path {path!r} has an empty checkpoint path (a ':' at an "
                                     "end or doubled): give CHECKPOINT, or CK1:CK2 for an ensemble")


def test_the_hook_shortens_only_our_errors(capsys, monkeypatch):
    from alm_plugin.errors import OptionError, one_line_excepthook
    monkeypatch.setattr(sys, "argv", ["/usr/bin/fairseq-train"])
    try:
        try:
            raise OptionError("--x 1: give 2")
        except OptionError:
            raise Exception("Cannot load model parameters from checkpoint")  # fairseq's re-raise
    except Exception as error:
        one_line_excepthook(type(error), error, error.__traceback__)
    assert capsys.readouterr().err == "fairseq-train: error: --x 1: give 2\n"
    try:
        raise KeyError("a bug of ours or fairseq's")
    except KeyError as error:
        one_line_excepthook(type(error), error, error.__traceback__)
    assert "Traceback" in capsys.readouterr().err
    monkeypatch.setenv("ALM_TRACEBACK", "1")
    try:
        raise OptionError("--x 1: give 2")
    except OptionError as error:
        one_line_excepthook(type(error), error, error.__traceback__)
    err = capsys.readouterr().err
    assert "Traceback" in err and err.strip().endswith("OptionError: --x 1: give 2")
