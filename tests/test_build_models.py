"""Every architecture of the plugin builds through both of fairseq's paths: ``task.build_model(args)``
with the command line parsed by ``options.parse_args_and_arch`` (a Namespace; the named sizes
applied), and ``Model.build_model(TheConfig(), task)`` from Python (a dataclass). The built model
has the sizes asked for and scores a batch (either path can break alone, e.g. with a TypeError)."""

import dataclasses

import pytest
import torch
from fairseq import options, tasks
from fairseq.models import ARCH_MODEL_NAME_REGISTRY, ARCH_MODEL_REGISTRY, MODEL_DATACLASS_REGISTRY

from alm_plugin.models.history_translation import HistoryTranslationModel
from alm_plugin.models.open_vocabulary_lm import OpenVocabularyLanguageModel

PLUGIN_ARCHES = sorted(
    arch for arch, model in ARCH_MODEL_REGISTRY.items() if model.__module__.startswith("alm_plugin.")
)
WORDS = "the cat sat on a mat and dog ran far away".split()


def test_the_list_covers_every_model_family():
    models = {ARCH_MODEL_NAME_REGISTRY[arch] for arch in PLUGIN_ARCHES}
    assert {
        "attentive_lm",
        "amsrn",
        "alm_lstm",
        "pointer_sentinel_lm",
        "char_cache_lm",
        "char_lstm_lm",
        "attentive_nmt",
    } <= models
    assert {
        "attentive_lm_ptb",
        "amsrn_small",
        "alm_lstm_ptb",
        "pointer_sentinel_lm_wikitext2",
        "hclm",
        "amsrn_nmt_small",
    } <= set(PLUGIN_ARCHES)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    """Dictionaries only: building a model reads no split."""
    path = tmp_path_factory.mktemp("dicts")
    for name in ("dict.txt", "dict.de.txt", "dict.en.txt"):
        (path / name).write_text("".join(f"{w} {100 - i}\n" for i, w in enumerate(WORDS)))
    return str(path)


def task_args(arch, data_dir):
    model = ARCH_MODEL_REGISTRY[arch]
    if issubclass(model, HistoryTranslationModel):
        return ["--task", "translation", "-s", "de", "-t", "en"]
    if issubclass(model, OpenVocabularyLanguageModel):
        return ["--task", "open_vocabulary_language_modeling"]
    return ["--task", "sentence_language_modeling"]


def check_scores(model, task):
    """The model has as many output rows as the task's dictionary and scores a batch finitely."""
    model.eval()
    dictionary = task.target_dictionary
    tokens = torch.randint(dictionary.nspecial, len(dictionary), (2, 5))
    with torch.no_grad():
        if isinstance(model, HistoryTranslationModel):
            output = model(tokens, torch.tensor([5, 5]), tokens)
        elif isinstance(model, OpenVocabularyLanguageModel):
            output = model(tokens, target_tokens=tokens)
        else:
            output = model(tokens)
        log_probs = model.get_normalized_probs(output, log_probs=True)
    assert log_probs.shape == (2, 5, len(dictionary))
    assert torch.isfinite(log_probs).all()


@pytest.mark.parametrize("arch", PLUGIN_ARCHES)
def test_task_build_model_with_parsed_args(arch, data_dir):
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(
        parser, [data_dir, "--user-dir", "alm_plugin", "--arch", arch, *task_args(arch, data_dir)]
    )
    task = tasks.setup_task(args)
    model = task.build_model(args)
    assert isinstance(model, ARCH_MODEL_REGISTRY[arch])
    # the named architecture's sizes (a base name: the config's defaults) are the model's
    defaults = MODEL_DATACLASS_REGISTRY[ARCH_MODEL_NAME_REGISTRY[arch]]()
    expected = {
        name: getattr(args, name, getattr(defaults, name, None)) for name in ("hidden_size", "num_layers", "embed_dim")
    }
    decoder = model.decoder
    lstm = getattr(decoder, "lstm", None) or getattr(decoder, "context_lstm")
    assert lstm.hidden_size == expected["hidden_size"]
    if hasattr(decoder, "embed_tokens"):  # the word models
        assert (lstm.num_layers, decoder.embed_tokens.embedding_dim) == (expected["num_layers"], expected["embed_dim"])
    check_scores(model, task)


