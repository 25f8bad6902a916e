"""The history attention never reads a pad: zero weight on every pad slot, for every query (pad
queries included), and the same scores with and without padding, for every history score
(single, combined, dot/AMSRN, the pointer's) with and without the initial (sentinel / h_0) slot
and a window (a dropped padding mask changes only padded positions, which nothing else notices)."""

import pytest
import torch
from conftest import random_tokens
from fairseq.data.data_utils import collate_tokens

from alm_plugin.models.amsrn import AMSRNConfig, AMSRNDecoder
from alm_plugin.models.attentive_lm import AttentiveLMConfig, AttentiveLMDecoder
from alm_plugin.models.pointer_sentinel_lm import PointerSentinelConfig, PointerSentinelDecoder
from alm_plugin.modules.history_attention import CausalHistoryAttention, CombinedScore, DotScore, SingleScore

D = 6
SCORES = {
    "single": lambda: SingleScore(D, 5),
    "combined": lambda: CombinedScore(D, 5),
    "dot": DotScore,  # AMSRN's and the pointer's
}
# (score, include_current, initial_slot): the attentive LM (with and without the sentinel slot),
# AMSRN / the pointer sentinel (the memory runs to h_t, after h_0 or the sentinel)
LAYOUTS = [(score, current, initial) for score in SCORES for current in (False, True) for initial in (False, True)]


def attention(score, current, initial, window, chunk_elements=2**24):
    return CausalHistoryAttention(
        SCORES[score](), include_current=current, initial_slot=initial, window=window, chunk_elements=chunk_elements
    ).eval()


def pad_slots(weights, pads, initial):
    """The weights ``(B, T, S)`` on the slots of the pads ``(B, T)`` (after the initial slot)."""
    slots = weights[:, :, 1:] if initial else weights
    return slots.masked_select(pads[:, None, :].expand_as(slots))


