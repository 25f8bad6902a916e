"""The test-time options: no token dropped, no flattering perplexity, no tool writing over
its inputs, a printed command that reproduces its figure, one-line refusals."""

import re
import shlex
import shutil
import subprocess
import sys

import pytest
from cli import EVAL, TINY, TRAIN_COMMON, eval_lm_result, refused, run, run_module
from conftest import ROOT, SAMPLE_DATA, short_split

LSTM16 = ["--arch", "alm_lstm", *TINY, "--criterion", "attention_cross_entropy", "--batch-size", "16"]
EVAL16 = [*EVAL, "--batch-size", "16"]


@pytest.fixture(scope="module")
def blocks_model(tmp_path_factory):
    """A sentence-task model trained on blocks across sentences (--sample-break-mode none): the grid
    reads valid that way, and so must the command it prints."""
    save = tmp_path_factory.mktemp("blocks")
    run(
        "train",
        SAMPLE_DATA,
        *TRAIN_COMMON,
        *LSTM16,
        "--sample-break-mode",
        "none",
        "--tokens-per-sample",
        "20",
        "--max-update",
        "4",
        "--save-dir",
        save,
    )
    return save / "checkpoint_last.pt"


@pytest.fixture(scope="module")
def short_valid(tmp_path_factory):
    """The sample's dictionary and its valid split's first 80 lines."""
    return short_split(tmp_path_factory.mktemp("short_valid"), 80)


def test_the_grids_command_reproduces_its_figure_on_its_split(blocks_model, short_valid, tmp_path):
    code, out, err = run_module(
        "alm_plugin.cli.cache_grid",
        "--path",
        blocks_model,
        "--data",
        short_valid,
        "--windows",
        "50",
        "--thetas",
        "0.3",
        "--lambdas",
        "0.2",
        "--cpu",
        "--json",
        tmp_path / "grid.json",
    )
    assert code == 0, err
    best = float(re.search(r"best: ([\d.]+)", out).group(1))
    command = shlex.split(re.search(r"^use: (.*)$", out, re.M).group(1))
    assert command[0] == "fairseq-eval-lm" and "--gen-subset" in command and "--sample-break-mode" in command
    assert command[1] == str(short_valid)
    _, output = run("eval_lm", *command[1:], "--cpu")
    assert eval_lm_result(output)[1] == pytest.approx(best, rel=2e-3)  # before: 345.02 against 338.93


def test_eval_lm_never_drops_a_token_at_the_extremes_the_options_accept(blocks_model, short_valid):
    _, output = run(
        "eval_lm",
        short_valid,
        "--path",
        blocks_model,
        *EVAL16,
        "--neural-cache-window",
        "1",
        "--neural-cache-theta",
        "1e30",
        "--neural-cache-lambda",
        "0.999999",
    )
    assert "skipping tokens" not in output
    loss, ppl = eval_lm_result(output)
    assert ppl > 1000  # the cache at lambda ~1 over one token is a terrible model: it must say so


@pytest.mark.parametrize(
    "options, message",
    [
        # before: 70.83 printed for a split whose real perplexity is infinite ("skipping tokens with inf scores")
        (
            ["--neural-cache-window", "50", "--neural-cache-lambda", "1"],
            "--neural-cache-lambda 1.0 is out of range: it must be below 1",
        ),
        (
            ["--neural-cache-window", "50", "--neural-cache-theta", "nan"],
            "--neural-cache-theta nan: give a finite number",
        ),
        (
            ["--neural-cache-window", "50", "--neural-cache-theta", "inf"],
            "--neural-cache-theta inf: give a finite number",
        ),
        # before: silently nothing
        (["--neural-cache-theta", "0.5"], "--neural-cache-theta does nothing without --neural-cache-window N"),
        (["--neural-cache-lambda", "0.2"], "--neural-cache-lambda does nothing without --neural-cache-window N"),
        # before: fairseq's bare AssertionError
        (["--max-tokens", "5", "--batch-size", "100"], "--max-tokens 5 is below the longest sample of this split"),
    ],
)
def test_eval_lm_refuses_options_that_would_change_the_figure_unnoticed(blocks_model, options, message):
    code, output = run("eval_lm", SAMPLE_DATA, "--path", blocks_model, *EVAL16, *options, check=False)
    assert code != 0 and refused(output, "fairseq-eval-lm", message)


