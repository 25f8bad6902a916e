"""Attentive LM (Salton, Ross and Kelleher 2017): an LSTM LM attending over its own history.

    h_t  = LSTM(x_t, h_{t-1})                                   (Eq. 2)
    a_i  = softmax_{i<t} score(h_i, h_t)                        (Eq. 4)
    c_t  = sum_{i<t} a_i h_i                                    (Eq. 3)
    h'_t = tanh(W_c [h_t ; c_t] + b_c)                          (Eq. 7; the authors' code: no tanh)
    p(w_{t+1} | w_<=t) = softmax(W h'_t + b), W = E             (Eq. 8)

with the *single* (Eq. 9) or *combined* (Eq. 10) score. The memory holds ``h_1..h_{t-1}``
(``h_t`` is written only after the prediction); at ``t = 1`` it is empty and ``c_1 = 0``.
"""

from dataclasses import dataclass, field

import torch
import torch.nn as nn
from fairseq.dataclass import ChoiceEnum
from fairseq.models import register_model, register_model_architecture

from ..modules.history_attention import CausalHistoryAttention, CombinedScore, SingleScore
from ..modules.history_lstm_decoder import HistoryAttentionConfig, HistoryAttentionLSTMDecoder
from .arch_defaults import set_arch_defaults
from .history_language_model import HistoryAttentionLanguageModel

SCORES = {"single": SingleScore, "combined": CombinedScore}


@dataclass
class AttentiveLMConfig(HistoryAttentionConfig):
    attention_score: ChoiceEnum(list(SCORES)) = field(
        default="single",
        metadata={"help": "single: v.tanh(W_s h_i) (Eq. 9); combined: v.tanh(W_s h_i + W_q h_t) (Eq. 10)"},
    )
    attention_dim: int = field(default=0, metadata={"help": "size of the score's tanh layer (0: the LSTM hidden size)"})
    attention_sentinel: bool = field(
        default=False,
        metadata={
            "help": "add an all-zero memory slot that every step can attend to, as the authors' "
            "released code does (the paper has none)"
        },
    )
    concat_activation: ChoiceEnum(["tanh", "linear"]) = field(
        default="tanh",
        metadata={
            "help": "the concat layer's non-linearity: tanh (Eq. 7, the paper) or linear (none, "
            "as in the authors' released code)"
        },
    )
    zero_context: bool = field(
        default=False,
        metadata={"help": "build no attention and feed the concat layer c_t = 0: h'_t = tanh(W_c [h_t ; 0])"},
    )


class AttentiveLMDecoder(HistoryAttentionLSTMDecoder):
    def __init__(self, cfg: AttentiveLMConfig, dictionary, source_dim: int = 0):
        super().__init__(cfg, dictionary, source_dim)
        self.zero_context = cfg.zero_context
        if not self.zero_context:
            score = SCORES[cfg.attention_score](cfg.hidden_size, cfg.attention_dim or cfg.hidden_size)
            self.attention = CausalHistoryAttention(
                score, include_current=False, initial_slot=cfg.attention_sentinel, window=cfg.memory_window
            )
        self.concat = nn.Linear(2 * cfg.hidden_size + source_dim, cfg.embed_dim, bias=cfg.combination_bias)
        self.concat_tanh = cfg.concat_activation == "tanh"
        self.reset_parameters()

    def combine(self, states, context, *source_context):
        """Eq. 7: ``h'_t = tanh(W_c [h_t ; c_t] + b_c)`` (``--concat-activation linear``: without
        the tanh; ``b_c`` only with ``--combination-bias``); a translation decoder appends the
        source context: ``[h_t ; c_t ; z_t]``."""
        combined = self.concat(torch.cat([states, context, *source_context], dim=-1))
        return torch.tanh(combined) if self.concat_tanh else combined


@register_model("attentive_lm", dataclass=AttentiveLMConfig)
class AttentiveLanguageModel(HistoryAttentionLanguageModel):
    """Attentive LSTM language model (Salton et al. 2017)."""

    decoder_class = AttentiveLMDecoder


@register_model_architecture("attentive_lm", "attentive_lm_ptb")
def attentive_lm_ptb(args):
    """PTB setup: 2 x 650 LSTM, tied 650-d embeddings, dropout 0.5."""
    set_arch_defaults(args, embed_dim=650, hidden_size=650, num_layers=2, dropout=0.5)


@register_model_architecture("attentive_lm", "attentive_lm_wikitext2")
def attentive_lm_wikitext2(args):
    """WikiText-2 setup: 2 x 1000 LSTM, tied 1000-d embeddings, dropout 0.65."""
    set_arch_defaults(args, embed_dim=1000, hidden_size=1000, num_layers=2, dropout=0.65)


@register_model_architecture("attentive_lm", "attentive_lm_small")
def attentive_lm_small(args):
    """A quick model for the shipped sample and tests: 2 x 256, dropout 0.3."""
    set_arch_defaults(args, embed_dim=256, hidden_size=256, num_layers=2, dropout=0.3)
