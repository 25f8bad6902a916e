"""A checkpoint that cannot be read or does not fit what is asked of it is refused in one line by
every tool that loads one (fairseq-train resuming, fairseq-eval-lm, alm-score, alm-plot-attention,
alm-cache-posterior, alm-cache-grid): an unreadable or missing file, an option that changes the
model's function set otherwise on load, a misspelt override. The one-line hook shortens only the
plugin's own errors."""

import decimal
import sys

import pytest
import torch
from cli import EVAL, TINY, TRAIN_COMMON, eval_lm_result, last_line, refused, run, run_module
from conftest import SAMPLE_DATA, short_split

LIGHT_EVAL = [*EVAL, "--batch-size", "16", "--max-valid-steps", "1"]


# ---------------------------------------------------------------- unreadable and missing checkpoints


def test_an_unreadable_checkpoint_is_one_line(attentive, tmp_path):
    corrupt = tmp_path / "checkpoint_best.pt"
    corrupt.write_bytes(attentive.read_bytes()[:5000])
    code, output = run("eval_lm", SAMPLE_DATA, "--path", corrupt, *LIGHT_EVAL, check=False)
    assert code != 0 and refused(output, "fairseq-eval-lm", f"{corrupt} could not be read as a fairseq checkpoint")


def test_a_corrupt_checkpoint_is_named_by_fairseq_eval_lm(tmp_path, tiny_lm):
    corrupt = tmp_path / "checkpoint_best.pt"
    corrupt.write_bytes(tiny_lm.read_bytes()[:5000])
    code, output = run(
        "eval_lm",
        SAMPLE_DATA,
        "--path",
        corrupt,
        "--user-dir",
        "alm_plugin",
        "--task",
        "sentence_language_modeling",
        "--cpu",
        check=False,
    )
    assert code != 0 and f"{corrupt} could not be read as a fairseq checkpoint" in last_line(output)


@pytest.mark.parametrize(
    "module, prog, extra",
    [
        ("alm_plugin.cli.score", "alm-score", []),
        ("alm_plugin.cli.plot_attention", "alm-plot-attention", ["the cat"]),
        ("alm_plugin.cli.cache_posterior", "alm-cache-posterior", []),
        ("alm_plugin.cli.cache_grid", "alm-cache-grid", []),
    ],
)
def test_every_tool_loads_and_refuses_a_checkpoint_alike(tmp_path, tiny_lm, module, prog, extra):
    corrupt = tmp_path / "corrupt.pt"
    corrupt.write_bytes(tiny_lm.read_bytes()[:5000])
    for path, message in (
        (corrupt, f"{corrupt} could not be read as a fairseq checkpoint"),
        (tmp_path / "absent.pt", f"no language model checkpoint at {tmp_path / 'absent.pt'}"),
    ):
        code, stdout, stderr = run_module(module, "--path", path, *extra, stdin="the cat\n")
        assert code == 1 and "Traceback" not in stderr, stderr
        assert last_line(stderr).startswith(f"{prog}: error: {message}"), stderr


@pytest.mark.parametrize("part, name", [("model", "nope_lm"), ("model", None), ("task", "nope_task"), ("task", None)])
def test_a_checkpoint_naming_an_unknown_model_or_task_is_one_line_naming_the_file(tmp_path, tiny_lm, part, name):
    """Where the task is built from the checkpoint (alm-score, the hub) an unknown saved task is refused like an
    unknown model; fairseq-eval-lm builds its own task, so there only the model matters. The file is left as it was."""
    from alm_plugin.errors import CheckpointError
    from alm_plugin.models.lstm_lm import LSTMLanguageModel

    state = torch.load(tiny_lm, weights_only=True)
    state["cfg"][part]["_name"] = name
    foreign = tmp_path / "foreign.pt"
    torch.save(state, foreign)
    before = foreign.read_bytes()
    says = f"{foreign}: its saved {part} {name!r} is not one fairseq knows here: load the --user-dir that defines it"
    code, stdout, stderr = run_module("alm_plugin.cli.score", "--path", foreign, "--cpu", stdin="the cat\n")
    assert code == 1 and refused(stderr, "alm-score", says)
    with pytest.raises(CheckpointError, match="is not one fairseq knows here"):
        LSTMLanguageModel.from_pretrained(str(tmp_path), "foreign.pt", str(tiny_lm.parent.parent / "data"))
    if part == "model":
        code, output = run("eval_lm", tiny_lm.parent.parent / "data", "--path", foreign, *LIGHT_EVAL, check=False)
        assert code != 0 and refused(output, "fairseq-eval-lm", says)
    assert foreign.read_bytes() == before


# ---------------------------------------------------------------- options that change the model's function


