"""What a new user's attack of the adaptive softmax and dynamic evaluation found (issue 47, item 4):
options that printed another figure without a word, tracebacks, and unclear messages. Each is
refused in one line before anything is scored, or now does what the docs say."""
import os
import shutil

import pytest

from cli import TRAIN_COMMON, eval_lm_result, run, run_module
from conftest import SAMPLE_DATA
from test_refusals import refused

TINY = ["--embed-dim", "24", "--hidden-size", "24", "--num-layers", "1", "--criterion", "attention_cross_entropy",
        "--optimizer", "adam", "--lr", "0.01", "--batch-size", "32", "--no-epoch-checkpoints", "--disable-validation",
        "--seed", "1"]
CUTOFFS = ["--adaptive-softmax-cutoff", "500,2000"]
EVAL = ["--user-dir", "alm_plugin", "--task", "sentence_language_modeling", "--cpu", "--gen-subset", "valid"]


# ---------------------------------------------------------------- 1. an empty cutoff list

@pytest.mark.parametrize("cutoff", ["--adaptive-softmax-cutoff=,", "--adaptive-softmax-cutoff=", "--adaptive-softmax-cutoff= , "])
def test_an_empty_cutoff_list_is_refused_not_trained_as_the_full_softmax(tmp_path, cutoff):
    code, output = run("train", SAMPLE_DATA, *TRAIN_COMMON, "--arch", "alm_lstm", *TINY, cutoff,
                       "--max-update", "1", "--save-dir", tmp_path, check=False)
    assert code == 1 and refused(output, "fairseq-train", "holds no word id: give the cutoffs, comma-separated")
    assert not list(tmp_path.iterdir())


# ---------------------------------------------------------------- shared tiny models

@pytest.fixture(scope="module")
def adaptive_sentence(tmp_path_factory):
    """alm_lstm with the adaptive softmax, one sentence per sample."""
    save = tmp_path_factory.mktemp("adaptive_sentence")
    run("train", SAMPLE_DATA, *TRAIN_COMMON, "--arch", "alm_lstm", *TINY, *CUTOFFS, "--max-update", "20",
        "--save-dir", save)
    return save / "checkpoint_last.pt"


def stream_model(tmp_path_factory, arch, *extra):
    save = tmp_path_factory.mktemp(arch)
    run("train", SAMPLE_DATA, "--user-dir", "alm_plugin", "--task", "document_language_modeling", "--cpu",
        "--no-progress-bar", "--num-workers", "0", "--arch", arch, *TINY, *extra, "--batch-size", "10",
        "--tokens-per-sample", "35", "--max-update", "15", "--save-dir", save)
    return save / "checkpoint_last.pt"


@pytest.fixture(scope="module")
def lstm_stream(tmp_path_factory):
    return stream_model(tmp_path_factory, "alm_lstm")


@pytest.fixture(scope="module")
def pointer_stream(tmp_path_factory):
    return stream_model(tmp_path_factory, "pointer_sentinel_lm", "--pointer-window", "10")


STREAM_EVAL = ["--user-dir", "alm_plugin", "--task", "document_language_modeling", "--cpu", "--gen-subset", "valid",
               "--batch-size", "1"]


# ---------------------------------------------------------------- 2. --softmax-batch with dynamic evaluation

@pytest.mark.parametrize("model, reading, options, reader", [
    ("lstm_stream", STREAM_EVAL, ["--dynamic-eval-lr", "0.3"], "dynamic evaluation (one step per whole segment)"),
    ("adaptive_sentence", EVAL, ["--dynamic-eval-lr", "0.3"], "dynamic evaluation (one step per whole segment)"),
    ("adaptive_sentence", EVAL, ["--neural-cache-window", "100"], "the neural cache reads a batch whole"),
    ("adaptive_sentence", EVAL, ["--dynamic-eval-lr", "0.3", "--neural-cache-window", "100"],
     "and the neural cache read a batch whole"),
])
def test_softmax_batch_with_dynamic_evaluation_or_the_cache_is_refused_before_scoring(request, model, reading,
                                                                                       options, reader):
    """Before: a stream LSTM printed 214.98 against 159.91 (a step per slice of 7 tokens)."""
    checkpoint = request.getfixturevalue(model)
    code, output = run("eval_lm", SAMPLE_DATA, "--path", checkpoint, *reading, "--softmax-batch", "7", *options,
                       check=False)
    assert code == 1 and refused(output, "fairseq-eval-lm", f"--softmax-batch 7: fairseq would hand the model slices")
    assert reader in output and "drop --softmax-batch" in output
    assert "examples" not in output  # refused before the split is even loaded


