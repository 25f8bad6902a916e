"""The attentive and AMSRN decoders as translation decoders: beam search against a greedy
search done by hand with the full forward, batch independence, incremental decoding."""

from types import SimpleNamespace

import pytest
import torch
from conftest import random_tokens
from fairseq.data import Dictionary
from fairseq.sequence_generator import SequenceGenerator

from alm_plugin.errors import OptionError
from alm_plugin.models.history_translation import HistoryTranslationConfig, HistoryTranslationModel

DECODERS = [
    dict(decoder_type="attentive", attention_score="combined"),
    dict(decoder_type="amsrn", memory_selection="independent"),
]
MAX_LEN = 12


def make_dictionary(words):
    d = Dictionary()
    for word in words:
        d.add_symbol(word)
    return d


@pytest.fixture
def dictionaries():
    return (
        make_dictionary("der die das hund katze sitzt auf matte und rennt weit weg".split()),
        make_dictionary("the cat sat on a mat and dog ran far away".split()),
    )


def make_model(dictionaries, **overrides):
    src_dict, tgt_dict = dictionaries
    cfg = HistoryTranslationConfig(
        **{
            "embed_dim": 16,
            "hidden_size": 12,
            "num_layers": 2,
            "dropout": 0.0,
            "encoder_embed_dim": 10,
            "encoder_hidden_size": 8,
            "encoder_dropout": 0.0,
            **overrides,
        }
    )
    model = HistoryTranslationModel.build_model(
        cfg, SimpleNamespace(source_dictionary=src_dict, target_dictionary=tgt_dict)
    )
    for p in model.parameters():  # sharp distributions: no near-ties in the arg max
        torch.nn.init.normal_(p, std=0.6)
    return model.eval()


def left_padded(sentences, pad):
    """fairseq's translation batches: sources left-padded, longest first."""
    sentences = sorted(sentences, key=len, reverse=True)
    batch = torch.full((len(sentences), len(sentences[0])), pad)
    for row, sentence in enumerate(sentences):
        batch[row, batch.size(1) - len(sentence) :] = sentence
    return {"net_input": {"src_tokens": batch, "src_lengths": torch.tensor([len(s) for s in sentences])}}


def sources(dictionaries, lengths, seed=0):
    generator = torch.Generator().manual_seed(seed)
    eos = dictionaries[0].eos()
    return [torch.cat([random_tokens(dictionaries[0], 1, n, generator)[0], torch.tensor([eos])]) for n in lengths]


def hand_greedy(model, source, tgt_dict):
    """Greedy search with a full decoder forward over the whole prefix at every step, under
    the generator's rules: no pad ever, no </s> first (min_len 1), </s> forced at MAX_LEN."""
    encoder_out = model.encoder(source.unsqueeze(0), torch.tensor([len(source)]))
    prefix, scores = [tgt_dict.eos()], []
    for step in range(MAX_LEN + 1):
        logits, _ = model.decoder(torch.tensor([prefix]), encoder_out)
        log_probs = model.get_normalized_probs((logits, None), log_probs=True)[0, -1]
        allowed = torch.ones_like(log_probs, dtype=torch.bool)
        allowed[tgt_dict.pad()] = False
        if step == 0:
            allowed[tgt_dict.eos()] = False
        if step == MAX_LEN:
            allowed[:] = False
            allowed[tgt_dict.eos()] = True
        token = int(log_probs.masked_fill(~allowed, float("-inf")).argmax())
        prefix.append(token)
        scores.append(float(log_probs[token].detach()))
        if token == tgt_dict.eos():
            break
    return prefix[1:], scores


def generate(model, tgt_dict, sentences, beam, nbest=1):
    generator = SequenceGenerator([model], tgt_dict, beam_size=beam, max_len_a=0, max_len_b=MAX_LEN)
    sample = left_padded(sentences, tgt_dict.pad())
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]), reverse=True)
    hypos = generator.generate([model], sample)
    by_input = [None] * len(sentences)
    for row, i in enumerate(order):
        by_input[i] = hypos[row][:nbest]
    return by_input