def test_an_option_mismatch_on_load_is_our_last_line_without_a_traceback(attentive, tmp_path):
    code, output = run(
        "eval_lm",
        SAMPLE_DATA,
        "--path",
        attentive,
        *LIGHT_EVAL,
        "--model-overrides",
        "{'concat_activation': 'linear'}",
        check=False,
    )
    assert code != 0 and refused(
        output,
        "fairseq-eval-lm",
        "this checkpoint was trained with --concat-activation "
        "tanh, but the model being built has --concat-activation linear",
    )
    save = tmp_path / "resume"
    save.mkdir()
    (save / "checkpoint_last.pt").write_bytes(attentive.read_bytes())
    before = (save / "checkpoint_last.pt").read_bytes()
    # fairseq-train re-raises it as "Cannot load model parameters ..."; ours is still the last line
    code, output = run(
        "train",
        SAMPLE_DATA,
        *TRAIN_COMMON,
        "--arch",
        "attentive_lm",
        *TINY,
        "--memory-window",
        "5",
        "--max-update",
        "4",
        "--save-dir",
        save,
        check=False,
    )
    assert code != 0 and refused(
        output, "fairseq-train", "trained with --memory-window 0, but the model being built has --memory-window 5"
    )
    code, output = run(
        "train",
        SAMPLE_DATA,
        *TRAIN_COMMON,
        "--arch",
        "attentive_lm",
        *TINY,
        "--attention-sentinel",
        "--max-update",
        "4",
        "--save-dir",
        save,
        check=False,
    )
    assert code != 0 and refused(
        output,
        "fairseq-train",
        "trained with --attention-sentinel False, but the model being built has --attention-sentinel True",
    )
    code, output = run(
        "train",
        SAMPLE_DATA,
        *TRAIN_COMMON,
        "--arch",
        "amsrn",
        *TINY,
        "--max-update",
        "4",
        "--save-dir",
        save,
        check=False,
    )
    assert code != 0 and refused(output, "fairseq-train", "this checkpoint does not fit AMSRNLanguageModel")
    assert (save / "checkpoint_last.pt").read_bytes() == before


def test_the_same_cutoffs_written_another_way_load_the_model(adaptive_sentence, tmp_path):
    """'500, 2000' names the same cutoffs as 500,2000: the model loads."""
    common = [
        short_split(tmp_path, 10),
        "--path",
        adaptive_sentence,
        "--user-dir",
        "alm_plugin",
        "--task",
        "sentence_language_modeling",
        "--cpu",
        "--gen-subset",
        "valid",
        "--batch-size",
        "16",
    ]
    _, plain = eval_lm_result(run("eval_lm", *common)[1])
    for written in ("500, 2000", " 500 ,2000 ", "[500, 2000]"):
        code, output = run(
            "eval_lm", *common, "--model-overrides", f"{{'adaptive_softmax_cutoff': '{written}'}}", check=False
        )
        assert code == 0, output[-2000:]
        assert eval_lm_result(output)[1] == plain
    code, output = run("eval_lm", *common, "--model-overrides", "{'adaptive_softmax_cutoff': '500, 3000'}", check=False)
    assert code == 1 and refused(
        output,
        "fairseq-eval-lm",
        "trained with --adaptive-softmax-cutoff 500,2000, but the "
        "model being built has --adaptive-softmax-cutoff 500, 3000",
    )


def test_a_misspelt_override_is_refused_naming_the_key(attentive):
    """A --model-overrides key no config has is refused naming it, not dropped with the model scored unchanged."""
    code, output = run(
        "eval_lm",
        SAMPLE_DATA,
        "--path",
        attentive,
        *LIGHT_EVAL,
        "--model-overrides",
        "{'concat_activaton': 'linear'}",
        check=False,
    )
    assert code != 0 and refused(output, "fairseq-eval-lm", "the override 'concat_activaton'")
    assert "did you mean 'concat_activation'?" in last_line(output)
    code, output = run(
        "eval_lm",
        SAMPLE_DATA,
        "--path",
        attentive,
        *LIGHT_EVAL,
        "--model-overrides",
        "{'pointer_window': 5}",
        check=False,
    )  # another model's option
    assert code != 0 and refused(output, "fairseq-eval-lm", "'pointer_window' (--model-overrides")
    # options of the model (training-only ones) and of fairseq's task and sections are fine
    for overrides in ("{'dropout': 0.1}", f"{{'data': '{SAMPLE_DATA}', 'seed': 3}}"):
        code, output = run(
            "eval_lm", SAMPLE_DATA, "--path", attentive, *LIGHT_EVAL, "--model-overrides", overrides, check=False
        )
        assert code == 0, output[-2000:]
    from alm_plugin.errors import OptionError
    from alm_plugin.models.attentive_lm import AttentiveLanguageModel

    with pytest.raises(OptionError, match="'memory_windw'.*did you mean 'memory_window'"):
        AttentiveLanguageModel.from_pretrained(str(attentive.parent), attentive.name, SAMPLE_DATA, memory_windw=3)


# ---------------------------------------------------------------- the one-line hook


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


def test_an_unreadable_checkpoints_reason_ends_at_a_sentence(tmp_path):
    """torch's long refusal of a pickled object (with terminal colours) is given in whole sentences:
    before, it was cut at 160 characters, mid-word."""
    from alm_plugin.mends.checkpoint_safety import whole_sentences

    pickled = tmp_path / "checkpoint_best.pt"
    torch.save({"model": decimal.Decimal(1)}, pickled)  # an object weights_only refuses
    code, output = run("eval_lm", SAMPLE_DATA, "--path", pickled, *LIGHT_EVAL, check=False)
    line = last_line(output)
    assert code != 0 and refused(output, "fairseq-eval-lm", f"{pickled} could not be read as a fairseq checkpoint")
    reason = line.split("(UnpicklingError: ", 1)[1].split(" Is it a complete checkpoint_*.pt")[0]
    assert reason.endswith(".).") and "\x1b" not in line, line
    assert whole_sentences("One. Two words. " + "x" * 300) == "One. Two words."
    assert whole_sentences("word " * 100, limit=20) == "word word word word ..."


def test_a_missing_checkpoint_is_one_line_in_fairseqs_commands(tmp_path):
    """A missing --path is named in one line, not fairseq's OSError traceback."""
    missing = tmp_path / "missing.pt"
    code, output = run("eval_lm", SAMPLE_DATA, "--path", missing, *LIGHT_EVAL, check=False)
    assert code != 0 and refused(output, "fairseq-eval-lm", f"--path {missing}: no such file; give a checkpoint")