# ---------------------------------------------------------------- 9. the pointer's --softmax-batch: exit 1, up front

def test_softmax_batch_on_a_pointer_stream_model_exits_1_before_any_batch_is_read(pointer_stream):
    """Before: refused from inside the scoring loop, and one run in two ended with 'terminate called
    without an active exception' (exit 134). A process of its own, as a user runs it."""
    import subprocess
    import sys
    from conftest import ROOT
    launch = "import sys; from fairseq_cli.eval_lm import cli_main; sys.argv[0] = 'fairseq-eval-lm'; cli_main()"
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", launch, SAMPLE_DATA, "--path", str(pointer_stream), *STREAM_EVAL,
                               "--softmax-batch", "7", "--num-workers", "2"], cwd=ROOT, capture_output=True, text=True)
        output = proc.stdout + proc.stderr
        assert proc.returncode == 1, output[-3000:]
        assert refused(output, "fairseq-eval-lm", "the Pointer Sentinel-LSTM's mixture reads a batch whole: drop "
                                                  "--softmax-batch")
        assert "examples" not in output


# ---------------------------------------------------------------- 3. the test-time options in fairseq-validate

@pytest.mark.parametrize("options, flag", [
    (["--dynamic-eval-lr", "30"], "--dynamic-eval-lr is a test-time option"),
    (["--neural-cache-window", "500", "--neural-cache-lambda", "0.5"], "--neural-cache-window is a test-time option"),
])
def test_fairseq_validate_refuses_the_test_time_options_instead_of_printing_the_static_figure(adaptive_sentence,
                                                                                               options, flag):
    common = [SAMPLE_DATA, "--path", adaptive_sentence, "--user-dir", "alm_plugin", "--task",
              "sentence_language_modeling", "--cpu", "--valid-subset", "valid", "--batch-size", "16"]
    _, static = run("validate", *common)  # the model's own figure: fine
    assert "valid on 'valid' subset" in static
    code, output = run("validate", *common, *options, check=False)
    assert code == 1 and refused(output, "fairseq-validate", flag)
    assert "(fairseq-eval-lm, alm-score, alm-cache-grid)" in output and "from fairseq-train and fairseq-validate" in output
    assert "valid on 'valid' subset" not in output  # before a batch is read


# ---------------------------------------------------------------- 4. the hub with dynamic evaluation

SENTENCE = "The game was released in Japan ."


def test_each_hub_score_call_starts_from_the_trained_weights(adaptive_sentence):
    """Before: the same sentence scored -21.66, -0.146, -0.0205 (lr 1), the model adapting across calls."""
    import torch
    from alm_plugin.models.lstm_lm import LSTMLanguageModel
    directory, name = str(adaptive_sentence.parent), adaptive_sentence.name
    static = LSTMLanguageModel.from_pretrained(directory, name, SAMPLE_DATA).eval()
    lm = LSTMLanguageModel.from_pretrained(directory, name, SAMPLE_DATA, dynamic_eval_lr=1.0).eval()
    assert lm.models[0].dynamic_eval is not None
    trained = [p.detach().clone() for p in lm.models[0].parameters()]
    expected = static.score(SENTENCE)["positional_scores"]
    for _ in range(3):  # the first segment of a text is scored at the trained weights
        torch.testing.assert_close(lm.score(SENTENCE)["positional_scores"], expected)
    for p, q in zip(lm.models[0].parameters(), trained):  # and the call leaves the trained weights
        torch.testing.assert_close(p, q)
    # a list is one text: its sentences adapt in order, the first at the trained weights, the next adapted
    first, second = lm.score([SENTENCE, SENTENCE])
    torch.testing.assert_close(first["positional_scores"], expected)
    assert float(second["positional_scores"].sum()) > float(expected.sum()) + 1.0
    torch.testing.assert_close(lm.score([SENTENCE, SENTENCE])[1]["positional_scores"], second["positional_scores"])


# ---------------------------------------------------------------- 5 and 12. alm-cache-grid's dynamic axes

GRID = ["--windows", "50", "--thetas", "0.3", "--lambdas", "0.2", "--cpu"]


