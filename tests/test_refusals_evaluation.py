"""fairseq-eval-lm and fairseq-validate refuse, in one line before a batch is read, what would print
another figure than asked: a negative --eval-tokens-per-sample, --softmax-batch with a reader that
needs the batch whole (dynamic evaluation, the neural cache, the pointer's mixture), the test-time
options in fairseq-validate, RMS dynamic evaluation without a training split."""

import shutil

import pytest
from cli import EVAL, refused, run, run_module
from conftest import SAMPLE_DATA

STREAM_EVAL = [*EVAL[:2], "--task", "document_language_modeling", *EVAL[4:], "--batch-size", "1"]  # one stream


# ---------------------------------------------------------------- sample lengths


def test_a_negative_eval_sample_length_is_refused(attentive):
    code, output = run(
        "eval_lm",
        SAMPLE_DATA,
        "--path",
        attentive,
        *EVAL,
        "--batch-size",
        "16",
        "--max-valid-steps",
        "1",
        "--eval-tokens-per-sample",
        "-5",
        check=False,
    )
    assert code != 0 and refused(output, "fairseq-eval-lm", "--eval-tokens-per-sample -5: give 0")


# ---------------------------------------------------------------- --softmax-batch


@pytest.mark.parametrize(
    "model, reading, options, reader",
    [
        ("lstm_stream", STREAM_EVAL, ["--dynamic-eval-lr", "0.3"], "dynamic evaluation (one step per whole segment)"),
        ("adaptive_sentence", EVAL, ["--dynamic-eval-lr", "0.3"], "dynamic evaluation (one step per whole segment)"),
        ("adaptive_sentence", EVAL, ["--neural-cache-window", "100"], "the neural cache reads a batch whole"),
        (
            "adaptive_sentence",
            EVAL,
            ["--dynamic-eval-lr", "0.3", "--neural-cache-window", "100"],
            "and the neural cache read a batch whole",
        ),
    ],
)
def test_softmax_batch_with_dynamic_evaluation_or_the_cache_is_refused_before_scoring(
    request, model, reading, options, reader
):
    """--softmax-batch would hand the model slices of a segment (a step per slice): refused with dynamic evaluation
    and the cache."""
    checkpoint = request.getfixturevalue(model)
    code, output = run(
        "eval_lm", SAMPLE_DATA, "--path", checkpoint, *reading, "--softmax-batch", "7", *options, check=False
    )
    assert code == 1 and refused(output, "fairseq-eval-lm", "--softmax-batch 7: fairseq would hand the model slices")
    assert reader in output and "drop --softmax-batch" in output
    assert "examples" not in output  # refused before the split is even loaded


def test_softmax_batch_on_a_pointer_stream_model_exits_1_before_any_batch_is_read(tiny_pointer):
    """Refused before any batch is read, rc 1, in a process of its own as a user runs it (no abort at exit)."""
    import subprocess
    import sys

    from conftest import ROOT

    launch = "import sys; from fairseq_cli.eval_lm import cli_main; sys.argv[0] = 'fairseq-eval-lm'; cli_main()"
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            launch,
            SAMPLE_DATA,
            "--path",
            str(tiny_pointer[0]),
            *STREAM_EVAL,
            "--softmax-batch",
            "7",
            "--num-workers",
            "2",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1, output[-3000:]  # 134 where the data-loading workers had started
    assert refused(
        output, "fairseq-eval-lm", "the Pointer Sentinel-LSTM's mixture reads a batch whole: drop --softmax-batch"
    )
    assert "examples" not in output  # the split never loaded: no worker started that could abort the exit


# ---------------------------------------------------------------- the test-time options in fairseq-validate


