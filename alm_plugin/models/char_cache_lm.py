"""HCLM and HCLM + cache: hierarchical character-level LM with a continuous word cache
(Kawakami, Dyer, Blunsom 2017, "Learning to Create and Reuse Words in Open-Vocabulary
Neural Language Modeling").

    h^enc_t   = LSTM_enc(chars of w_{t-1})            (final state; each distinct word once)
    h_t       = LSTM_ctx(h^enc_1 .. h^enc_t)           (one call over the chunk)
    h^dec_t,j = LSTM_dec(v_S, c_t,1 .. c_t,j-1; init h_t)   (all words of the batch at once)
    p_lm(w_t) = prod_j softmax(W_dec h^dec_t,j + b_dec)[c_t,j]   (characters + end-of-word)
    p(w_t)    = lambda_t p_lm(w_t) + (1 - lambda_t) p_ptr(w_t)   (``ContinuousWordCache``)

``--arch hclm`` is the paper's ablation without the cache. The context state and the cache
are carried from chunk to chunk of each stream (``StreamCarry``); with ``--cache-scope
sentence`` the cache is emptied at every sentence start instead.
"""

from dataclasses import dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F
from fairseq.dataclass import ChoiceEnum
from fairseq.models import register_model, register_model_architecture

from ..data.spelling import START_OF_WORD
from ..modules.lstm_helpers import packed_lstm
from ..modules.open_vocabulary_decoder import CharacterModelConfig, OpenVocabularyDecoder
from ..modules.word_cache import ContinuousWordCache
from .arch_defaults import set_arch_defaults
from .open_vocabulary_lm import OpenVocabularyLanguageModel


@dataclass
class CharCacheLMConfig(CharacterModelConfig):
    context_layers: int = field(default=1, metadata={"help": "layers of the word-level context LSTM"})
    cache_size: int = field(
        default=100,
        metadata={"help": "K, the number of words the cache holds (paper: 100); 0 = no cache (= --arch hclm)"},
    )
    cache_attention_dim: int = field(
        default=0, metadata={"help": "size of the copy-score projections W_q, W_u (0 = --hidden-size)"}
    )
    cache_scope: ChoiceEnum(["stream", "sentence"]) = field(
        default="stream",
        metadata={
            "help": "stream: the cache spans sentences, as in the paper; sentence: emptied at every sentence start"
        },
    )


class HierarchicalCharDecoder(OpenVocabularyDecoder):
    def __init__(self, cfg: CharCacheLMConfig, dictionary):
        super().__init__(cfg, dictionary)
        H = cfg.hidden_size
        self.word_encoder = nn.LSTM(cfg.char_embed_dim, H, batch_first=True)
        self.context_lstm = nn.LSTM(
            H, H, cfg.context_layers, batch_first=True, dropout=cfg.dropout if cfg.context_layers > 1 else 0.0
        )
        self.speller = nn.LSTM(cfg.char_embed_dim, H, batch_first=True)
        self.char_output = nn.Linear(H, self.spelling.num_characters)
        self.cache = None
        if cfg.cache_size > 0:
            self.cache = ContinuousWordCache(H, cfg.cache_size, cfg.cache_attention_dim or None)

    def encode_words(self, words):
        """``h^enc``: the encoder's final state over each word's characters + end-of-word."""
        chars, lengths = self.spelling(words)
        _, (hidden, _) = packed_lstm(self.word_encoder, self.dropout(self.embed_chars(chars)), lengths)
        return hidden[-1]

    def spell_log_probs(self, contexts, words):
        """``log p_lm(w)`` for N words at once, each decoder started from its context (N,H)."""
        chars, lengths = self.spelling(words)  # targets: characters + end-of-word
        inputs = F.pad(chars[:, :-1], (1, 0), value=START_OF_WORD)
        start = (contexts.unsqueeze(0).contiguous(), torch.zeros_like(contexts).unsqueeze(0))
        states, _ = packed_lstm(self.speller, self.dropout(self.embed_chars(inputs)), lengths, start)
        log_probs = self.char_output(self.dropout(states)).log_softmax(-1)
        per_char = log_probs.gather(-1, chars.unsqueeze(-1)).squeeze(-1)
        inside = torch.arange(chars.size(1), device=chars.device) < lengths.unsqueeze(-1)
        return (per_char * inside).sum(-1)

    def score(self, src_tokens, target_tokens, state):
        B, T = src_tokens.shape
        distinct, where = torch.unique(src_tokens, return_inverse=True)
        word_vectors = self.encode_words(distinct)[where]  # (B,T,H)
        contexts, context_state = self.context_lstm(
            self.dropout(word_vectors), None if state is None else state["context"]
        )
        contexts = self.dropout(contexts)
        lm_log_probs = self.spell_log_probs(contexts.reshape(B * T, -1), target_tokens.reshape(-1)).view(B, T)
        extra = {"lm_log_probs": lm_log_probs}
        new_state = {"context": context_state}
        if self.cache is None:
            return lm_log_probs, extra, new_state
        cache = self.cache.empty(B, contexts) if state is None else state["cache"]
        resets = src_tokens.eq(self.dictionary.eos()) if self.cfg.cache_scope == "sentence" else None
        log_probs, extra["cache_posterior"], extra["lm_weight"], new_state["cache"] = self.cache(
            contexts, target_tokens, lm_log_probs, cache, target_tokens.ne(self.dictionary.pad()), resets
        )
        return log_probs, extra, new_state


@register_model("char_cache_lm", dataclass=CharCacheLMConfig)
class CharCacheLanguageModel(OpenVocabularyLanguageModel):
    decoder_class = HierarchicalCharDecoder


# --arch char_cache_lm is the paper's setup (the config's defaults): 600-d characters and
# LSTMs, a cache of 100 words, dropout 0.5, init U(-0.08, 0.08).


@register_model_architecture("char_cache_lm", "hclm")
def hclm(args):
    """The paper's HCLM: the same model without the cache."""
    args.cache_size = 0


@register_model_architecture("char_cache_lm", "char_cache_lm_small")
def char_cache_lm_small(args):
    """Sized for a CPU: 128-d characters, 256-d LSTMs."""
    set_arch_defaults(args, char_embed_dim=128, hidden_size=256, dropout=0.3)


@register_model_architecture("char_cache_lm", "hclm_small")
def hclm_small(args):
    char_cache_lm_small(args)
    args.cache_size = 0
