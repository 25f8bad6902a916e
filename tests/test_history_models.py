"""Behaviour of the attentive LM and AMSRN decoders: causality, incremental decoding,
padding, memory layout."""

import pytest
import torch
import torch.nn.functional as F
from conftest import random_tokens

from alm_plugin.models.amsrn import AMSRNConfig, AMSRNDecoder
from alm_plugin.models.attentive_lm import AttentiveLMConfig, AttentiveLMDecoder
from alm_plugin.models.lstm_lm import LSTMDecoder
from alm_plugin.models.pointer_sentinel_lm import PointerSentinelConfig, PointerSentinelDecoder
from alm_plugin.modules.history_attention import INITIAL_SLOT, CausalHistoryAttention, CombinedScore
from alm_plugin.modules.history_lstm_decoder import RecurrentLMConfig

VARIANTS = [
    dict(attention_score="single"),
    dict(attention_score="combined"),
    dict(attention_score="combined", attention_sentinel=True),
    dict(attention_score="single", memory_window=3),
    dict(attention_score="single", concat_activation="linear"),
    dict(attention_score="combined", memory_window=2, attention_sentinel=True),
    dict(memory_selection="independent"),
    dict(memory_selection="tied"),
    dict(memory_selection="complementary"),
    dict(memory_selection="none"),
    dict(memory_selection="tied", memory_window=3),
    # the adaptive softmax (head: ids 0-5; tails 6-9, 10-14), tied and untied, on every decoder kind
    dict(attention_score="single", adaptive_softmax_cutoff="6,10"),
    dict(memory_selection="tied", adaptive_softmax_cutoff="6,10", adaptive_softmax_untied=True),
    dict(plain_lstm=True, adaptive_softmax_cutoff="6,10"),
    dict(pointer_window=4, adaptive_softmax_cutoff="6,10"),
    dict(pointer_window=4),  # pointer_sentinel_lm: a pointer over the last 4 outputs and a sentinel
    dict(plain_lstm=True),  # alm_lstm, the baseline: the same body without attention
]


def make_decoder(dictionary, device="cpu", **overrides):
    if overrides.pop("plain_lstm", False):
        config, decoder_cls, overrides = RecurrentLMConfig, LSTMDecoder, {"embed_dim": 12, **overrides}
    elif "pointer_window" in overrides:  # the softmax reads h_t itself: embed_dim = hidden_size
        config, decoder_cls, overrides = PointerSentinelConfig, PointerSentinelDecoder, {"embed_dim": 12, **overrides}
    else:
        config, decoder_cls = (
            (AMSRNConfig, AMSRNDecoder) if "memory_selection" in overrides else (AttentiveLMConfig, AttentiveLMDecoder)
        )
    cfg = config(**{"embed_dim": 16, "hidden_size": 12, "num_layers": 2, "dropout": 0.0, **overrides})
    decoder = decoder_cls(cfg, dictionary)
    for p in decoder.parameters():  # the paper's tiny init makes attention near-uniform: sharpen it
        torch.nn.init.normal_(p, std=0.5)
    return decoder.to(device).eval()


def log_probs(decoder, tokens):
    return decoder.get_normalized_probs(decoder(tokens), log_probs=True)


@pytest.mark.parametrize("variant", VARIANTS)
def test_no_peeking_at_future_tokens(dictionary, variant, device):
    decoder = make_decoder(dictionary, device, **variant)
    tokens = random_tokens(dictionary, 2, 9).to(device)
    for t in range(9):
        changed = tokens.clone()
        changed[:, t:] = random_tokens(dictionary, 2, 9 - t).to(device)
        changed[:, t] = (tokens[:, t] - dictionary.nspecial + 1) % (
            len(dictionary) - dictionary.nspecial
        ) + dictionary.nspecial
        before, after = log_probs(decoder, tokens), log_probs(decoder, changed)
        torch.testing.assert_close(before[:, :t], after[:, :t], rtol=0, atol=1e-6)
        assert not torch.allclose(before[:, t], after[:, t])  # the changed input does matter