@pytest.mark.parametrize("window", [0, 3])
@pytest.mark.parametrize("score, current, initial", LAYOUTS)
def test_left_padding_is_never_read(score, current, initial, window):
    """Pads before the words (left padding): the words' contexts and weights are those of the
    sentence alone; the pad slots get no weight from any query."""
    torch.manual_seed(0)
    module = attention(score, current, initial, window, chunk_elements=40)  # several query chunks
    n_pad, total = 3, 7
    states = torch.randn(2, total, D)
    pads = torch.zeros(2, total, dtype=torch.bool)
    pads[1, :n_pad] = True
    states[1, :n_pad] = 50 * torch.randn(n_pad, D)  # loud garbage: any weight on it shows
    queries = torch.randn(2, total, D) if score == "dot" else None
    init = torch.randn(2, D) if initial else None
    with torch.no_grad():  # query chunks are taken only where no graph is built
        context, weights = module(states, pads, queries, init)
        alone_context, alone_weights = module(
            states[1:, n_pad:],
            None,
            None if queries is None else queries[1:, n_pad:],
            None if init is None else init[1:],
        )
    assert torch.count_nonzero(pad_slots(weights, pads, initial)) == 0
    torch.testing.assert_close(context[1, n_pad:], alone_context[0], rtol=1e-5, atol=1e-6)
    first = 1 if initial else 0  # the slots: [initial;] pads; words
    real = torch.cat([weights[1:, n_pad:, :first], weights[1:, n_pad:, first + n_pad :]], dim=-1)
    torch.testing.assert_close(real, alone_weights, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("window", [0, 3])
@pytest.mark.parametrize("score, current, initial", LAYOUTS)
def test_right_padding_gets_no_weight_even_from_pad_queries(score, current, initial, window):
    """fairseq's right-padded batches: a word never sees a later pad anyway (causality), so only
    the pad queries show the mask -- their weights on pad slots must be 0 too."""
    torch.manual_seed(1)
    module = attention(score, current, initial, window)
    states = torch.randn(2, 8, D)
    pads = torch.zeros(2, 8, dtype=torch.bool)
    pads[0, 5:] = True
    queries = torch.randn(2, 8, D) if score == "dot" else None
    context, weights = module(states, pads, queries)
    assert torch.count_nonzero(pad_slots(weights, pads, initial)) == 0
    sums = weights.sum(-1)
    readable = sums > 0
    torch.testing.assert_close(sums[readable], torch.ones_like(sums[readable]))
    alone_context, _ = module(states[:1, :5], None, None if queries is None else queries[:1, :5])
    torch.testing.assert_close(context[0, :5], alone_context[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("window", [0, 4])
@pytest.mark.parametrize("score, current, initial", LAYOUTS)
def test_carried_pads_are_never_read(score, current, initial, window):
    """States carried from a stream's earlier chunk that are pads (the stream's start) get no
    weight; the result is that of the carried memory without them."""
    torch.manual_seed(2)
    module = attention(score, current, initial, window)
    states, past = torch.randn(1, 5, D), torch.randn(1, 4, D)
    past_pads = torch.tensor([[True, True, False, False]])
    past = torch.where(past_pads[..., None], 50 * torch.randn_like(past), past)
    queries = torch.randn(1, 5, D) if score == "dot" else None
    context, weights = module(states, None, queries, None, past, past_pads)
    first_past = 1 if initial else 0
    assert torch.count_nonzero(weights[..., first_past : first_past + 2]) == 0
    trimmed, _ = module(states, None, queries, None, past[:, 2:], past_pads[:, 2:])
    torch.testing.assert_close(context, trimmed, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------------------- the decoders

DECODERS = {
    "attentive-single": (AttentiveLMConfig, AttentiveLMDecoder, dict(attention_score="single")),
    "attentive-combined": (AttentiveLMConfig, AttentiveLMDecoder, dict(attention_score="combined")),
    "attentive-sentinel": (
        AttentiveLMConfig,
        AttentiveLMDecoder,
        dict(attention_score="combined", attention_sentinel=True),
    ),
    "attentive-window": (AttentiveLMConfig, AttentiveLMDecoder, dict(attention_score="single", memory_window=2)),
    "amsrn": (AMSRNConfig, AMSRNDecoder, dict(memory_selection="independent")),
    "amsrn-window": (AMSRNConfig, AMSRNDecoder, dict(memory_selection="tied", memory_window=2)),
    "pointer-sentinel": (PointerSentinelConfig, PointerSentinelDecoder, dict(pointer_window=4)),
}


@pytest.mark.parametrize("name", sorted(DECODERS))
def test_a_padded_batch_scores_as_each_sentence_alone(name, dictionary):
    """fairseq's LM batches pad on the right: every word scores as in its sentence alone, and
    no query of the batch (pads included) gives a pad slot any weight."""
    config, decoder_class, options = DECODERS[name]
    cfg = config(**{"embed_dim": 12, "hidden_size": 12, "num_layers": 1, "dropout": 0.0, **options})
    decoder = decoder_class(cfg, dictionary).eval()
    for p in decoder.parameters():
        torch.nn.init.normal_(p, std=0.5)
    generator = torch.Generator().manual_seed(0)
    sentences = [random_tokens(dictionary, 1, n, generator)[0] for n in (9, 4, 6)]
    batch = collate_tokens(sentences, dictionary.pad(), left_pad=False)
    with torch.no_grad():
        net_output = decoder(batch)
        logits, extra = decoder.get_normalized_probs(net_output, log_probs=True), net_output[1]
        weights = extra["history_attn"][0]
        pads = batch.eq(dictionary.pad())
        initial = weights.size(-1) == batch.size(1) + 1
        assert torch.count_nonzero(pad_slots(weights, pads, initial)) == 0
        for row, sentence in enumerate(sentences):
            alone = decoder.get_normalized_probs(decoder(sentence[None]), log_probs=True)
            torch.testing.assert_close(logits[row, : len(sentence)], alone[0], rtol=1e-5, atol=1e-5)
