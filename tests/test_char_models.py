"""The character-level word-stream models (HCLM, HCLM + cache, char LSTM) against slow,
word-by-word reference implementations, plus the cache's LRU bookkeeping by hand."""

import math

import pytest
import torch
import torch.nn as nn
from fairseq.data import Dictionary

from alm_plugin.data.spelling import END_OF_WORD, START_OF_WORD, character_counts
from alm_plugin.data.word_streams import WordStreamDataset
from alm_plugin.models.char_cache_lm import CharCacheLMConfig, HierarchicalCharDecoder
from alm_plugin.models.char_lstm_lm import CharLSTMDecoder, CharLSTMLMConfig
from alm_plugin.modules.word_cache import EMPTY, ContinuousWordCache


def word_dictionary(words="the cat sat on a mat dog ran far away x".split()):
    d = Dictionary()
    for w in words:
        d.add_symbol(w)
    return d


def build(kind, d, **overrides):
    torch.manual_seed(0)
    if kind == "char_lstm_lm":
        decoder = CharLSTMDecoder(
            CharLSTMLMConfig(**{"char_embed_dim": 6, "hidden_size": 7, "dropout": 0.0, **overrides}), d
        )
    else:
        cache_size = 0 if kind == "hclm" else overrides.pop("cache_size", 3)
        decoder = HierarchicalCharDecoder(
            CharCacheLMConfig(
                **{
                    "char_embed_dim": 6,
                    "hidden_size": 7,
                    "dropout": 0.0,
                    "cache_size": cache_size,
                    "init_range": 0.5,
                    **overrides,
                }
            ),
            d,
        )
    decoder.reset_parameters()
    return decoder.double().eval()


def cell(lstm, layer=0):
    """An ``nn.LSTMCell`` with the weights of one layer of ``lstm``."""
    c = nn.LSTMCell(lstm.input_size, lstm.hidden_size).double()
    for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
        getattr(c, name).data.copy_(getattr(lstm, f"{name}_l{layer}"))
    return c


def spelled(decoder, word):
    return decoder.spelling.table[word][: decoder.spelling.lengths[word]].tolist()


def reference_hclm(decoder, stream):
    """log p(w_t) for stream[1:], one word and one character at a time, the cache a Python
    list of [word, raw key h_t, last write] (keys projected only when read)."""
    enc, ctx, dec = cell(decoder.word_encoder), cell(decoder.context_lstm), cell(decoder.speller)
    embed, H = decoder.embed_chars.weight, decoder.cfg.hidden_size
    cache_module, cache = decoder.cache, []
    h_ctx = c_ctx = torch.zeros(1, H, dtype=torch.double)
    scores = []
    for t in range(1, len(stream)):
        previous, word = stream[t - 1], stream[t]
        h = c = torch.zeros(1, H, dtype=torch.double)
        for ch in spelled(decoder, previous):
            h, c = enc(embed[ch][None], (h, c))
        h_ctx, c_ctx = ctx(h, (h_ctx, c_ctx))
        h, c, log_p_lm, previous_char = h_ctx, torch.zeros_like(h_ctx), 0.0, START_OF_WORD
        for ch in spelled(decoder, word):
            h, c = dec(embed[previous_char][None], (h, c))
            log_p_lm += decoder.char_output(h).log_softmax(-1)[0, ch].item()
            previous_char = ch
        if cache_module is None or not cache:
            scores.append(log_p_lm)
        else:
            query = torch.tanh(cache_module.query(h_ctx))
            u = torch.cat([cache_module.score(torch.tanh(cache_module.key(k) + query)) for _, k, _ in cache])
            p_mem = u.squeeze(-1).softmax(0)
            p_ptr = sum(p.item() for (w, _, _), p in zip(cache, p_mem) if w == word)
            lam = torch.sigmoid(cache_module.gate(h_ctx)).item()
            scores.append(math.log(lam * math.exp(log_p_lm) + (1 - lam) * p_ptr))
        if cache_module is not None:
            hit = [entry for entry in cache if entry[0] == word]
            if hit:
                hit[0][1], hit[0][2] = (hit[0][1] + h_ctx) / 2, t
            elif len(cache) < cache_module.cache_size:
                cache.append([word, h_ctx, t])
            else:
                oldest = min(cache, key=lambda entry: entry[2])
                oldest[:] = [word, h_ctx, t]
    return scores