@pytest.mark.parametrize(
    "options, message",
    [
        (["--windows", ","], "--windows: give at least one value"),  # before: IndexError
        (["--windows", "inf"], "--windows inf: give a finite number"),  # before: OverflowError
        (["--lambdas", "0"], "--lambdas: give at least one value above 0"),  # before: min() of an empty sequence
        (["--lambdas", "0.1,1"], "--lambdas 1.0 is out of range: it must be below 1"),  # before: "best: inf", exit 0
        (["--eval-tokens-per-sample", "-1"], "--eval-tokens-per-sample -1: give 0 (whole sentences)"),
    ],
)
def test_cache_grid_refuses_a_grid_it_cannot_run(blocks_model, options, message):
    code, out, err = run_module("alm_plugin.cli.cache_grid", "--path", blocks_model, "--cpu", *options)
    assert code != 0 and refused(out + err, "alm-cache-grid", message)


def outputs_onto_inputs(checkpoint, data):
    """(module, arguments, option) of each tool with a file output, pointed at the checkpoint and at
    the data's dict.txt."""
    sentence = ["The game was released ."]
    for target in (checkpoint, data / "dict.txt"):
        yield "alm_plugin.cli.cache_grid", ["--path", checkpoint, "--data", data, "--json", target], "--json"
        yield (
            "alm_plugin.cli.plot_attention",
            [*sentence, "--path", checkpoint, "--data", data, "--out", target],
            "--out",
        )
        yield "alm_plugin.cli.cache_posterior", ["--path", checkpoint, "--data", data, "--plot", target], "--plot"


def test_no_tool_writes_over_its_checkpoint_or_its_data(blocks_model, tmp_path):
    """An output onto a tool's own --path or data is refused, the checkpoint left as it is."""
    data = tmp_path / "data"
    shutil.copytree(SAMPLE_DATA, data)
    checkpoint = tmp_path / "model.pt"
    shutil.copy(blocks_model, checkpoint)
    before = {path: path.read_bytes() for path in (checkpoint, data / "dict.txt")}
    for module, args, option in outputs_onto_inputs(checkpoint, data):
        code, out, err = run_module(module, *args)
        tool = "alm-" + module.rsplit(".", 1)[1].replace("_", "-")
        assert code != 0 and refused(out + err, tool, option), (module, args)
        assert "would destroy" in (out + err)
    assert {path: path.read_bytes() for path in before} == before


def test_document_task_refuses_a_model_that_cannot_carry_its_state(tmp_path):
    """A model that cannot carry its state across chunks (fairseq's lstm_lm) is refused by name, not a TypeError."""
    code, output = run(
        "train",
        SAMPLE_DATA,
        "--user-dir",
        "alm_plugin",
        "--task",
        "document_language_modeling",
        "--cpu",
        "--arch",
        "lstm_lm",
        "--decoder-embed-dim",
        "16",
        "--decoder-hidden-size",
        "16",
        "--decoder-out-embed-dim",
        "16",
        "--optimizer",
        "adam",
        "--lr",
        "0.01",
        "--batch-size",
        "4",
        "--max-update",
        "1",
        "--save-dir",
        tmp_path,
        check=False,
    )
    assert code != 0 and refused(
        output,
        "fairseq-train",
        "LSTMLanguageModel cannot: use one of our word models (alm_lstm, attentive_lm, amsrn and pointer_sentinel_lm)",
    )


