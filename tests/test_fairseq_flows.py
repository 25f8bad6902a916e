"""fairseq's own flows on our models, run as fairseq's users run them: checkpoint averaging (the
arithmetic of fairseq's scripts/average_checkpoints.py, restated here since the pip package does not
ship the script), EMA weights (--store-ema), --context-window and the flags of fairseq's LM recipe,
on a word LM, a character LM and a translation model, each tiny, a few updates an epoch."""

import collections
import math
import re

import pytest
import torch
from cli import eval_lm_result, run
from conftest import short_split
from test_translation_end_to_end import NMT, sentence_pairs

EPOCHS = 4
COMMON = ["--cpu", "--no-progress-bar", "--num-workers", "0", "--seed", "1", "--disable-validation"]


def average_checkpoints(paths):
    """What fairseq's scripts/average_checkpoints.py writes: the first checkpoint's dict, its model
    state dict replaced by the entries of every input's summed and divided by their number (every
    entry, integers included: a floor division)."""
    summed, first = collections.OrderedDict(), None
    for path in paths:
        state = torch.load(path, map_location="cpu", weights_only=True)
        first = first or state
        for name, value in state["model"].items():
            value = value.float() if value.dtype == torch.half else value
            if name in summed:
                summed[name] += value
            else:
                summed[name] = value.clone()
    for value in summed.values():
        if value.is_floating_point():
            value.div_(len(paths))
        else:
            value //= len(paths)
    first["model"] = summed
    return first


def ema_checkpoint(path, out):
    """A --store-ema checkpoint's EMA weights as a checkpoint of their own, as fairseq reads them
    (checkpoint_utils.load_ema_from_checkpoint: the EMA state dict in place of the model's)."""
    from fairseq import checkpoint_utils

    torch.save(checkpoint_utils.load_ema_from_checkpoint(str(path)), out)
    return out


# ------------------------------------------------------------------ the three models and their figures


def word_data(root):
    for split, lines, source in (("train", 64, "train"), ("valid", 20, "valid"), ("test", 20, "test")):
        short_split(root, lines, split, source)
    return root


def translation_data(root):
    text = root / "text"
    text.mkdir(parents=True)
    for split, n in (("train", 160), ("valid", 20), ("test", 20)):
        pairs = list(sentence_pairs(n, seed=len(split)))
        (text / f"{split}.de").write_text("".join(de + "\n" for de, _ in pairs))
        (text / f"{split}.en").write_text("".join(en + "\n" for _, en in pairs))
    prefixes = [a for s in ("train", "valid", "test") for a in (f"--{s}pref", text / s)]
    run("preprocess", "--source-lang", "de", "--target-lang", "en", *prefixes, "--destdir", root / "nmt")
    return root / "nmt"


WORD = ["--user-dir", "alm_plugin", "--task", "sentence_language_modeling"]
CHAR = ["--user-dir", "alm_plugin", "--task", "open_vocabulary_language_modeling"]
MODELS = {
    "word": [
        *WORD,
        "--arch",
        "attentive_lm",
        "--embed-dim",
        "16",
        "--hidden-size",
        "16",
        "--num-layers",
        "1",
        "--criterion",
        "attention_cross_entropy",
        "--batch-size",
        "32",
        "--optimizer",
        "adam",
        "--lr",
        "0.01",
    ],
    "char": [
        *CHAR,
        "--arch",
        "char_lstm_lm_small",
        "--char-embed-dim",
        "16",
        "--hidden-size",
        "32",
        "--criterion",
        "open_vocabulary_cross_entropy",
        "--batch-size",
        "8",
        "--tokens-per-sample",
        "50",
        "--optimizer",
        "adam",
        "--lr",
        "0.01",
    ],
    "translation": [
        *NMT,
        "--arch",
        "attentive_nmt_small",
        "--embed-dim",
        "16",
        "--hidden-size",
        "16",
        "--encoder-embed-dim",
        "16",
        "--encoder-hidden-size",
        "16",
        "--max-tokens",
        "500",
        "--optimizer",
        "adam",
        "--lr",
        "0.01",
        "--criterion",
        "label_smoothed_cross_entropy",
        "--label-smoothing",
        "0.1",
    ],
}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("flows_data")
    words = word_data(root / "words")
    return {"word": words, "char": words, "translation": translation_data(root / "translation")}