@pytest.mark.parametrize(
    "options, flag",
    [
        (["--dynamic-eval-lr", "30"], "--dynamic-eval-lr is a test-time option"),
        (
            ["--neural-cache-window", "500", "--neural-cache-lambda", "0.5"],
            "--neural-cache-window is a test-time option",
        ),
    ],
)
def test_fairseq_validate_refuses_the_test_time_options_instead_of_printing_the_static_figure(
    adaptive_sentence, options, flag
):
    common = [
        SAMPLE_DATA,
        "--path",
        adaptive_sentence,
        "--user-dir",
        "alm_plugin",
        "--task",
        "sentence_language_modeling",
        "--cpu",
        "--valid-subset",
        "valid",
        "--batch-size",
        "16",
    ]
    _, static = run("validate", *common)  # the model's own figure: fine
    assert "valid on 'valid' subset" in static
    code, output = run("validate", *common, *options, check=False)
    assert code == 1 and refused(output, "fairseq-validate", flag)
    assert (
        "(fairseq-eval-lm, alm-score, alm-cache-grid)" in output and "from fairseq-train and fairseq-validate" in output
    )
    assert "valid on 'valid' subset" not in output  # before a batch is read


# ---------------------------------------------------------------- RMS dynamic evaluation without a training split


def test_rms_without_a_training_split_says_why_and_that_sgd_needs_none(adaptive_sentence, tmp_path):
    """The refusal says why rms reads the training split and that sgd needs none, before scoring starts."""
    data = tmp_path / "data"
    shutil.copytree(SAMPLE_DATA, data, ignore=shutil.ignore_patterns("train.*"))
    rms = ["--dynamic-eval-lr", "1e-5", "--dynamic-eval-rule", "rms"]
    code, output = run("eval_lm", data, "--path", adaptive_sentence, *EVAL, *rms, check=False)
    assert code == 1 and refused(
        output,
        "fairseq-eval-lm",
        "--dynamic-eval-rule rms measures MS, each weight's "
        f"gradient, on the training split, but there is no 'train' "
        f"data in {data}",
    )
    assert "or use --dynamic-eval-rule sgd, which needs no training data" in output
    assert "examples" not in output  # before the split to score is read
    text = tmp_path / "text.txt"
    text.write_text("The game was released in Japan .\nIt met with positive sales .\n")
    code, _, err = run_module("alm_plugin.cli.score", "--path", adaptive_sentence, "--data", data, text, *rms)
    assert code == 1 and refused(
        err,
        "alm-score",
        "--dynamic-eval-rule rms measures MS, each weight's gradient, on "
        f"the training split, but no 'train' data in {data}",
    )
    assert "or use --dynamic-eval-rule sgd, which needs no training data" in err
    code, _, err = run_module(
        "alm_plugin.cli.score", "--path", adaptive_sentence, "--data", data, text, "--dynamic-eval-lr", "0.1"
    )
    assert code == 0, err  # sgd reads no training data


# ---------------------------------------------------------------- the task a model learned


def test_a_model_trained_on_streams_is_refused_under_the_sentence_task(lstm_stream):
    """A model trained on document streams is not scored sentence by sentence from a fresh state under
    `--task sentence_language_modeling`, which would give another figure without a word."""
    code, output = run("eval_lm", SAMPLE_DATA, "--path", lstm_stream, *EVAL, "--batch-size", "8", check=False)
    assert code != 0 and refused(
        output,
        "fairseq-eval-lm",
        f"{lstm_stream} was trained on document streams (--task document_language_modeling), and --task "
        "sentence_language_modeling scores each sentence alone from a fresh state: score it under --task "
        "document_language_modeling",
    )


def test_a_sliced_output_is_refused_where_a_reader_takes_the_batch_whole():
    """The one run-time refusal behind the cache, dynamic evaluation and the pointer: an output of another
    (batch, time) shape than its target's, as --softmax-batch slices it; the batch's own shape passes."""
    import torch

    from alm_plugin.errors import OptionError
    from alm_plugin.options.checks import whole_batch

    whole_batch(torch.zeros(2, 4, 3), torch.zeros(2, 4), "the neural cache")
    with pytest.raises(OptionError, match="and the neural cache needs the batch whole: drop --softmax-batch"):
        whole_batch(torch.zeros(1, 5, 3), torch.zeros(2, 4), "the neural cache")