def reference_char_lstm(decoder, stream):
    lstm, embed = cell(decoder.lstm), decoder.embed_chars.weight
    h = c = torch.zeros(1, decoder.cfg.hidden_size, dtype=torch.double)
    previous_char, scores = END_OF_WORD, []
    for word in stream[1:]:
        total = 0.0
        for ch in spelled(decoder, word):
            h, c = lstm(embed[previous_char][None], (h, c))
            total += decoder.char_output(h).log_softmax(-1)[0, ch].item()
            previous_char = ch
        scores.append(total)
    return scores


REFERENCES = {"char_cache_lm": reference_hclm, "hclm": reference_hclm, "char_lstm_lm": reference_char_lstm}


def stream_of(d, text):
    return [d.eos()] + [d.index(w) if w != "</s>" else d.eos() for w in text.split()]


TEXT = "the cat sat on the mat </s> the dog ran far away </s> a cat sat on a mat </s> the cat ran x x"


def chunked_scores(decoder, stream, chunk, rows=1, device="cpu"):
    """Score the stream with the task's dataset: ``rows`` streams, chunks of ``chunk`` words."""
    words = torch.tensor(stream[1:])
    data = WordStreamDataset(words, rows, chunk, decoder.dictionary.pad(), decoder.dictionary.eos())
    scores = []
    with torch.no_grad():
        for i in range(len(data)):
            item = data[i]
            log_probs, _ = decoder(
                item["source"].to(device),
                item["target"].to(device),
                item["streams"],
                torch.full((rows,), item["position"]),
            )
            scores.append(log_probs.squeeze(-1).cpu())
    scores = torch.cat(scores, 1).flatten()
    return scores[: len(stream) - 1]


@pytest.mark.parametrize("kind", sorted(REFERENCES))
def test_vectorised_model_equals_word_by_word_reference_across_chunks(kind, device):
    d = word_dictionary()
    decoder = build(kind, d)
    stream = stream_of(d, TEXT)
    expected = torch.tensor(REFERENCES[kind](decoder, stream), dtype=torch.double)  # on the CPU
    assert len(expected) == 25 and torch.isfinite(expected).all()
    decoder.to(device)
    for chunk in (4, 7, 100):  # state (context LSTM and cache) carried across chunks
        torch.testing.assert_close(chunked_scores(decoder, stream, chunk, device=device), expected, rtol=0, atol=1e-9)


def test_cache_adds_mass_to_repeated_words_only():
    """Repeated words: p = lambda p_lm + (1 - lambda) p_ptr > lambda p_lm; new words get
    lambda p_lm; the first word (empty cache) gets p_lm. Same weights, with and without cache."""
    d = word_dictionary()
    with_cache, without = build("char_cache_lm", d, cache_size=100), build("hclm", d)
    without.load_state_dict(with_cache.state_dict(), strict=False)
    stream = torch.tensor([stream_of(d, TEXT)])
    with torch.no_grad():
        log_p, extra = with_cache(stream[:, :-1], stream[:, 1:])
        log_p_lm = without(stream[:, :-1], stream[:, 1:])[0]
    log_p, log_p_lm, lam = log_p.flatten(), log_p_lm.flatten(), extra["lm_weight"].flatten()
    torch.testing.assert_close(extra["lm_log_probs"].flatten(), log_p_lm)
    words = stream[0, 1:].tolist()
    assert lam[0] == 1.0 and log_p[0] == log_p_lm[0]
    for t in range(1, len(words)):
        repeated = words[t] in words[:t]
        assert (extra["cache_posterior"][0, t] > 0) == repeated, t
        if repeated:
            assert log_p[t] > log_p_lm[t] + lam[t].log(), t
        else:
            torch.testing.assert_close(log_p[t], log_p_lm[t] + lam[t].log())


def test_state_is_not_resumed_by_a_batch_that_does_not_continue_the_stream():
    d = word_dictionary()
    decoder = build("char_cache_lm", d)
    stream = torch.tensor(stream_of(d, TEXT))
    source, target = stream[None, :-1], stream[None, 1:]
    ids = torch.tensor([0])
    with torch.no_grad():
        fresh = decoder(source[:, 10:20], target[:, 10:20], ids, torch.tensor([10]))[0]
        decoder(source[:, :10], target[:, :10], ids, torch.tensor([0]))
        continued = decoder(source[:, 10:20], target[:, 10:20], ids, torch.tensor([10]))[0]
        again = decoder(source[:, 10:20], target[:, 10:20], ids, torch.tensor([10]))[0]
    assert not torch.allclose(fresh, continued)
    torch.testing.assert_close(again, fresh)  # position 10 again is not a continuation of 10..20


