"""AMSRN: attention-based memory selection recurrent network (Liu, Chuang and Lee 2016,
"Attention-based Memory Selection Recurrent Network for Language Modeling").

The equations follow the reconstruction in docs/models.md, section AMSRN (marked R):

    memory      H_t = [h_0, h_1, ..., h_t]          the current state included; h_0 is the
                                                    initial state (0 for an LM; the state
                                                    bridged from the encoder for translation)
    key         k_t = W_k h_t + b_k                                                    (R)
    selection   w_h = sigmoid(W_h' h_t + b_h'),  w_c = sigmoid(W_c' h_t + b_c')        (R)
    similarity  e_i = k_t . (w_h * h_i) = (k_t * w_h) . h_i,  alpha = softmax(e)       (R)
    extraction  r_t = sum_i alpha_i (w_c * h_i) = w_c * sum_i alpha_i h_i               (R)
    output      y_t = softmax(E (W_1 h_t + W_2 r_t + b) + b_out)                       (R)
                (b only with --combination-bias)

``--memory-selection`` chooses how ``w_h`` and ``w_c`` are formed; the entropy regulariser is the
criterion's ``--attention-entropy-weight``.
"""

from dataclasses import dataclass, field

import torch
import torch.nn as nn
from fairseq.dataclass import ChoiceEnum
from fairseq.models import register_model, register_model_architecture

from ..modules.history_attention import CausalHistoryAttention, DotScore
from ..modules.history_lstm_decoder import HistoryAttentionConfig, HistoryAttentionLSTMDecoder
from .arch_defaults import set_arch_defaults
from .history_language_model import HistoryAttentionLanguageModel

SELECTIONS = ["independent", "tied", "complementary", "none"]


@dataclass
class AMSRNConfig(HistoryAttentionConfig):
    memory_selection: ChoiceEnum(SELECTIONS) = field(
        default="tied",
        metadata={
            "help": "independent: w_h and w_c from two sigmoid layers; tied: w_c = w_h; "
            "complementary: w_c = 1 - w_h; none: w_h = w_c = 1 (attention only)"
        },
    )


class AMSRNDecoder(HistoryAttentionLSTMDecoder):
    def __init__(self, cfg: AMSRNConfig, dictionary, source_dim: int = 0):
        super().__init__(cfg, dictionary, source_dim)
        hidden = cfg.hidden_size
        self.selection = cfg.memory_selection
        self.key = nn.Linear(hidden, hidden)  # k_t = W_k h_t + b_k
        n_gates = {"independent": 2, "tied": 1, "complementary": 1, "none": 0}[self.selection]
        self.gates = nn.Linear(hidden, n_gates * hidden) if n_gates else None
        self.attention = CausalHistoryAttention(
            DotScore(), include_current=True, initial_slot=True, window=cfg.memory_window
        )
        self.memory_starts_with_h0 = True  # zeros for an LM; the bridged encoder state for translation
        # [W_1 W_2] [h_t ; r_t] (+ b with --combination-bias)
        self.output = nn.Linear(2 * hidden + source_dim, cfg.embed_dim, bias=cfg.combination_bias)
        self.reset_parameters()

    def selection_gates(self, states):
        """``(w_h, w_c)`` for each step; ``None`` stands for all ones."""
        if self.selection == "none":
            return None, None
        gates = torch.sigmoid(self.gates(states))
        if self.selection == "independent":
            return gates.chunk(2, dim=-1)
        if self.selection == "tied":
            return gates, gates
        return gates, 1.0 - gates  # complementary

    def attention_queries(self, states):
        """``k_t * w_h``: the selected key, so that ``e_i = (k_t * w_h) . h_i``."""
        w_h, _ = self.selection_gates(states)
        key = self.key(states)
        return key if w_h is None else key * w_h

    def combine(self, states, context, *source_context):
        """``W_1 h_t + W_2 r_t + b`` with ``r_t = w_c * sum_i alpha_i h_i``; a translation
        decoder adds ``W_3 z_t`` for the source context."""
        _, w_c = self.selection_gates(states)
        relevant = context if w_c is None else w_c * context
        return self.output(torch.cat([states, relevant, *source_context], dim=-1))


@register_model("amsrn", dataclass=AMSRNConfig)
class AMSRNLanguageModel(HistoryAttentionLanguageModel):
    """AMSRN language model; the attention weights run over ``[h_0, ..., h_t]``."""

    decoder_class = AMSRNDecoder


@register_model_architecture("amsrn", "amsrn_ptb")
def amsrn_ptb(args):
    """PTB-sized (the paper gives no size; the medium 2 x 650, dropout 0.5 of the PTB
    literature, as for the attentive LM)."""
    set_arch_defaults(args, embed_dim=650, hidden_size=650, num_layers=2, dropout=0.5)


@register_model_architecture("amsrn", "amsrn_small")
def amsrn_small(args):
    """A quick model for tests and CPU comparisons: 2 x 256, dropout 0.3."""
    set_arch_defaults(args, embed_dim=256, hidden_size=256, num_layers=2, dropout=0.3)