@pytest.mark.parametrize("variant", VARIANTS)
def test_incremental_equals_full_forward(dictionary, variant, device):
    decoder = make_decoder(dictionary, device, **variant)
    tokens = random_tokens(dictionary, 3, 10).to(device)
    full_output = decoder(tokens)
    full, full_extra = decoder.get_normalized_probs(full_output, log_probs=True), full_output[1]
    state, steps = {}, []
    for t in range(tokens.size(1)):
        out, extra = decoder(tokens[:, : t + 1], incremental_state=state)
        steps.append(decoder.get_normalized_probs((out, extra), log_probs=True))
        if decoder.attention is None:
            assert extra["history_attn"] == [None] and full_extra["history_attn"] == [None]
            continue
        # the step's weights are the full forward's row, restricted to the remembered slots
        row = full_extra["history_attn"][0][:, t]
        offset = 1 if decoder.attention.initial_slot else 0
        slot_times = torch.arange(row.size(-1), device=device) + 1 - offset
        if offset:
            slot_times[0] = INITIAL_SLOT
        remembered = decoder.attention._allowed(torch.tensor([t + 1], device=device), slot_times)[0]
        torch.testing.assert_close(extra["history_attn"][0][:, 0], row[:, remembered], atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("variant", [VARIANTS[1], VARIANTS[5], VARIANTS[-2], VARIANTS[-1]])
def test_reordered_incremental_state_follows_beams(dictionary, variant, device):
    decoder = make_decoder(dictionary, device, **variant)
    tokens = random_tokens(dictionary, 3, 6).to(device)
    state = {}
    for t in range(4):
        decoder(tokens[:, : t + 1], incremental_state=state)
    order = torch.tensor([2, 0, 0], device=device)
    decoder.reorder_incremental_state(state, order)
    reordered = tokens[order]
    step = decoder.get_normalized_probs(decoder(reordered[:, :5], incremental_state=state), log_probs=True)
    torch.testing.assert_close(step[:, -1], log_probs(decoder, reordered[:, :5])[:, -1], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("variant", VARIANTS[:3] + VARIANTS[5:9] + VARIANTS[-2:])
def test_sentence_scores_the_same_alone_and_in_a_padded_batch(dictionary, variant, device):
    decoder = make_decoder(dictionary, device, **variant)
    short, long = random_tokens(dictionary, 1, 4).to(device), random_tokens(dictionary, 1, 9).to(device)
    batch = torch.full((2, 9), dictionary.pad(), device=device)
    batch[0, :4], batch[1] = short[0], long[0]
    alone = log_probs(decoder, short)
    padded = log_probs(decoder, batch)
    torch.testing.assert_close(padded[0, :4], alone[0], atol=1e-5, rtol=1e-5)
    assert torch.isfinite(padded).all()


def test_first_step_has_empty_memory_zero_context_and_finite_gradients(dictionary):
    decoder = make_decoder(dictionary, attention_score="combined")
    decoder.train()
    tokens = random_tokens(dictionary, 2, 5)
    out, extra = decoder(tokens)
    weights = extra["history_attn"][0]
    assert weights[:, 0].abs().sum() == 0  # t = 1 attends to nothing
    torch.testing.assert_close(weights[:, 1:].sum(-1), torch.ones(2, 4))
    assert weights.triu().abs().sum() == 0  # never h_t itself, never the future
    out.logsumexp(-1).sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in decoder.parameters() if p.grad is not None)


@pytest.mark.parametrize("activation", ["tanh", "linear"])
def test_concat_layer_is_eq7_or_the_released_codes_linear_layer(dictionary, activation):
    decoder = make_decoder(dictionary, attention_score="single", concat_activation=activation)
    tokens = random_tokens(dictionary, 2, 6)
    features, extra = decoder.extract_features(tokens)
    states, _ = decoder.lstm(decoder.embed_tokens(tokens))
    context = torch.bmm(extra["history_attn"][0], states)  # c_t = sum_i a_i h_i (Eq. 3)
    combined = decoder.concat(torch.cat([states, context], dim=-1))
    torch.testing.assert_close(features, torch.tanh(combined) if activation == "tanh" else combined)
    assert (features.abs().max() > 1) == (activation == "linear")


def test_a_config_saved_before_the_newer_options_builds_the_model_it_was_trained_as(dictionary):
    """A checkpoint's config from before --concat-activation and --combination-bias existed:
    the missing option takes its default (tanh), or the value such checkpoints were trained
    with where the default has changed since (the combination layer's bias)."""
    from dataclasses import asdict

    from omegaconf import OmegaConf

    from alm_plugin.models.attentive_lm import AttentiveLanguageModel

    cfg = asdict(AttentiveLMConfig(embed_dim=16, hidden_size=12, num_layers=2, dropout=0.0))
    del cfg["concat_activation"], cfg["combination_bias"]
    completed = AttentiveLanguageModel.complete_config(OmegaConf.create(cfg))
    assert completed.concat_activation == "tanh" and completed.combination_bias is True
    old = AttentiveLMDecoder(completed, dictionary).eval()
    assert old.concat.bias is not None
    trained = make_decoder(dictionary, attention_score="single", combination_bias=True)
    old.load_state_dict(trained.state_dict())
    tokens = random_tokens(dictionary, 2, 5)
    torch.testing.assert_close(old(tokens)[0], trained(tokens)[0])
    assert AttentiveLMDecoder(AttentiveLMConfig(), dictionary).concat.bias is None  # today's default


def test_window_limits_the_memory(dictionary):
    decoder = make_decoder(dictionary, attention_score="single", memory_window=3)
    weights = decoder(random_tokens(dictionary, 1, 8))[1]["history_attn"][0][0]
    nonzero = (weights > 0).sum(-1)
    assert nonzero.tolist() == [0, 1, 2, 3, 3, 3, 3, 3]
    assert weights[7, :4].sum() == 0 and weights[7, 4:7].sum() > 0.99


def score_calls(attention):
    """Counts the calls of ``attention``'s score (one per query chunk)."""
    calls, original = [], attention.score.forward
    attention.score.forward = lambda *a: calls.append(1) or original(*a)
    return calls


def test_chunked_combined_score_equals_one_pass():
    torch.manual_seed(1)
    states = torch.randn(2, 23, 8)
    one_pass = CausalHistoryAttention(CombinedScore(8, 6), chunk_elements=10**9)
    chunked = CausalHistoryAttention(one_pass.score, chunk_elements=2 * 23 * 6 * 3)  # 3 queries a chunk
    calls = score_calls(chunked)
    with torch.no_grad():
        for a, b in zip(one_pass(states), chunked(states)):
            torch.testing.assert_close(a, b)
    assert len(calls) == 1 + 8  # the score is shared: one pass, then 8 chunks of 3 queries


def test_combined_score_goes_in_one_pass_when_a_graph_is_built():
    """Autograd keeps every chunk's tanh for the backward: with a graph, chunks would bound no
    memory, only multiply the kernels (7 rounds a step at batch 128). The same figures
    and gradients as in chunks."""
    torch.manual_seed(2)
    states = torch.randn(2, 23, 8, requires_grad=True)
    attention = CausalHistoryAttention(CombinedScore(8, 6), chunk_elements=2 * 23 * 6 * 3)
    calls = score_calls(attention)
    context, _ = attention(states)
    assert len(calls) == 1
    context.square().sum().backward()
    one_pass_grads = [states.grad.clone()] + [p.grad.clone() for p in attention.parameters()]
    with torch.no_grad():
        chunked_context, _ = attention(states)
    assert len(calls) == 1 + 8
    torch.testing.assert_close(context.detach(), chunked_context)
    # the gradients of the chunked computation (checkpointed chunk by chunk by hand)
    states.grad = None
    attention.zero_grad()
    pieces = []
    for start in range(0, 23, 3):
        piece, _ = attention(states[:, : start + 3])
        pieces.append(piece[:, start : start + 3])
    torch.cat(pieces, dim=1).square().sum().backward()
    for a, b in zip(one_pass_grads, [states.grad] + [p.grad for p in attention.parameters()]):
        torch.testing.assert_close(a, b)


def test_combined_training_step_makes_at_most_twice_the_single_scores_aten_calls(dictionary):
    """What the GPU pays per kernel launch, counted on the CPU: a training step of the combined
    score against the single one, at a budget that would cut the queries into many chunks."""
    from torch.profiler import ProfilerActivity, profile

    tokens = random_tokens(dictionary, 16, 36)
    counts = {}
    for score in ("single", "combined"):
        decoder = AttentiveLMDecoder(AttentiveLMConfig(embed_dim=8, hidden_size=8, attention_score=score), dictionary)
        decoder.attention.chunk_elements = 16 * 35 * 8 * 4  # 4 queries a chunk without a graph
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            logits = decoder(tokens[:, :-1])[0]
            F.cross_entropy(logits.reshape(-1, logits.size(-1)), tokens[:, 1:].reshape(-1)).backward()
        counts[score] = sum(1 for e in prof.events() if e.name.startswith("aten::"))
    assert counts["combined"] <= 2 * counts["single"], counts


def test_paper_initialisation(dictionary):
    decoder = AttentiveLMDecoder(AttentiveLMConfig(embed_dim=16, hidden_size=16), dictionary)
    for name, p in decoder.named_parameters():
        if "bias" in name:
            assert p.abs().max() == 0, name
        else:
            assert p.abs().max() <= 0.05, name
    # tied: the output layer reuses the embedding matrix, there is no second V x d matrix
    vocab_sized = [n for n, p in decoder.named_parameters() if p.dim() == 2 and p.size(0) == len(dictionary)]
    assert vocab_sized == ["embed_tokens.weight"]
    features = torch.randn(1, 16)
    torch.testing.assert_close(decoder.output_layer(features), features @ decoder.embed_tokens.weight.t())


def test_combined_score_intermediate_stays_in_budget_on_512_token_blocks():
    """No (B, T, T, d) tensor: each chunk's tanh input is at most chunk_elements."""
    score = CombinedScore(32, 32)
    attention = CausalHistoryAttention(score, chunk_elements=2**20)
    sizes = []
    original = score.forward
    score.forward = lambda q, k, *a: sizes.append(q.size(0) * q.size(1) * k.size(1) * k.size(2)) or original(q, k, *a)
    with torch.no_grad():
        context, weights = attention(torch.randn(2, 512, 32))
    full = 2 * 512 * 512 * 32
    assert len(sizes) > 1 and max(sizes) <= 2**20 < full
    assert torch.isfinite(context).all() and weights.shape == (2, 512, 512)


def test_amsrn_memory_holds_h0_and_the_current_state(dictionary):
    decoder = make_decoder(dictionary, memory_selection="tied")
    weights = decoder(random_tokens(dictionary, 2, 6))[1]["history_attn"][0]
    assert weights.shape == (2, 6, 7)  # slots h_0 .. h_6
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 6))
    assert (weights[:, :, 0] > 0).all()  # h_0 always readable
    assert (weights.diagonal(offset=1, dim1=1, dim2=2) > 0).all()  # h_t itself is remembered
    assert weights.triu(diagonal=2).abs().sum() == 0  # never h_{t+1} and later