def figure(kind, data, checkpoint, *extra):
    """The model's test perplexity as fairseq's tools give it: fairseq-eval-lm's for the LMs; for
    the translation model, 2 to the minus the mean per-token log2 score fairseq-generate
    --score-reference gives each reference."""
    if kind == "translation":
        _, output = run(
            "generate", data, *NMT, "--path", checkpoint, "--gen-subset", "test", "--score-reference", *extra
        )
        scores = [float(line.split("\t")[1]) for line in output.splitlines() if line.startswith("H-")]
        assert len(scores) == 20, output[-2000:]
        return 2 ** -(sum(scores) / len(scores))
    options = WORD if kind == "word" else [*CHAR, "--batch-size", "1"]
    _, output = run("eval_lm", data, *options, "--cpu", "--path", checkpoint, "--gen-subset", "test", *extra)
    return eval_lm_result(output)[1]


AVERAGED = 3  # average_checkpoints.py --num-epoch-checkpoints: the last three of the four epochs
SCORED = range(EPOCHS - AVERAGED + 1, EPOCHS + 1)  # the epochs whose checkpoints are scored alone: those


@pytest.fixture(scope="module")
def epochs(data, tmp_path_factory):
    """{kind: (save dir, {epoch: its checkpoint's figure})}: each model trained EPOCHS epochs, a
    checkpoint an epoch, the last AVERAGED scored."""
    trained = {}
    for kind, options in MODELS.items():
        save = tmp_path_factory.mktemp(f"flows_{kind}")
        run("train", data[kind], *options, *COMMON, "--max-epoch", EPOCHS, "--save-dir", save)
        trained[kind] = save, {e: figure(kind, data[kind], save / f"checkpoint{e}.pt") for e in SCORED}
    return trained


def near(value, inputs):
    """Within the inputs' range widened by a quarter either way: an average of weights near each other."""
    return math.isfinite(value) and min(inputs) / 1.25 <= value <= max(inputs) * 1.25


# ------------------------------------------------------------------ averaging, EMA


@pytest.mark.parametrize("kind", list(MODELS))
def test_averaged_epoch_checkpoints_load_and_score_near_their_inputs(kind, data, epochs, tmp_path):
    """average_checkpoints.py --num-epoch-checkpoints 3 (the last three of four epochs): the
    averaged checkpoint is read by fairseq-eval-lm / fairseq-generate, its figure near the inputs'.
    The options and the dictionary fingerprint a model keeps beside its weights are not summed
    with them."""
    save, figures = epochs[kind]
    first = EPOCHS - AVERAGED + 1
    averaged = tmp_path / "averaged.pt"
    torch.save(average_checkpoints([save / f"checkpoint{e}.pt" for e in range(first, EPOCHS + 1)]), averaged)
    value = figure(kind, data[kind], averaged)
    inputs = [figures[e] for e in SCORED if e >= first]
    assert near(value, inputs) and value not in inputs, (value, inputs)
    if kind == "translation":  # and it translates
        _, output = run("generate", data[kind], *NMT, "--path", averaged, "--gen-subset", "test", "--beam", "2")
        assert len([line for line in output.splitlines() if line.startswith("H-")]) == 20


def test_an_averaged_checkpoint_still_refuses_other_options_and_another_dictionary(data, epochs, tmp_path):
    save, _ = epochs["word"]
    averaged = tmp_path / "averaged.pt"
    torch.save(average_checkpoints([save / f"checkpoint{e}.pt" for e in range(1, EPOCHS + 1)]), averaged)
    code, output = run(
        "eval_lm",
        data["word"],
        *WORD,
        "--cpu",
        "--path",
        averaged,
        "--model-overrides",
        "{'concat_activation': 'linear'}",
        check=False,
    )
    assert code != 0 and "trained with --concat-activation tanh, but the model being built has" in output
    other = tmp_path / "other"
    short_split(other, 5, "test")
    lines = (other / "dict.txt").read_text().splitlines()
    (other / "dict.txt").write_text("\n".join([lines[1], lines[0], *lines[2:]]) + "\n")  # two words swapped
    code, output = run("eval_lm", other, *WORD, "--cpu", "--path", averaged, "--gen-subset", "test", check=False)
    assert code != 0 and "dictionary mismatch" in output


@pytest.mark.parametrize("kind", list(MODELS))
def test_store_ema_trains_and_its_ema_weights_are_read(kind, data, tmp_path):
    """Two epochs with --store-ema: the EMA weights, read as a checkpoint, score near the model's."""
    save = tmp_path / "save"
    run(
        "train",
        data[kind],
        *MODELS[kind],
        *COMMON,
        "--max-epoch",
        2,
        "--store-ema",
        "--ema-decay",
        0.5,
        "--save-dir",
        save,
    )
    last = save / "checkpoint_last.pt"
    state = torch.load(last, map_location="cpu", weights_only=True)
    ema, model = state["extra_state"]["ema"], state["model"]
    assert set(ema) == set(model) and any(not torch.equal(ema[k], model[k]) for k in model)
    value = figure(kind, data[kind], ema_checkpoint(last, tmp_path / "ema.pt"))
    assert near(value, [figure(kind, data[kind], last)]), value


