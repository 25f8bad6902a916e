"""The dropout layout (docs/models.md, "Dropout"): in training every tensor is dropped once. The
vector the output layer reads (h'_t; h_t itself for alm_lstm and the pointer's p_vocab) has a
share p of zeros, not 1 - (1 - p)^2, and the attention (memory and queries) reads h_t as the LSTM
gives it unless --attend-dropped-states gives it a dropout of its own."""

from types import SimpleNamespace

import pytest
import torch
from conftest import random_tokens

from alm_plugin.models.amsrn import AMSRNConfig, AMSRNDecoder
from alm_plugin.models.attentive_lm import AttentiveLMConfig, AttentiveLMDecoder
from alm_plugin.models.history_translation import HistoryTranslationConfig, HistoryTranslationModel
from alm_plugin.models.lstm_lm import LSTMDecoder
from alm_plugin.models.pointer_sentinel_lm import PointerSentinelConfig, PointerSentinelDecoder
from alm_plugin.modules.history_lstm_decoder import RecurrentLMConfig

P = 0.5
BSZ, LENGTH, HIDDEN = 16, 30, 64  # ~31k dropped units: the share of zeros within ~0.01 of p
LANGUAGE_MODELS = {
    "alm_lstm": (RecurrentLMConfig, LSTMDecoder, {}),
    "pointer_sentinel_lm": (PointerSentinelConfig, PointerSentinelDecoder, {"pointer_window": 8}),
    "attentive_lm single": (AttentiveLMConfig, AttentiveLMDecoder, {"attention_score": "single"}),
    "attentive_lm combined": (AttentiveLMConfig, AttentiveLMDecoder, {"attention_score": "combined"}),
    "attentive_lm context zeroed": (AttentiveLMConfig, AttentiveLMDecoder, {"zero_context": True}),
    "amsrn": (AMSRNConfig, AMSRNDecoder, {"memory_selection": "tied"}),
}
TRANSLATION = {"attentive_nmt": {"decoder_type": "attentive"}, "amsrn_nmt": {"decoder_type": "amsrn"}}


def language_model(dictionary, name, **overrides):
    config, decoder_class, options = LANGUAGE_MODELS[name]
    cfg = config(**{"embed_dim": HIDDEN, "hidden_size": HIDDEN, "num_layers": 2, "dropout": P, **options, **overrides})
    return decoder_class(cfg, dictionary), lambda tokens: (tokens,)


def translation_model(dictionary, name, **overrides):
    cfg = HistoryTranslationConfig(
        **{
            "embed_dim": HIDDEN,
            "hidden_size": HIDDEN,
            "num_layers": 2,
            "dropout": P,
            "encoder_embed_dim": 16,
            "encoder_hidden_size": 16,
            **TRANSLATION[name],
            **overrides,
        }
    )
    model = HistoryTranslationModel.build_model(
        cfg, SimpleNamespace(source_dictionary=dictionary, target_dictionary=dictionary)
    )
    source = random_tokens(dictionary, BSZ, 7)
    source[:, -1] = dictionary.eos()
    lengths = torch.full((BSZ,), 7)
    return model.decoder, lambda tokens: (tokens, model.encoder(source, lengths))


def trace(build, dictionary, name, **overrides):
    """One training-mode forward: ``(lstm_output, attention_inputs, features)``, the top LSTM's
    output, what the history attention was handed (states, queries) and what the output layer reads."""
    decoder, inputs = build(dictionary, name, **overrides)
    decoder.train()
    seen = {}
    decoder.lstm.register_forward_hook(lambda module, args, output: seen.__setitem__("lstm", output[0]))
    if decoder.attention is not None:
        decoder.attention.register_forward_hook(
            lambda module, args, output: seen.__setitem__("attention", (args[0], args[2]))
        )
    tokens = random_tokens(dictionary, BSZ, LENGTH)
    _, extra = decoder(*inputs(tokens))
    return seen["lstm"], seen.get("attention"), extra["features"]


def zero_share(tensor):
    return tensor.eq(0).float().mean().item()


CASES = [(language_model, name) for name in LANGUAGE_MODELS] + [(translation_model, name) for name in TRANSLATION]


@pytest.mark.parametrize("build,name", CASES, ids=[name for _, name in CASES])
def test_what_the_output_layer_reads_is_dropped_once(dictionary, build, name):
    lstm_output, attention_inputs, features = trace(build, dictionary, name)
    assert zero_share(lstm_output) == 0  # the LSTM's own output holds no exact zeros
    assert zero_share(features) == pytest.approx(P, abs=0.02)  # twice dropped: 0.75
    if name in ("alm_lstm", "pointer_sentinel_lm"):
        # h_t itself, each kept unit scaled once by 1 / (1 - p)
        kept = features.ne(0)
        torch.testing.assert_close(features[kept], lstm_output[kept] / (1 - P))
    if attention_inputs is not None:  # the memory and the queries: h_t as the LSTM gives it
        states, queries = attention_inputs
        assert torch.equal(states, lstm_output)
        assert queries is None or zero_share(queries) == 0


@pytest.mark.parametrize("name", ["attentive_lm single", "amsrn"])
def test_attend_dropped_states_gives_the_attention_its_own_dropout(dictionary, name):
    lstm_output, (states, _), features = trace(language_model, dictionary, name, attend_dropped_states=True)
    assert zero_share(states) == pytest.approx(P, abs=0.02)
    kept = states.ne(0)
    torch.testing.assert_close(states[kept], lstm_output[kept] / (1 - P))
    assert zero_share(features) == pytest.approx(P, abs=0.02)  # the output path: still once


def test_dropout_plays_no_part_in_scoring(dictionary):
    """Checkpoints trained under the old layout score as before: in eval mode nothing is dropped."""
    decoder, inputs = language_model(dictionary, "attentive_lm single", attend_dropped_states=True)
    plain, _ = language_model(dictionary, "attentive_lm single")
    plain.load_state_dict(decoder.state_dict())
    tokens = random_tokens(dictionary, 4, 12)
    torch.testing.assert_close(decoder.eval()(tokens)[0], plain.eval()(tokens)[0], rtol=0, atol=0)


def test_the_context_zeroed_model_has_the_layer_and_no_attention(dictionary):
    zeroed, _ = language_model(dictionary, "attentive_lm context zeroed")
    attentive, _ = language_model(dictionary, "attentive_lm single")
    assert zeroed.attention is None
    assert zeroed.concat.weight.shape == attentive.concat.weight.shape
    # c_t = 0: the context half of W_c never matters, so the output ignores it
    tokens = random_tokens(dictionary, 3, 10)
    zeroed.eval()
    before = zeroed(tokens)[0]
    with torch.no_grad():
        zeroed.concat.weight[:, HIDDEN:].normal_()
    torch.testing.assert_close(zeroed(tokens)[0], before, rtol=0, atol=0)


def test_forget_gate_bias_starts_the_forget_gates_only(dictionary):
    decoder, _ = language_model(dictionary, "alm_lstm", forget_gate_bias=1.0)
    for layer in range(2):
        bias = getattr(decoder.lstm, f"bias_ih_l{layer}") + getattr(decoder.lstm, f"bias_hh_l{layer}")
        gates = bias.view(4, HIDDEN)  # torch's order: input, forget, cell, output
        assert torch.equal(gates[1], torch.ones(HIDDEN))
        assert not gates[[0, 2, 3]].any()