@pytest.mark.parametrize("selection", ["independent", "tied", "complementary", "none"])
def test_amsrn_selection_matches_the_formulas(dictionary, selection):
    """A slow per-step reference of the reconstructed equations against the batched decoder."""
    decoder = make_decoder(dictionary, memory_selection=selection, num_layers=1)
    tokens = random_tokens(dictionary, 1, 5)
    with torch.no_grad():
        logits = decoder(tokens)[0][0]
        states, _ = decoder.lstm(decoder.embed_tokens(tokens))
        h = states[0]
        memory = torch.cat([torch.zeros(1, 12), h])  # [h_0, h_1, ..., h_T]
        for t in range(5):
            gates = torch.sigmoid(decoder.gates(h[t])) if decoder.gates is not None else None
            w_h = {
                "independent": gates[:12] if gates is not None else None,
                "tied": gates,
                "complementary": gates,
                "none": torch.ones(12),
            }[selection]
            w_c = {
                "independent": gates[12:] if gates is not None else None,
                "tied": gates,
                "complementary": 1 - gates if gates is not None else None,
                "none": torch.ones(12),
            }[selection]
            k = decoder.key(h[t])
            e = torch.stack([k @ (w_h * memory[i]) for i in range(t + 2)])
            alpha = torch.softmax(e, 0)
            r = sum(alpha[i] * (w_c * memory[i]) for i in range(t + 2))
            y = decoder.output(torch.cat([h[t], r])) @ decoder.embed_tokens.weight.t() + decoder.output_bias
            torch.testing.assert_close(logits[t], y, atol=1e-5, rtol=1e-5)