@pytest.mark.parametrize("variant", DECODERS)
def test_beam_one_is_greedy_search_with_the_full_forward(dictionaries, variant):
    model = make_model(dictionaries, **variant)
    batch = sources(dictionaries, [3, 7, 5])
    for source, hypos in zip(batch, generate(model, dictionaries[1], batch, beam=1)):
        tokens, scores = hand_greedy(model, source, dictionaries[1])
        assert hypos[0]["tokens"].tolist() == tokens
        torch.testing.assert_close(hypos[0]["positional_scores"], torch.tensor(scores), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("variant", DECODERS)
def test_beam_results_do_not_depend_on_the_batch(dictionaries, variant):
    model = make_model(dictionaries, **variant)
    batch = sources(dictionaries, [6, 2, 9, 4])
    together = generate(model, dictionaries[1], batch, beam=4, nbest=4)
    other_batch = generate(
        model, dictionaries[1], [batch[2]] + sources(dictionaries, [11, 1], seed=5), beam=4, nbest=4
    )[0]
    for i, source in enumerate(batch):
        alone = generate(model, dictionaries[1], [source], beam=4, nbest=4)[0]
        for mates in [together[i]] + ([other_batch] if i == 2 else []):
            assert [h["tokens"].tolist() for h in mates] == [h["tokens"].tolist() for h in alone]
            torch.testing.assert_close(
                torch.tensor([h["score"] for h in mates]),
                torch.tensor([h["score"] for h in alone]),
                atol=1e-5,
                rtol=1e-5,
            )
            # source attention (S, T): the same over the real words, nothing on the batch's padding
            real = len(source)
            torch.testing.assert_close(mates[0]["attention"][:real], alone[0]["attention"][:real], atol=1e-5, rtol=1e-5)
            assert mates[0]["attention"][real:].sum() == 0


@pytest.mark.parametrize("variant", DECODERS)
def test_incremental_decoding_equals_full_forward_and_attends_to_real_source_words(dictionaries, variant, device):
    model = make_model(dictionaries, **variant).to(device)
    sample = left_padded(sources(dictionaries, [8, 3]), dictionaries[0].pad())
    encoder_out = model.encoder(**{k: v.to(device) for k, v in sample["net_input"].items()})
    targets = random_tokens(dictionaries[1], 2, 7).to(device)
    full, extra = model.decoder(targets, encoder_out)
    state, steps, weights = {}, [], []
    for t in range(targets.size(1)):
        out, step_extra = model.decoder(targets[:, : t + 1], encoder_out, incremental_state=state)
        steps.append(out)
        weights.append(step_extra["attn"][0])
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(torch.cat(weights, 1), extra["attn"][0], atol=1e-5, rtol=1e-5)
    # source attention: (B, T, S), a distribution over the 4 real words of the short source
    attention = extra["attn"][0]
    assert attention.shape == (2, 7, 9)
    torch.testing.assert_close(attention.sum(-1), torch.ones(2, 7, device=device))
    assert attention[1, :, 4:].sum() == 0  # the short source is padded at the end (encoder side)


@pytest.mark.parametrize("variant", DECODERS)
def test_target_side_stays_causal(dictionaries, variant, device):
    model = make_model(dictionaries, **variant).to(device)
    net_input = left_padded(sources(dictionaries, [5]), dictionaries[0].pad())["net_input"]
    encoder_out = model.encoder(**{k: v.to(device) for k, v in net_input.items()})
    targets = random_tokens(dictionaries[1], 1, 8).to(device)
    changed = targets.clone()
    changed[:, 5:] = (changed[:, 5:] - 3) % (len(dictionaries[1]) - 4) + 4
    before, after = model.decoder(targets, encoder_out)[0], model.decoder(changed, encoder_out)[0]
    torch.testing.assert_close(before[:, :5], after[:, :5], rtol=0, atol=1e-6)
    assert not torch.allclose(before[:, 5], after[:, 5])


def test_the_source_matters_and_a_translation_decoder_needs_it(dictionaries):
    model = make_model(dictionaries, **DECODERS[0])
    targets = random_tokens(dictionaries[1], 1, 4)
    a, b = sources(dictionaries, [5]), sources(dictionaries, [5], seed=3)
    out_a = model.decoder(targets, model.encoder(**left_padded(a, 1)["net_input"]))[0]
    out_b = model.decoder(targets, model.encoder(**left_padded(b, 1)["net_input"]))[0]
    assert not torch.allclose(out_a, out_b)
    with pytest.raises(ValueError, match="needs the encoder's output"):
        model.decoder(targets)


def test_amsrn_memory_starts_with_the_bridged_encoder_state(dictionaries):
    """AMSRN's H_t = [h_0, h_1, ..., h_t] with h_0 the decoder's initial state: for translation
    that is the state bridged from the encoder, not zeros."""
    model = make_model(dictionaries, decoder_type="amsrn", memory_selection="none")
    batch = left_padded(sources(dictionaries, [5, 3]), dictionaries[0].pad())["net_input"]
    encoder_out = model.encoder(**batch)
    prev = random_tokens(dictionaries[1], 2, 4)
    decoder = model.decoder
    _, extra = decoder(prev, encoder_out)
    h0 = decoder.initial_state(encoder_out)[0][-1]
    states, _ = decoder.lstm(decoder.embed_tokens(prev), decoder.initial_state(encoder_out))
    memory = torch.cat([h0[:, None], states], dim=1)
    scores = torch.bmm(decoder.key(states), memory.transpose(1, 2))  # e_i = k_t . h_i (no selection)
    allowed = torch.ones(4, 5, dtype=torch.bool).tril(1)
    expected = scores.masked_fill(~allowed, float("-inf")).softmax(-1)
    torch.testing.assert_close(extra["history_attn"][0], expected)


@pytest.mark.parametrize("variant", DECODERS)
def test_share_all_embeddings_ties_source_target_and_output_and_still_decodes(dictionaries, variant):
    joined = make_dictionary([*dictionaries[0].symbols[4:], *dictionaries[1].symbols[4:]])
    model = make_model((joined, joined), share_all_embeddings=True, encoder_embed_dim=16, **variant)
    assert model.encoder.embed_tokens.weight is model.decoder.embed_tokens.weight
    alone = make_model((joined, joined), encoder_embed_dim=16, **variant)
    assert sum(p.numel() for p in alone.parameters()) - sum(p.numel() for p in model.parameters()) == 16 * len(joined)
    batch = sources((joined, joined), [3, 6, 4])
    for source, hypos in zip(batch, generate(model, joined, batch, beam=1)):  # the shared weights still decode
        assert hypos[0]["tokens"].tolist() == hand_greedy(model, source, joined)[0]


def test_share_all_embeddings_refuses_two_dictionaries_or_two_widths(dictionaries):
    with pytest.raises(OptionError, match="needs one dictionary for both languages: .* --joined-dictionary"):
        make_model(dictionaries, share_all_embeddings=True, encoder_embed_dim=16)
    joined = dictionaries[1]
    with pytest.raises(OptionError, match="--encoder-embed-dim 10 must equal --embed-dim 16"):
        make_model((joined, joined), share_all_embeddings=True)
