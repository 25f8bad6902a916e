"""Pointer Sentinel-LSTM (Merity, Xiong, Bradbury & Socher 2017): an LSTM LM that can copy a
word of its recent input, with a learned sentinel deciding how much to trust the softmax.

For the prediction of ``x_{t+1}`` after reading ``x_1..x_t`` (the LSTM outputs ``h_i``):

    q   = tanh(W h_t + b)                                       (Eq. 5: the query)
    z_i = q . h_i,  i in the window of the last L outputs       (Eq. 6; h_t included)
    a   = softmax([z ; q . s])                                  (Eq. 7; s: the learned sentinel)
    g   = a_{L+1}                                               (the sentinel's weight: the gate)
    p(w) = g p_vocab(w) + sum_{i : x_i = w} a_i                  (Eq. 3-4 with p_ptr = a_{1..L} / (1 - g))
    p_vocab = softmax(E h_t + b_out)                            (tied embeddings, as our other LMs)

The window is the history attention's memory, with the sentinel as its always-readable first slot. The
mixture is formed by ``log_probs`` (the whole distribution) and, in training, by ``target_log_probs``
(the target alone).
"""

from dataclasses import dataclass, field

import torch
import torch.nn as nn
from fairseq.models import register_model, register_model_architecture

from ..errors import OptionError
from ..modules.history_attention import CausalHistoryAttention, DotScore
from ..modules.history_lstm_decoder import HistoryAttentionLSTMDecoder, RecurrentLMConfig
from ..options.checks import number, whole_batch
from .arch_defaults import set_arch_defaults
from .checkpoint_fit import DEFAULT_BEFORE_THE_OPTION
from .history_language_model import HistoryAttentionLanguageModel


@dataclass
class PointerSentinelConfig(RecurrentLMConfig):
    pointer_window: int = field(
        default=100,
        metadata={
            "help": "L: the pointer reads the last L outputs and can copy their input words (paper: 100); "
            "on document_language_modeling they carry across chunks"
        },
    )
    sentinel_scale: float = field(
        default=0.1,
        metadata={
            "help": "store the sentinel vector s as s / scale, so SGD moves it at scale^2 the learning rate",
            # older checkpoints, saved without the option, hold (and must be read at) 1
            DEFAULT_BEFORE_THE_OPTION: 1.0,
        },
    )