# ------------------------------------------------------------------ --context-window, the recipe, generate


def test_context_window_on_the_sentence_task_gives_fairseqs_language_modeling_figure(data, epochs):
    """fairseq-eval-lm --context-window 5: each sentence after the 5 tokens before it, as fairseq's
    language_modeling task reads its sentences (--sample-break-mode eos) with the same window."""
    save, _ = epochs["word"]
    checkpoint = save / f"checkpoint{EPOCHS}.pt"
    common = [data["word"], "--user-dir", "alm_plugin", "--cpu", "--path", checkpoint, "--gen-subset", "test"]
    ours = eval_lm_result(run("eval_lm", *common, "--task", "sentence_language_modeling", "--context-window", 5)[1])
    fairseqs = eval_lm_result(
        run(
            "eval_lm",
            *common,
            "--task",
            "language_modeling",
            "--sample-break-mode",
            "eos",
            "--tokens-per-sample",
            1024,
            "--context-window",
            5,
        )[1]
    )
    alone = eval_lm_result(run("eval_lm", *common, "--task", "sentence_language_modeling")[1])
    assert ours == fairseqs and ours != alone, (ours, fairseqs, alone)
    # the stream tasks carry their state instead: refused in one line
    save, _ = epochs["char"]
    code, output = run(
        "eval_lm",
        data["char"],
        *CHAR,
        "--cpu",
        "--batch-size",
        1,
        "--path",
        save / "checkpoint_last.pt",
        "--context-window",
        5,
        check=False,
    )
    assert code != 0 and "--context-window does not apply" in output.strip().splitlines()[-1]


RECIPE = [  # fairseq's examples/language_model recipe (transformer_lm), on a CPU, a few updates
    "--share-decoder-input-output-embed",
    "--dropout",
    "0.1",
    "--optimizer",
    "adam",
    "--adam-betas",
    "(0.9, 0.98)",
    "--weight-decay",
    "0.01",
    "--clip-norm",
    "0.0",
    "--lr",
    "0.0005",
    "--lr-scheduler",
    "inverse_sqrt",
    "--warmup-updates",
    "4000",
    "--warmup-init-lr",
    "1e-07",
    "--tokens-per-sample",
    "64",
    "--sample-break-mode",
    "none",
    "--max-tokens",
    "256",
    "--update-freq",
    "2",
    "--max-update",
    "2",
]


@pytest.mark.parametrize("task", ["language_modeling", "sentence_language_modeling"])
def test_the_lm_recipes_flags_train_our_models(task, data, tmp_path):
    small = ["--embed-dim", "16", "--hidden-size", "16", "--num-layers", "1"]
    for arch in ("attentive_lm", "alm_lstm"):
        run(
            "train",
            data["word"],
            "--user-dir",
            "alm_plugin",
            "--task",
            task,
            "--arch",
            arch,
            *small,
            *RECIPE,
            *COMMON,
            "--save-dir",
            tmp_path / arch,
        )


def test_the_recipes_shared_embedding_flag_trains_our_translation_model(data, tmp_path):
    """fairseq's translation recipes pass --share-decoder-input-output-embed as well."""
    options = [o for o in MODELS["translation"] if o not in ("--optimizer", "adam", "--lr", "0.01")]
    run(
        "train",
        data["translation"],
        *options,
        "--share-decoder-input-output-embed",
        "--optimizer",
        "adam",
        "--lr",
        "0.001",
        "--max-update",
        "1",
        *COMMON,
        "--save-dir",
        tmp_path / "nmt",
    )


def test_generate_on_the_document_task_is_refused_in_one_line(tiny_lstm_stream):
    checkpoint, data = tiny_lstm_stream
    code, output = run(
        "generate",
        data,
        "--user-dir",
        "alm_plugin",
        "--task",
        "document_language_modeling",
        "--cpu",
        "--num-workers",
        "0",
        "--path",
        checkpoint,
        "--gen-subset",
        "test",
        "--batch-size",
        "4",
        check=False,
    )
    last = output.strip().splitlines()[-1]
    assert code == 1 and last.startswith(
        "fairseq-generate: error: fairseq-generate reads a split of --task "
        "document_language_modeling as chunks of parallel streams"
    ), last
    assert "--task sentence_language_modeling" in last and not re.search(r"^(H|S)-", output, re.M)