def test_validation_between_two_training_chunks_leaves_the_training_state_alone():
    """--validate-interval-updates: an evaluation run on the same stream ids and positions
    between training chunks 0 and 1 must not replace the state chunk 1 resumes."""
    d = word_dictionary()
    decoder = build("char_cache_lm", d)
    stream = torch.tensor(stream_of(d, TEXT))
    source, target = stream[None, :-1], stream[None, 1:]
    ids = torch.tensor([0])
    other = torch.tensor(stream_of(d, "a dog ran far away x the cat sat on a mat"))

    def chunk(lo, hi, words=(source, target)):
        return decoder(words[0][:, lo:hi], words[1][:, lo:hi], ids, torch.tensor([lo]))[0]

    with torch.no_grad():
        decoder.train()
        chunk(0, 5)
        expected = chunk(5, 10)
        chunk(0, 5)
        decoder.eval()
        chunk(0, 5, (other[None, :-1], other[None, 1:]))  # validation: same ids and positions
        decoder.train()
        torch.testing.assert_close(chunk(5, 10), expected)


@pytest.mark.parametrize("words", [1, 2])
def test_every_parameter_gets_a_gradient_even_from_a_one_word_chunk(words):
    """DDP (pytorch_ddp, find_unused_parameters=False) fails on a parameter left out of the
    graph: a chunk of one word never reads the key it writes (--batch-size 11 on the sample)."""
    d = word_dictionary()
    decoder = build("char_cache_lm", d).train()
    stream = torch.tensor([stream_of(d, TEXT)])
    log_p = decoder(stream[:, :words], stream[:, 1 : words + 1], torch.tensor([0]), torch.tensor([0]))[0]
    log_p.sum().backward()
    assert [name for name, p in decoder.named_parameters() if p.grad is None] == []


def test_lru_cache_write_update_evict_by_hand():
    """K = 2, words 5 6 5 7 8 with states h1..h5 and W_u = identity:
    5 -> slot 0 [5, -]; 6 -> slot 1 [5, 6]; 5 again -> key (h1 + h3) / 2, slot 0 used at t=2;
    7 -> evicts 6 (slot 1, last written at t=1); 8 -> evicts 5 (slot 0, t=2 < 3)."""
    cache = ContinuousWordCache(state_size=2, cache_size=2).double()
    with torch.no_grad():
        cache.key.weight.copy_(torch.eye(2))
    h = torch.tensor([[1.0, 0], [0, 1], [3, 0], [0, 5], [7, 7]], dtype=torch.double)[None]
    words = torch.tensor([[5, 6, 5, 7, 8]])
    lm = torch.full((1, 5), -3.0, dtype=torch.double)
    expected = [  # (values, keys, last_write) after each step
        ([5, EMPTY], [[1, 0], [0, 0]], [0, -1]),
        ([5, 6], [[1, 0], [0, 1]], [0, 1]),
        ([5, 6], [[2, 0], [0, 1]], [2, 1]),
        ([5, 7], [[2, 0], [0, 5]], [2, 3]),
        ([8, 7], [[7, 7], [0, 5]], [4, 3]),
    ]
    state = cache.empty(1, h)
    for t, (values, keys, last_write) in enumerate(expected):  # one step per call: carried
        log_p, posterior, lm_weight, state = cache(
            h[:, t : t + 1], words[:, t : t + 1], lm[:, t : t + 1], state, torch.ones(1, 1, dtype=torch.bool)
        )
        assert state["values"].tolist() == [values]
        assert state["keys"].tolist() == [keys]
        assert state["last_write"].tolist() == [last_write]
        if t == 0:  # empty cache: the LM alone, lambda = 1
            assert log_p.item() == -3.0 and lm_weight.item() == 1.0 and posterior.item() == 0.0
        if t in (1, 3, 4):  # not cached: lambda * p_lm, posterior 0
            assert posterior.item() == 0.0 and log_p.item() == pytest.approx(-3.0 + math.log(lm_weight.item()))
        if t == 2:  # 5 is cached: the copy adds mass
            assert posterior.item() > 0 and log_p.item() > -3.0 + math.log(lm_weight.item())
    # the same five steps in one call give the same cache
    whole = cache(h, words, lm, cache.empty(1, h), torch.ones(1, 5, dtype=torch.bool))[3]
    for name in ("values", "keys", "last_write"):
        assert torch.equal(whole[name], state[name])