@pytest.mark.parametrize("arch", ["attentive_lm_ptb", "amsrn_ptb", "alm_lstm_ptb", "pointer_sentinel_lm_ptb"])
def test_the_command_line_beats_the_named_architecture(arch, data_dir):
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(
        parser,
        [
            data_dir,
            "--user-dir",
            "alm_plugin",
            "--arch",
            arch,
            "--task",
            "sentence_language_modeling",
            "--embed-dim",
            "24",
            "--hidden-size",
            "24",
            "--num-layers",
            "1",
        ],
    )
    model = tasks.setup_task(args).build_model(args)
    assert (model.decoder.lstm.hidden_size, model.decoder.lstm.num_layers) == (24, 1)
    assert model.decoder.embed_tokens.embedding_dim == 24


@pytest.mark.parametrize("model_name", sorted({ARCH_MODEL_NAME_REGISTRY[arch] for arch in PLUGIN_ARCHES}))
def test_model_build_model_with_a_dataclass_config(model_name, data_dir):
    model_class = ARCH_MODEL_REGISTRY[model_name]
    config_class = MODEL_DATACLASS_REGISTRY[model_name]
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(
        parser, [data_dir, "--user-dir", "alm_plugin", "--arch", model_name, *task_args(model_name, data_dir)]
    )
    task = tasks.setup_task(args)
    small = {
        name: 16
        for name in ("embed_dim", "hidden_size", "char_embed_dim", "encoder_embed_dim", "encoder_hidden_size")
        if name in config_class.__dataclass_fields__
    }
    for config in (config_class(), config_class(**small)):
        model = model_class.build_model(config, task)
        assert isinstance(model, model_class)
        lstm = getattr(model.decoder, "lstm", None) or getattr(model.decoder, "context_lstm")
        assert lstm.hidden_size == config.hidden_size
        check_scores(model, task)
    # the options recorded with the model are the config's
    recorded = model.options_record()
    assert recorded["hidden_size"] == 16
    assert dataclasses.is_dataclass(config)


@pytest.mark.parametrize("model_name", ["alm_lstm", "attentive_lm", "amsrn", "pointer_sentinel_lm", "attentive_nmt"])
def test_the_adaptive_softmax_builds_through_both_paths(model_name, data_dir):
    """--adaptive-softmax-cutoff on every word model and the translation decoders, from the command
    line (a Namespace) and from a dataclass config: the distribution has every word and sums to 1."""
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(
        parser,
        [
            data_dir,
            "--user-dir",
            "alm_plugin",
            "--arch",
            model_name,
            *task_args(model_name, data_dir),
            "--embed-dim",
            "16",
            "--hidden-size",
            "16",
            "--adaptive-softmax-cutoff",
            "6,10",
        ],
    )
    task = tasks.setup_task(args)
    config = MODEL_DATACLASS_REGISTRY[model_name](embed_dim=16, hidden_size=16, adaptive_softmax_cutoff="6,10")
    for model in (task.build_model(args), ARCH_MODEL_REGISTRY[model_name].build_model(config, task)):
        assert model.decoder.adaptive_softmax.cutoff == [6, 10]
        check_scores(model, task)
        tokens = torch.randint(4, len(task.target_dictionary), (2, 5))
        output = model(tokens, torch.tensor([5, 5]), tokens) if model_name == "attentive_nmt" else model(tokens)
        total = model.get_normalized_probs(output, log_probs=False).sum(-1)
        torch.testing.assert_close(total, torch.ones(2, 5), rtol=0, atol=1e-5)


@pytest.mark.parametrize("corpus", ["ptb", "ptb-paper"])
def test_the_size_matched_lstm_has_the_concat_layers_parameter_count(corpus, tmp_path):
    """``lstm-matched`` (benchmarks/rows.py) is the LSTM widened to the layer row's parameters, within 1%,
    built with a dictionary of PTB's 10,000 words and the row's own arguments."""
    from benchmarks.rows import CORPORA

    (tmp_path / "dict.txt").write_text("".join(f"w{i} {10000 - i}\n" for i in range(10000)))
    counts = {}
    for name in ("lstm-matched", "single-zero-context", "lstm"):
        args = options.parse_args_and_arch(
            options.get_training_parser(),
            [str(tmp_path), "--user-dir", "alm_plugin", "--task", "sentence_language_modeling"]
            + [a for a in CORPORA[corpus].rows[name].args if a != "--sentence-avg"],
        )
        model = tasks.setup_task(args).build_model(args)
        counts[name] = sum(p.numel() for p in model.parameters())
    assert abs(counts["lstm-matched"] / counts["single-zero-context"] - 1) < 0.01
    assert counts["single-zero-context"] / counts["lstm"] - 1 > 0.02  # the gap the width closes (3% at 2 x 200)