class PointerSentinelDecoder(HistoryAttentionLSTMDecoder):
    def __init__(self, cfg: PointerSentinelConfig, dictionary):
        if cfg.embed_dim != cfg.hidden_size:
            raise OptionError(
                f"pointer_sentinel_lm feeds h_t to the softmax tied to the embeddings, so --embed-dim "
                f"({cfg.embed_dim}) must equal --hidden-size ({cfg.hidden_size})"
            )
        number(
            "--sentinel-scale",
            cfg.sentinel_scale,
            above=0,
            why="the sentinel is stored as s / scale (1 is the paper's)",
        )
        if cfg.pointer_window < 1:
            raise OptionError(
                f"--pointer-window {cfg.pointer_window}: the pointer reads the last L >= 1 outputs (paper: 100)"
            )
        super().__init__(cfg, dictionary)
        self.attention = CausalHistoryAttention(
            DotScore(), include_current=True, initial_slot=True, window=cfg.pointer_window
        )
        self.query = nn.Linear(cfg.hidden_size, cfg.hidden_size)  # q = tanh(W h_t + b)
        self.sentinel_vector = nn.Parameter(torch.zeros(cfg.hidden_size))  # s / scale
        self.reset_parameters()

    def sentinel(self, bsz):
        """``s = scale * stored``: a smaller step on s alone, not a different model."""
        return (self.cfg.sentinel_scale * self.sentinel_vector).expand(bsz, -1)

    def attention_queries(self, states):
        return torch.tanh(self.query(states))

    def combine(self, states, context):
        """``p_vocab`` reads ``h_t`` itself (no concat layer); the pointer mixes in ``forward``."""
        return states

    def forward(self, prev_output_tokens, encoder_out=None, incremental_state=None, **kwargs):
        scores, extra = super().forward(prev_output_tokens, encoder_out, incremental_state, **kwargs)
        extra["pointer_gate"] = extra["history_attn"][0][..., 0]  # g: the sentinel's weight (B, T)
        return scores, extra

    def _pointer(self, net_output):
        """``(g (B, T, 1), a (B, T, S), words (B, S))``: the gate, the pointer's weights and the
        input word of each remembered output."""
        scores, extra = net_output[0], net_output[1]
        weights = extra["history_attn"][0]  # (B, T, 1 + slots): the sentinel first
        whole_batch(scores, weights, "the Pointer Sentinel-LSTM's mixture")
        if weights.dtype != torch.float32:  # half-precision weights sum to 1 only to within float16's eps
            weights = weights.float()
            weights = weights / weights.sum(-1, keepdim=True).clamp_min(torch.finfo(weights.dtype).tiny)
        return weights[..., :1], weights[..., 1:], extra["memory_tokens"]

    def log_probs(self, net_output):
        """Eq. 3 over the whole vocabulary: ``log(g p_vocab + copied)``, summing to 1
        (g + sum_i a_i = 1); eval-lm, beam search and the neural cache read this."""
        gate, pointer, words = self._pointer(net_output)
        copied = pointer.new_zeros(*pointer.shape[:2], len(self.dictionary))
        copied = copied.scatter_add(2, words.unsqueeze(1).expand(-1, pointer.size(1), -1), pointer)
        mixed = gate * super().log_probs(net_output).exp() + copied
        return mixed.clamp_min(torch.finfo(mixed.dtype).tiny).log()

    def target_log_probs(self, net_output, target):
        """Eq. 3 at the target alone, what training needs: ``g p_vocab(y) + sum_{i: x_i = y} a_i``,
        no vocabulary-sized scatter (and with the adaptive softmax no distribution at all)."""
        gate, pointer, words = self._pointer(net_output)
        copied = (pointer * self._hits(words, target)).sum(-1)  # (B, T)
        mixed = gate.squeeze(-1) * super().target_log_probs(net_output, target).exp() + copied
        return mixed.clamp_min(torch.finfo(mixed.dtype).tiny).log()

    @staticmethod
    def _hits(words, target):
        """``I(y, x)`` as a mask (B, T, S): which memory slots hold each step's target."""
        return words.unsqueeze(1).eq(target.unsqueeze(-1))

    def sentinel_loss(self, net_output, target):
        """Merity et al.'s extra term (their Sec. 2.4) per target (B, T): ``-log(g + sum_{i in I(y, x)} a_i)``,
        ``I(y, x)`` the window positions whose word is the target. Where the target is absent it is
        ``-log g`` (the mass belongs to the softmax); ``found`` says where it is present."""
        gate, pointer, words = self._pointer(net_output)
        hits = self._hits(words, target)
        kept = gate.squeeze(-1) + (pointer * hits).sum(-1)
        # the memory also holds slots outside each step's window (causal mask, last L): weight exactly 0
        found = (hits & pointer.gt(0)).any(-1)
        return -kept.clamp_min(torch.finfo(kept.dtype).tiny).log(), found

    def copy_posterior(self, target_log_probs, extra, target):
        """``p(pointer | x_{t+1}) = (p(w) - g p_vocab(w)) / p(w)`` at the target words (B, T), given
        their ``log p(w)`` (B, T): how much of each word's probability the pointer gave
        (``alm-cache-posterior``)."""
        vocab = super().target_log_probs((self.output_layer(extra["features"]),), target)  # log p_vocab(w)
        from_vocab = extra["pointer_gate"].float().log() + vocab
        return (1 - (from_vocab - target_log_probs).exp()).clamp(0, 1)


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