@pytest.mark.parametrize("options, message", [
    (["--dynamic-decays", "0.5", "--dynamic-rule", "rms"], "--dynamic-decays does nothing without --dynamic-lrs"),
    (["--dynamic-rule", "rms"], "--dynamic-rule does nothing without --dynamic-lrs"),
    (["--dynamic-lrs", "0", "--dynamic-decays", "0.5"], "--dynamic-decays does nothing without --dynamic-lrs"),
    (["--dynamic-lrs", "-0.3"], "--dynamic-lrs -0.3 is out of range: it must be at least 0"),
    (["--dynamic-lrs", "0.3", "--dynamic-decays", "1.5"], "--dynamic-decays 1.5 is out of range"),
    (["--dynamic-lrs", "0.3", "--dynamic-segment", "10"], "--dynamic-segment: "),
])
def test_the_grids_dynamic_options_are_refused_under_their_own_names(adaptive_sentence, options, message):
    """Before: decays and a rule without step sizes ran a cache-only grid without a word, and the
    refusals named --dynamic-eval-* options the grid does not have."""
    code, out, err = run_module("alm_plugin.cli.cache_grid", "--path", adaptive_sentence, *GRID, *options)
    assert code == 1 and refused(err, "alm-cache-grid", message)
    assert "--dynamic-eval" not in err and not out


def test_lr_0_in_the_grid_is_the_static_point(adaptive_sentence):
    """Before: --dynamic-lrs 0,0.3 answered '--dynamic-eval-decay does nothing without --dynamic-eval-lr'."""
    code, out, err = run_module("alm_plugin.cli.cache_grid", "--path", adaptive_sentence, *GRID,
                                "--dynamic-lrs", "0,0.3")
    assert code == 0, err
    assert "dynamic evaluation lr 0.3 decay 0 (sgd)" in out and "lr 0 decay" not in out
    code, alone, err = run_module("alm_plugin.cli.cache_grid", "--path", adaptive_sentence, *GRID, "--dynamic-lrs", "0.3")
    assert code == 0 and alone == out  # the static point is measured either way


# ---------------------------------------------------------------- 6 and 7. the translation decoders' criterion

@pytest.fixture(scope="module")
def translation_data(tmp_path_factory):
    from test_translation_end_to_end import sentence_pairs
    root = tmp_path_factory.mktemp("nmt")
    for split, n in (("train", 200), ("valid", 20)):
        pairs = list(sentence_pairs(n, seed=len(split)))
        (root / f"{split}.de").write_text("".join(de + "\n" for de, _ in pairs))
        (root / f"{split}.en").write_text("".join(en + "\n" for _, en in pairs))
    run("preprocess", "--source-lang", "de", "--target-lang", "en", "--trainpref", root / "train",
        "--validpref", root / "valid", "--destdir", root / "bin", "--workers", "1")
    return root / "bin"


def train_translation(data, save, criterion):
    return run("train", data, "--user-dir", "alm_plugin", "--task", "translation", "--source-lang", "de",
               "--target-lang", "en", "--cpu", "--arch", "attentive_nmt_small", "--embed-dim", "16", "--hidden-size",
               "16", "--encoder-embed-dim", "16", "--encoder-hidden-size", "16", "--adaptive-softmax-cutoff", "8",
               *criterion, "--optimizer", "adam", "--lr", "0.01", "--max-tokens", "400", "--max-update", "2",
               "--no-epoch-checkpoints", "--disable-validation", "--no-progress-bar", "--num-workers", "0",
               "--save-dir", save, check=False)


@pytest.mark.parametrize("criterion", ["adaptive_loss", "cross_entropy"])
def test_a_translation_decoders_adaptive_softmax_refuses_fairseqs_criteria_by_name(translation_data, tmp_path,
                                                                                   criterion):
    """Before: adaptive_loss ended in fairseq's 'AdaptiveLoss is not compatible ...' traceback, and
    cross_entropy trained (the right loss, from the whole distribution: the full softmax's cost),
    though models.md and troubleshooting.md said both were refused, as the LM tasks refuse them."""
    code, output = train_translation(translation_data, tmp_path, ["--criterion", criterion])
    assert code == 1 and refused(output, "fairseq-train", f"--criterion {criterion} cannot train a model with "
                                                          "--adaptive-softmax-cutoff")
    assert "use --criterion attention_cross_entropy (or label_smoothed_cross_entropy" in output
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("criterion", [["--criterion", "attention_cross_entropy"],
                                       ["--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1"]])
def test_a_translation_decoders_adaptive_softmax_trains_with_ours_or_label_smoothing(translation_data, tmp_path,
                                                                                     criterion):
    code, output = train_translation(translation_data, tmp_path, criterion)
    assert code == 0, output[-3000:]
    assert (tmp_path / "checkpoint_last.pt").exists()


# ---------------------------------------------------------------- 8. cutoffs compared as ids, not as strings

