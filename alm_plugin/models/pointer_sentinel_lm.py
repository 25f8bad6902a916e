"""Pointer Sentinel-LSTM (Merity, Xiong, Bradbury & Socher 2017): an LSTM LM that can copy a
word of its recent input, with a learned sentinel deciding how much to trust the softmax.

For the prediction of ``x_{t+1}`` after reading ``x_1..x_t`` (the LSTM outputs ``h_i``):

    q   = tanh(W h_t + b)                                       (Eq. 5: the query)
    z_i = q . h_i,  i in the window of the last L outputs       (Eq. 6; h_t included)
    a   = softmax([z ; q . s])                                  (Eq. 7; s: the learned sentinel)
    g   = a_{L+1}                                               (the sentinel's weight: the gate)
    p(w) = g p_vocab(w) + sum_{i : x_i = w} a_i                  (Eq. 3-4 with p_ptr = a_{1..L} / (1 - g))
    p_vocab = softmax(E h_t + b_out)                            (tied embeddings, as our other LMs)

The pointer points at the *input* word ``x_i`` of each remembered output ``h_i`` (so it can
copy the word just read); its probabilities and ``g`` sum to 1, so ``p`` is a distribution
over the vocabulary. The window is the history attention's memory (``CausalHistoryAttention``
with ``include_current`` and the sentinel as its always-readable first slot); on
``document_language_modeling`` the last L outputs and their words carry from chunk to chunk,
as the paper's window spans its BPTT segments. The decoder returns ``log p`` in place of
logits (``log_softmax`` leaves it as it is), so every fairseq tool and the neural cache read
it as any LM's output.
"""
from dataclasses import dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F
from fairseq.models import register_model, register_model_architecture

from ..errors import OptionError
from ..modules.history_attention import CausalHistoryAttention, DotScore
from ..modules.history_lstm_decoder import HistoryAttentionLSTMDecoder, RecurrentLMConfig
from .arch_defaults import set_arch_defaults
from .history_language_model import HistoryAttentionLanguageModel


@dataclass
class PointerSentinelConfig(RecurrentLMConfig):
    pointer_window: int = field(default=100, metadata={
        "help": "L: the pointer reads the last L outputs and can copy their input words (paper: 100); "
                "on document_language_modeling they carry across chunks"})


class PointerSentinelDecoder(HistoryAttentionLSTMDecoder):
    def __init__(self, cfg: PointerSentinelConfig, dictionary):
        if cfg.embed_dim != cfg.hidden_size:
            raise OptionError(f"pointer_sentinel_lm feeds h_t to the softmax tied to the embeddings, so --embed-dim "
                              f"({cfg.embed_dim}) must equal --hidden-size ({cfg.hidden_size})")
        if cfg.pointer_window < 1:
            raise OptionError(f"--pointer-window {cfg.pointer_window}: the pointer reads the last L >= 1 outputs "
                              "(paper: 100)")
        super().__init__(cfg, dictionary)
        self.attention = CausalHistoryAttention(DotScore(), include_current=True, initial_slot=True,
                                                window=cfg.pointer_window)
        self.query = nn.Linear(cfg.hidden_size, cfg.hidden_size)  # q = tanh(W h_t + b)
        self.sentinel_vector = nn.Parameter(torch.zeros(cfg.hidden_size))
        self.reset_parameters()

    def sentinel(self, bsz):
        return self.sentinel_vector.expand(bsz, -1)

    def attention_queries(self, states):
        return torch.tanh(self.query(states))

    def combine(self, states, context):
        """``p_vocab`` reads ``h_t`` itself (no concat layer); the pointer mixes in ``forward``."""
        return states

    def forward(self, prev_output_tokens, encoder_out=None, incremental_state=None, **kwargs):
        features, extra = self.extract_features(prev_output_tokens, encoder_out, incremental_state, **kwargs)
        weights = extra["history_attn"][0]  # (B, T, 1 + slots): the sentinel first
        gate, pointer = weights[..., :1], weights[..., 1:]
        words = extra["memory_tokens"]  # (B, slots): the input word of each remembered output
        copied = pointer.new_zeros(*pointer.shape[:2], len(self.dictionary))
        copied.scatter_add_(2, words.unsqueeze(1).expand(-1, pointer.size(1), -1), pointer.float())
        vocab = F.softmax(self.output_layer(features).float(), dim=-1)
        mixed = gate.float() * vocab + copied  # Eq. 3: sums to 1 (g + sum_i a_i = 1)
        extra["pointer_gate"] = gate.squeeze(-1)
        return mixed.clamp_min(torch.finfo(mixed.dtype).tiny).log(), extra


    def copy_posterior(self, log_probs, extra, target):
        """``p(pointer | x_{t+1}) = (p(w) - g p_vocab(w)) / p(w)`` at the target words (B, T): how
        much of each word's probability the pointer gave (``alm-cache-posterior``)."""
        vocab = F.log_softmax(self.output_layer(extra["features"]).float(), dim=-1)
        from_vocab = extra["pointer_gate"].float().log() + vocab.gather(2, target.unsqueeze(-1)).squeeze(-1)
        return (1 - (from_vocab - log_probs.gather(2, target.unsqueeze(-1)).squeeze(-1)).exp()).clamp(0, 1)


@register_model("pointer_sentinel_lm", dataclass=PointerSentinelConfig)
class PointerSentinelLanguageModel(HistoryAttentionLanguageModel):
    """Pointer Sentinel-LSTM language model (Merity et al. 2017)."""

    decoder_class = PointerSentinelDecoder


@register_model_architecture("pointer_sentinel_lm", "pointer_sentinel_lm_ptb")
def pointer_sentinel_lm_ptb(args):
    """The paper's medium PTB model: 2 x 650 LSTM, dropout 0.5, window 100 (tied embeddings here)."""
    set_arch_defaults(args, embed_dim=650, hidden_size=650, num_layers=2, dropout=0.5, pointer_window=100)


@register_model_architecture("pointer_sentinel_lm", "pointer_sentinel_lm_wikitext2")
def pointer_sentinel_lm_wikitext2(args):
    """WikiText-2 as in the paper's PTB setup (2 x 650, dropout 0.5, window 100)."""
    set_arch_defaults(args, embed_dim=650, hidden_size=650, num_layers=2, dropout=0.5, pointer_window=100)


@register_model_architecture("pointer_sentinel_lm", "pointer_sentinel_lm_small")
def pointer_sentinel_lm_small(args):
    """A quick model for the shipped sample and tests: 2 x 256, dropout 0.3, window 100."""
    set_arch_defaults(args, embed_dim=256, hidden_size=256, num_layers=2, dropout=0.3, pointer_window=100)
