"""benchmarks/trainable.py: the parameters a row trains are those that receive a gradient; the context half of
the concat layer under ``--zero-context`` is counted out, and nothing else is.

Builds the dry-run rows' models (2 x 32, the shipped WikiText-2 sample's dictionary); no training."""

import importlib

import pytest


def with_a_dead_weight(build):
    """``build`` with a parameter added whose every path to the loss is multiplied by zero."""
    import torch

    def built(corpus, row):
        task, model = build(corpus, row)
        model.dead = torch.nn.Parameter(torch.ones(3))
        normalized = model.get_normalized_probs

        def shifted(output, log_probs, sample=None):
            zero = torch.zeros(3, dtype=model.dead.dtype)
            return normalized((output[0] + (model.dead * zero).sum(), *output[1:]), log_probs, sample)

        model.get_normalized_probs = shifted
        return task, model

    return built


@pytest.fixture(scope="module")
def counts():
    """The counts of the dry run's ``single-zero-context`` row and of its ``single`` row with a dead weight
    (``with_a_dead_weight``) added."""
    trainable = importlib.import_module("benchmarks.trainable")
    rows = importlib.import_module("benchmarks.rows")
    dry = rows.PTB_PAPER_DRY
    zeroed = trainable.count(dry, dry.rows["single-zero-context"])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(trainable, "build", with_a_dead_weight(trainable.build))
        dead = trainable.count(dry, dry.rows["single"], probes=1)
    return {"single-zero-context": zeroed, "single with a dead weight": dead}


def test_the_zeroed_context_half_of_the_concat_layer_never_trains(counts):
    """W_c is E x 2H; with the context zeroed its H columns that read the context receive no gradient: the row
    trains exactly E x H fewer parameters than it holds, and the row that reads the context trains them all
    (but the dead weight added to it), however small the attention's gradients at initialisation (near uniform
    there)."""
    embed = hidden = 32
    zeroed = counts["single-zero-context"]
    assert zeroed["params"] - zeroed["trainable_params"] == embed * hidden
    single = counts["single with a dead weight"]
    assert single["trainable_params"] == single["params"] - 3


def test_a_weight_on_a_zeroed_input_is_counted_out_and_nothing_beside_it(counts):
    """A parameter whose every path to the loss is multiplied by zero is not counted; every other element of the
    model is."""
    counted = counts["single with a dead weight"]
    assert counted["trainable_params"] == counted["params"] - 3


@pytest.mark.parametrize("arch, silent_symbols", [("char_lstm_lm", 2), ("hclm", 1)])
def test_a_character_model_trains_every_character_the_text_can_hold(arch, silent_symbols):
    """The character models read the targets' spellings: the probe gives every word as a target, so only the
    embedding rows of the symbols no text holds (padding; the char LSTM's start-of-word) are counted out, never a
    character of a rare word."""
    trainable = importlib.import_module("benchmarks.trainable")
    rows = importlib.import_module("benchmarks.rows")
    width = 8
    args = ("--arch", arch, "--char-embed-dim", str(width), "--hidden-size", "16", "--optimizer", "adam")
    corpus = rows.Corpus(
        "chars-dry",
        epochs=1,
        anneal_after=None,
        data_name="wikitext-2-sample",
        open_vocabulary=True,
        streams=2,
        rows={"model": rows.Row("model", args, "characters")},
    )
    counted = trainable.count(corpus, corpus.rows["model"])
    assert counted["params"] - counted["trainable_params"] == silent_symbols * width