def test_the_same_cutoffs_written_another_way_load_the_model(adaptive_sentence):
    """Before: '500, 2000' on a 500,2000 model was refused as a different model."""
    common = [SAMPLE_DATA, "--path", adaptive_sentence, *EVAL, "--batch-size", "16"]
    _, plain = eval_lm_result(run("eval_lm", *common)[1])
    for written in ("500, 2000", " 500 ,2000 ", "[500, 2000]"):
        code, output = run("eval_lm", *common, "--model-overrides", f"{{'adaptive_softmax_cutoff': '{written}'}}",
                           check=False)
        assert code == 0, output[-2000:]
        assert eval_lm_result(output)[1] == plain
    code, output = run("eval_lm", *common, "--model-overrides", "{'adaptive_softmax_cutoff': '500, 3000'}", check=False)
    assert code == 1 and refused(output, "fairseq-eval-lm", "trained with --adaptive-softmax-cutoff 500,2000, but the "
                                                            "model being built has --adaptive-softmax-cutoff 500, 3000")


# ---------------------------------------------------------------- 10. rms without a training split

def test_rms_without_a_training_split_says_why_and_that_sgd_needs_none(adaptive_sentence, tmp_path):
    """Before: only "no 'train' data in ...", from inside the scoring loop."""
    data = tmp_path / "data"
    shutil.copytree(SAMPLE_DATA, data, ignore=shutil.ignore_patterns("train.*"))
    rms = ["--dynamic-eval-lr", "1e-5", "--dynamic-eval-rule", "rms"]
    code, output = run("eval_lm", data, "--path", adaptive_sentence, *EVAL, *rms, check=False)
    assert code == 1 and refused(output, "fairseq-eval-lm", "--dynamic-eval-rule rms measures MS, each weight's "
                                                            f"gradient, on the training split, but there is no 'train' "
                                                            f"data in {data}")
    assert "or use --dynamic-eval-rule sgd, which needs no training data" in output
    assert "examples" not in output  # before the split to score is read
    text = tmp_path / "text.txt"
    text.write_text("The game was released in Japan .\nIt met with positive sales .\n")
    code, _, err = run_module("alm_plugin.cli.score", "--path", adaptive_sentence, "--data", data, text, *rms)
    assert code == 1 and refused(err, "alm-score", "--dynamic-eval-rule rms measures MS, each weight's gradient, on "
                                                   f"the training split, but no 'train' data in {data}")
    assert "or use --dynamic-eval-rule sgd, which needs no training data" in err
    code, _, err = run_module("alm_plugin.cli.score", "--path", adaptive_sentence, "--data", data, text,
                              "--dynamic-eval-lr", "0.1")
    assert code == 0, err  # sgd reads no training data


# ---------------------------------------------------------------- 11. alm-score: each file a text of its own

@pytest.fixture(scope="module")
def two_texts(tmp_path_factory):
    from fairseq.data import Dictionary, data_utils
    root = tmp_path_factory.mktemp("texts")
    d = Dictionary.load(os.path.join(SAMPLE_DATA, "dict.txt"))
    lines = data_utils.load_indexed_dataset(os.path.join(SAMPLE_DATA, "valid"), d)
    first, second = root / "first.txt", root / "second.txt"
    first.write_text("".join(d.string(lines[i]) + "\n" for i in range(12)), encoding="utf-8")
    second.write_text("".join(d.string(lines[i]) + "\n" for i in range(12, 20)), encoding="utf-8")
    return first, second


def score_rows(*args):
    code, out, err = run_module("alm_plugin.cli.score", *args, "--format", "jsonl")
    assert code == 0, err
    import json
    return [json.loads(line) for line in out.splitlines()], err


@pytest.mark.parametrize("options", [["--dynamic-eval-lr", "0.3"], ["--neural-cache-window", "100",
                                                                    "--neural-cache-lambda", "0.3"]])
def test_alm_score_reads_each_file_as_a_text_of_its_own(adaptive_sentence, two_texts, options):
    """Before: two files were read as one text (the second adapted on the first, its cache holding it)."""
    first, second = two_texts
    both, _ = score_rows("--path", adaptive_sentence, *options, first, second)
    alone = score_rows("--path", adaptive_sentence, *options, second)[0]
    assert [row["logprob"] for row in both[12:]] == [row["logprob"] for row in alone]
    assert [row["line"] for row in both] == list(range(1, 21))  # numbered over all the files
    twice, _ = score_rows("--path", adaptive_sentence, *options, second, second)
    assert [row["logprob"] for row in twice] == [row["logprob"] for row in alone] * 2
    code, out, _ = run_module("alm_plugin.cli.score", "--help")
    assert "Each FILE is a text of its own" in " ".join(out.split())