def test_sentence_scope_empties_the_cache_at_each_sentence_start():
    d = word_dictionary()
    stream = stream_of(d, "the cat </s> the cat")
    decoder = build("char_cache_lm", d, cache_scope="sentence")
    extra = decoder(torch.tensor([stream[:-1]]), torch.tensor([stream[1:]]))[1]
    # 'the' and 'cat' of sentence 2 were cached in sentence 1, but the cache was emptied
    assert extra["cache_posterior"][0, 3:].tolist() == [0.0, 0.0]
    streamed = build("char_cache_lm", d)(torch.tensor([stream[:-1]]), torch.tensor([stream[1:]]))[1]
    assert (streamed["cache_posterior"][0, 3:] > 0).all()


def test_mixture_over_a_closed_vocabulary_sums_to_at_most_one():
    """Every word over {a, b} up to 5 letters: the copy part puts all its mass on these
    words (the cache holds only them), so sum_w p(w) = lambda sum_w p_lm(w) + (1 - lambda) <= 1."""
    import itertools

    words = ["".join(p) for n in range(1, 6) for p in itertools.product("ab", repeat=n)]
    d = word_dictionary(words)
    decoder = build("char_cache_lm", d, cache_size=4)
    prefix = stream_of(d, "a ab a bba b </s> ab")
    candidates = torch.tensor([d.index(w) for w in words] + [d.eos()])
    n = len(candidates)
    source = torch.tensor(prefix).expand(n, -1)
    target = torch.cat([source[:, 1:], candidates[:, None]], 1)
    with torch.no_grad():
        log_probs, extra = decoder(source, target)
    p = log_probs[:, -1, 0].exp()
    p_lm = extra["lm_log_probs"][:, -1].exp()
    lam = extra["lm_weight"][0, -1]
    assert torch.allclose(extra["lm_weight"][:, -1], lam.expand(n))
    assert p.sum() <= 1.0
    torch.testing.assert_close(p.sum(), lam * p_lm.sum() + (1 - lam), rtol=0, atol=1e-12)
    assert 0.05 < lam < 0.95


def test_no_peeking_at_future_words(device):
    d = word_dictionary()
    for kind in REFERENCES:
        decoder = build(kind, d).to(device)
        stream = stream_of(d, TEXT)
        changed = list(stream)
        changed[12] = d.index("x")
        a = chunked_scores(decoder, stream, 100, device=device)
        b = chunked_scores(decoder, changed, 100, device=device)
        # targets 0..10 are words 1..11; float64 rounding may differ with the batch of distinct
        # words the encoder reads (the changed word is in it), a peek would differ by far more
        torch.testing.assert_close(a[:11], b[:11], rtol=0, atol=1e-10, msg=kind)
        assert a[11] != b[11], kind


def test_character_counts_are_the_text_length():
    """|c| of "the cat sat </s> on a mat </s>" is the length of its text, line breaks included."""
    d = word_dictionary()
    text = "the cat sat\non a mat\n"
    words = [d.index(w) for line in text.splitlines() for w in line.split() + ["</s>"]]
    assert words.count(d.eos()) == 2
    assert int(character_counts(d)[torch.tensor(words)].sum()) == len(text)


def test_every_word_is_a_target_exactly_once_whatever_the_rows_and_chunks():
    words = torch.arange(10, 10 + 23)
    for rows, chunk in ((1, 5), (4, 3), (5, 100), (30, 2)):
        data = WordStreamDataset(words, rows, chunk, pad=1, eos=2)
        targets, inputs = [], []
        for i in range(len(data)):
            targets.append(data[i]["target"])
            inputs.append(data[i]["source"])
        targets, inputs = torch.cat(targets, 1), torch.cat(inputs, 1)
        real = targets.ne(1)
        assert sorted(targets[real].tolist()) == words.tolist()
        # each input is the word before its target (</s> before the first)
        flat_targets, flat_inputs = targets[real].tolist(), inputs[real].tolist()
        for x, y in zip(flat_inputs, flat_targets):
            assert x == (2 if y == 10 else y - 1)


def test_cache_gradients_match_finite_differences():
    """The in-place slot writes keep autograd exact (states feed keys, queries and the gate)."""
    cache = ContinuousWordCache(state_size=3, cache_size=2, attention_dim=4, gate_hidden_dim=3).double()
    states = torch.randn(2, 6, 3, dtype=torch.double, requires_grad=True)
    lm = torch.randn(2, 6, dtype=torch.double).clamp(max=-0.5).requires_grad_()
    words = torch.tensor([[5, 6, 5, 7, 6, 5], [4, 4, 4, 8, 9, 4]])
    mask = torch.ones(2, 6, dtype=torch.bool)
    mask[1, 5] = False

    def log_probs(states, lm):
        return cache(states, words, lm, cache.empty(2, states), mask)[0]

    assert torch.autograd.gradcheck(log_probs, (states, lm))
