"""Attention of a decoder over the encoder's states (the translation models' source side).

Luong et al. (2015) "general" score, the one fairseq's LSTM decoder uses:

    score(h_t, s_j) = h_t^T W_a s_j,    a_t = softmax_j score(h_t, s_j),    z_t = sum_j a_tj s_j

There is no input feeding (z_{t-1} is not fed back into the LSTM), so the contexts of all
target steps are one batched matrix product after a single LSTM call, as for the history
attention.
"""

from typing import Tuple

import torch
import torch.nn as nn
from torch import Tensor

from .history_attention import masked_softmax


class SourceAttention(nn.Module):
    def __init__(self, query_dim: int, source_dim: int):
        super().__init__()
        self.query_proj = nn.Linear(query_dim, source_dim, bias=False)  # W_a

    def forward(self, queries: Tensor, source: Tensor, source_padding: Tensor) -> Tuple[Tensor, Tensor]:
        """``queries (B,T,d)``, ``source (B,S,C)``, ``source_padding (B,S)`` True at pads.
        Returns the contexts ``(B,T,C)`` and the weights ``(B,T,S)``."""
        scores = torch.bmm(self.query_proj(queries), source.transpose(1, 2))
        weights = masked_softmax(scores, ~source_padding.unsqueeze(1))
        return torch.bmm(weights, source), weights