def test_importing_the_plugin_prints_no_chatter():
    """Importing the plugin prints nothing (no 'Please install tensorboardX' above a tool's output)."""
    proc = subprocess.run(
        [sys.executable, "-c", "import alm_plugin.cli.score"], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0 and proc.stdout == "" and "tensorboardX" not in proc.stderr, proc.stderr


GRID_POINT = ["--windows", "50", "--thetas", "0.3", "--lambdas", "0.2", "--cpu"]


def test_lr_0_in_the_grid_is_the_static_point(adaptive_sentence, short_valid):
    """--dynamic-lrs 0,0.3 takes 0 as the static point, not as dynamic evaluation switched off with a decay given."""
    grid = ["alm_plugin.cli.cache_grid", "--path", adaptive_sentence, "--data", short_valid, *GRID_POINT]
    code, out, err = run_module(*grid, "--dynamic-lrs", "0,0.3")
    assert code == 0, err
    assert "dynamic evaluation lr 0.3 decay 0 (sgd)" in out and "lr 0 decay" not in out
    code, alone, err = run_module(*grid, "--dynamic-lrs", "0.3")
    assert code == 0 and alone == out  # the static point is measured either way


# ---------------------------------------------------------------- one refusal, every entry


@pytest.fixture(scope="module")
def fairseq_lstm(tmp_path_factory):
    """(checkpoint, data): fairseq's own lstm_lm on sentence_language_modeling, a model that takes no cache."""
    from conftest import _tiny

    width = ["--decoder-embed-dim", "16", "--decoder-hidden-size", "16", "--decoder-out-embed-dim", "16"]
    options = ["--task", "sentence_language_modeling", "--arch", "lstm_lm", *width, "--batch-size", "16"]
    return _tiny(tmp_path_factory, "fairseq_lstm", options)


def said(tool, output):
    """The refusal's text, without the tool's name."""
    assert "Traceback" not in output, output[-3000:]
    line = output.strip().splitlines()[-1]
    assert line.startswith(f"{tool}: error: "), output[-3000:]
    return line[len(f"{tool}: error: ") :]


def hub_refusal(checkpoint, data, **options):
    from fairseq.models.lstm import LSTMModel  # noqa: F401  (fairseq's lstm_lm is registered by it)
    from fairseq.models.lstm_lm import LSTMLanguageModel

    from alm_plugin.errors import OptionError

    with pytest.raises(OptionError) as refused_here:
        LSTMLanguageModel.from_pretrained(str(checkpoint.parent), checkpoint.name, str(data), **options)
    return str(refused_here.value)


def test_a_cache_on_a_model_that_takes_none_is_refused_alike_by_every_entry(fairseq_lstm, tmp_path):
    checkpoint, data = fairseq_lstm
    text = tmp_path / "text.txt"
    text.write_text("the game was released .\n")
    cache = ["--neural-cache-window", "5"]
    lines = {
        "fairseq-eval-lm": said(
            "fairseq-eval-lm", run("eval_lm", data, "--path", checkpoint, *EVAL16, *cache, check=False)[1]
        ),
        "alm-score": said("alm-score", run_module("alm_plugin.cli.score", "--path", checkpoint, *cache, text)[2]),
        "the hub": hub_refusal(checkpoint, data, neural_cache_window=5),
    }
    expected = (
        "--neural-cache-window: fairseq's LSTMLanguageModel does not hand its output features to the cache; the "
        "neural cache works with alm_lstm, attentive_lm, amsrn and pointer_sentinel_lm. Drop the --neural-cache-* "
        "options for this model."
    )
    assert lines == dict.fromkeys(lines, expected)
    # alm-cache-grid has no --neural-cache-* options to drop: it names the checkpoint in its own words
    grid = said("alm-cache-grid", run_module("alm_plugin.cli.cache_grid", "--path", checkpoint, *GRID_POINT)[2])
    assert grid == (
        f"{checkpoint}: fairseq's LSTMLanguageModel has no neural cache; alm-cache-grid tunes the cache "
        "of alm_lstm, attentive_lm, amsrn and pointer_sentinel_lm; give one of their checkpoints"
    )


def test_a_test_time_option_in_training_is_refused_alike_by_train_and_validate(tiny_lm, tmp_path):
    cache = ["--neural-cache-window", "5"]
    train = run(
        "train", SAMPLE_DATA, *TRAIN_COMMON, *LSTM16, "--max-update", "1", "--save-dir", tmp_path, *cache, check=False
    )
    validate = run("validate", SAMPLE_DATA, "--path", tiny_lm, *EVAL16[:5], "--batch-size", "16", *cache, check=False)
    assert (
        said("fairseq-train", train[1])
        == said("fairseq-validate", validate[1])
        == (
            "--neural-cache-window is a test-time option (fairseq-eval-lm, alm-score, alm-cache-grid): "
            "nothing is trained, and fairseq-validate scores with the criterion, which never reads the "
            "cache. Drop --neural-cache-* from fairseq-train and fairseq-validate."
        )
    )


def test_a_segment_on_a_sentence_model_is_refused_alike_by_every_entry(tiny_lm, tmp_path):
    text = tmp_path / "text.txt"
    text.write_text("the game was released .\n")
    adapt = ["--dynamic-eval-lr", "0.1", "--dynamic-eval-segment", "5"]
    eval_lm = run("eval_lm", SAMPLE_DATA, "--path", tiny_lm, *EVAL16, *adapt, check=False)[1]
    score = run_module("alm_plugin.cli.score", "--path", tiny_lm, "--data", SAMPLE_DATA, *adapt, text)[2]
    from alm_plugin.errors import OptionError
    from alm_plugin.models.lstm_lm import LSTMLanguageModel

    with pytest.raises(OptionError) as hub:
        LSTMLanguageModel.from_pretrained(
            str(tiny_lm.parent), tiny_lm.name, SAMPLE_DATA, dynamic_eval_lr=0.1, dynamic_eval_segment=5
        )
    assert said("fairseq-eval-lm", eval_lm) == said("alm-score", score) == str(hub.value)
    assert str(hub.value).startswith("--dynamic-eval-segment: here a segment is one sentence")


def test_alm_score_help_gives_the_defaults_the_code_fills_in():
    """Each test-time flag's "(default X)" is what ``EvaluationOptions.read`` fills in when it is left out."""
    import argparse

    from alm_plugin.evaluation.options import EvaluationOptions

    code, out, _ = run_module("alm_plugin.cli.score", "--help")
    helps = " ".join(out.split())
    stated = {}  # flag -> the default its help states
    for flag, text in re.findall(r"--((?:neural-cache|dynamic-eval)-[\w-]+) [A-Z_]+ (.*?)(?= --[a-z]|$)", helps):
        if found := re.search(r"\(default ([^;)]+)", text):
            stated[flag] = found.group(1)
    on = argparse.Namespace(neural_cache_window=5, dynamic_eval_lr=0.1, dynamic_eval_rule="rms")
    read = EvaluationOptions.read(on)
    filled = {
        "neural-cache-theta": read.cache[1],
        "neural-cache-lambda": read.cache[2],
        "dynamic-eval-decay": read.dynamic.decay,
        "dynamic-eval-eps": read.dynamic.eps,
        "dynamic-eval-segment": read.dynamic.segment,
        "dynamic-eval-stats-batches": read.dynamic.stats_batches,
    }
    assert code == 0 and set(filled) <= set(stated), stated
    assert {flag: float(stated[flag]) for flag in filled} == {flag: float(v) for flag, v in filled.items()}
    assert stated["dynamic-eval-rule"] == EvaluationOptions.read(argparse.Namespace(dynamic_eval_lr=0.1)).dynamic.rule
