"""Causal attention of a recurrent model over its own earlier hidden states, shared by the attentive LM
(Salton et al. 2017), AMSRN (Liu et al. 2016), the Pointer Sentinel-LSTM and the translation decoders.

The models differ in the score (``SingleScore``, ``CombinedScore``, ``DotScore``), in whether the memory
holds ``h_t`` and starts with an initial slot ``h_0``, and in its window. The attention never feeds back
into the recurrence, so a whole sequence is attended in a few batched matrix products under a causal mask.
"""

from typing import Dict, Optional, Tuple

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor

from ..errors import OptionError
from . import cuda_graphs  # cuda_graphs.capturing(): whether a CUDA graph records this pass

Pairs = Tuple[Tensor, Tensor]  # the query and slot indices of the (query, slot) pairs a score computes
INITIAL_SLOT = -(2**40)  # the time of the initial slot h_0: before any state, never out of the window
# elements of a score intermediate per chunk of queries when no graph is built: fewer on the CPU
# (eval-lm's memory on long blocks), more on a GPU, where every chunk is another round of kernel
# launches
CHUNK_ELEMENTS = {"cpu": 2**24, "cuda": 2**27}
PAIR_CACHE = 512  # chunk geometries whose pair indices a module keeps (training: one per sample length)


class SingleScore(nn.Module):
    """Salton et al. Eq. 9: ``single(h_i) = v . tanh(W_s h_i)``; the query is not used."""

    def __init__(self, state_dim: int, attention_dim: int):
        super().__init__()
        self.key_proj = nn.Linear(state_dim, attention_dim, bias=False)
        self.v = nn.Linear(attention_dim, 1, bias=False)

    def keys(self, memory: Tensor) -> Tensor:
        """A scalar per memory slot: ``(B, S, d) -> (B, S, 1)``."""
        return self.v(torch.tanh(self.key_proj(memory)))

    def forward(self, queries: Tensor, keys: Tensor, pairs: Optional[Pairs] = None) -> Tensor:
        """Scores ``(B, Q, S)``; ``pairs`` are not needed: the grid is a free broadcast."""
        return keys.transpose(1, 2).expand(-1, queries.size(1), -1)


class CombinedScore(nn.Module):
    """Salton et al. Eq. 10: ``combined(h_i, h_t) = v . tanh(W_s h_i + W_q h_t)``.

    The additive form needs an ``attention_dim`` vector per (query, slot) pair; with ``reads_pairs``
    the caller passes the indices of the pairs the attention may read, and only those are computed.
    """

    reads_pairs = True

    def __init__(self, state_dim: int, attention_dim: int):
        super().__init__()
        self.key_proj = nn.Linear(state_dim, attention_dim, bias=False)
        self.query_proj = nn.Linear(state_dim, attention_dim, bias=False)
        self.v = nn.Linear(attention_dim, 1, bias=False)

    def keys(self, memory: Tensor) -> Tensor:
        return self.key_proj(memory)

    def forward(self, queries: Tensor, keys: Tensor, pairs: Optional[Pairs] = None) -> Tensor:
        """Scores ``(B, Q, S)``; with ``pairs`` (the query and slot indices of the pairs read), those
        outside them are left at 0 (the caller masks them)."""
        projected = self.query_proj(queries)
        if pairs is None:
            return self.v(torch.tanh(keys.unsqueeze(1) + projected.unsqueeze(2))).squeeze(-1)
        query_index, slot_index = pairs
        # in place: the sum and its tanh share one (B, pairs, A) buffer, the one autograd keeps
        hidden = keys[:, slot_index]
        hidden += projected[:, query_index]
        pair_scores = self.v(hidden.tanh_()).squeeze(-1)
        scores = pair_scores.new_zeros(queries.size(0), queries.size(1), keys.size(1))
        scores[:, query_index, slot_index] = pair_scores
        return scores

    def intermediate_size(self, keys: Tensor) -> int:
        """Elements per query of the ``tanh`` intermediate, which sizes the query chunks."""
        return keys.size(0) * keys.size(1) * keys.size(2)


class DotScore(nn.Module):
    """``score(h_i, q_t) = q_t . h_i``: the memory is its own key, the caller builds the query
    (AMSRN: ``e_i = k_t . (w_h * h_i) = (k_t * w_h) . h_i``, one batched matrix product)."""

    def keys(self, memory: Tensor) -> Tensor:
        return memory

    def forward(self, queries: Tensor, keys: Tensor, pairs: Optional[Pairs] = None) -> Tensor:
        """Scores ``(B, Q, S)``; ``pairs`` are not needed: one matrix product is cheaper whole."""
        return torch.bmm(queries, keys.transpose(1, 2))


def masked_softmax(scores: Tensor, allowed: Tensor) -> Tensor:
    """Softmax over the last dim restricted to ``allowed``; a row with nothing allowed is all
    zeros (an empty memory gives a zero context, never NaN, and a finite gradient)."""
    filled = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)
    return F.softmax(filled, dim=-1).masked_fill(~allowed, 0.0)


class CausalHistoryAttention(nn.Module):
    """``c_t = sum_i a_i h_i`` with ``a = softmax_i score(h_i, h_t)`` over earlier states
    (Salton et al. Eq. 3-4; AMSRN's ``alpha``).

    Args:
        score: a score module with ``keys(memory)`` and ``forward(queries, keys, pairs)``; a
            score with ``reads_pairs`` gets ``pairs``, the indices of the (query, slot) pairs that
            will be read, so it may compute only those.
        include_current: the memory runs to ``h_t`` instead of ``h_{t-1}``.
        initial_slot: the memory starts with the initial state ``h_0 = 0``.
        window: remember only the ``window`` most recent states (0: the whole sample).
        chunk_elements: bound on the elements of a score intermediate when no graph is built;
            the queries are processed in chunks so that long blocks (eval-lm's) stay in a small
            budget. ``None``: sized for the device (``CHUNK_ELEMENTS``).
    """

    def __init__(
        self,
        score: nn.Module,
        include_current: bool = False,
        initial_slot: bool = False,
        window: int = 0,
        chunk_elements: Optional[int] = None,
    ):
        super().__init__()
        if window < 0:
            raise OptionError(f"the memory window must be >= 0 (0 = whole sample), got {window}")
        self.score = score
        self.include_current = include_current
        self.initial_slot = initial_slot
        self.window = window
        self.chunk_elements = chunk_elements
        self._pairs_by_geometry = {}
        self._pairs_in_graphs = {}  # read by a CUDA graph at every replay: never freed

    def _allowed(self, query_times: Tensor, slot_times: Tensor) -> Tensor:
        """Which memory slots each query may read: ``(Q,) x (S,) -> (Q, S)`` (tensors, or numpy
        arrays on the host).

        Times count states from 1 (``h_1`` after the chunk's first token); states carried
        from earlier chunks have times <= 0; the initial slot has time ``INITIAL_SLOT``.
        """
        newest = query_times[:, None] - (0 if self.include_current else 1)
        slots = slot_times[None, :]
        allowed = slots <= newest
        if self.window > 0:
            allowed &= slots > newest - self.window
        if self.initial_slot:
            allowed |= slots == INITIAL_SLOT  # h_0 is always remembered: it is no earlier word
        return allowed

    def _slot_times(self, slots: int, lead: int):
        """The time of each of ``slots`` memory slots, ``lead`` of them before ``h_1`` (numpy)."""
        times = np.arange(slots) - lead + 1
        if self.initial_slot:
            times[0] = INITIAL_SLOT
        return times

    def _pairs(self, start: int, end: int, slots: int, lead: int, device) -> Pairs:
        """The (query, slot) pairs queries ``start..end-1`` may read among the first ``slots``
        slots: ``_allowed`` on the host (it follows from the shapes alone), its indices in the
        order ``nonzero`` gives them, kept per geometry (training meets one per sample length)."""
        key = (start, end, slots, lead, self.include_current, self.initial_slot, self.window, str(device))
        pairs = self._pairs_by_geometry.get(key) or self._pairs_in_graphs.get(key)
        if pairs is None:
            allowed = self._allowed(np.arange(start + 1, end + 1), self._slot_times(slots, lead))
            pairs = tuple(torch.from_numpy(index).to(device, non_blocking=True) for index in allowed.nonzero())
            if len(self._pairs_by_geometry) >= PAIR_CACHE:
                self._pairs_by_geometry.clear()
            self._pairs_by_geometry[key] = pairs
        if cuda_graphs.capturing():
            self._pairs_in_graphs[key] = pairs
        return pairs

    def _attend(self, queries, memory, keys, allowed, pairs=None) -> Tuple[Tensor, Tensor]:
        """``allowed`` ``(B, Q, S)``; ``pairs``: the indices of the (query, slot) pairs read, the
        same for every row (what a pairwise score computes)."""
        scores = self.score(queries, keys, pairs)
        weights = masked_softmax(scores, allowed)
        return torch.bmm(weights, memory), weights

    def _initial(self, states: Tensor, initial: Optional[Tensor]) -> Tensor:
        """The initial slot ``(B, 1, d)``: the given initial state ``h_0`` (a translation
        decoder's, bridged from the encoder), else zeros."""
        return states.new_zeros(states.size(0), 1, states.size(2)) if initial is None else initial[:, None]

    def forward(
        self,
        states: Tensor,
        padding_mask: Optional[Tensor] = None,
        queries: Optional[Tensor] = None,
        initial: Optional[Tensor] = None,
        past: Optional[Tensor] = None,
        past_padding: Optional[Tensor] = None,
    ) -> Tuple[Tensor, Tensor]:
        """Full sequence. ``states``: ``(B, T, d)``; ``padding_mask``: ``(B, T)``, True at pads;
        ``queries``: what the score compares the memory with (default: the states);
        ``initial``: ``(B, d)``, the initial slot's state (default: zeros); ``past``: ``(B, P, d)``,
        states carried from the stream's earlier chunks (read as the ``P`` states before
        ``h_1``, within the window), ``past_padding`` their pads.

        Returns the contexts ``(B, T, d)`` and the weights ``(B, T, S)`` over the memory slots
        ``[h_0 (with the initial slot); past; h_1..h_T]``.
        """
        bsz, tgt_len, _ = states.shape
        queries = states if queries is None else queries
        parts = [states] if past is None else [past, states]
        if self.initial_slot:
            parts.insert(0, self._initial(states, initial))
        memory = torch.cat(parts, dim=1) if len(parts) > 1 else states
        keys = self.score.keys(memory)
        lead = memory.size(1) - tgt_len  # slots before h_1: the initial slot and the past
        slot_times = torch.arange(memory.size(1), device=states.device) - lead + 1
        if self.initial_slot:  # a fill, not a copy of a host scalar (which a CUDA graph cannot record)
            slot_times[:1].fill_(INITIAL_SLOT)
        slot_padding = None
        # applied whether or not it masks anything: asking would read the mask on the host
        if past is not None or padding_mask is not None:

            def pads(mask, length):
                return states.new_zeros(bsz, length, dtype=torch.bool) if mask is None else mask

            slot_padding = torch.cat(
                [
                    pads(None, 1 if self.initial_slot else 0),
                    pads(past_padding, 0 if past is None else past.size(1)),
                    pads(padding_mask, tgt_len),
                ],
                dim=1,
            )

        chunk = self._queries_per_chunk(queries, keys, tgt_len)
        reads_pairs = getattr(self.score, "reads_pairs", False)
        contexts = weights = None
        for start in range(0, tgt_len, chunk):  # one pass unless the score needs a big intermediate
            end = min(tgt_len, start + chunk)
            # memory beyond the chunk's last query is never read: narrow the keys to save work
            last_slot = min(memory.size(1), end + lead)
            query_times = torch.arange(start + 1, end + 1, device=states.device)
            time_allowed = self._allowed(query_times, slot_times[:last_slot])
            allowed = time_allowed.unsqueeze(0)
            if slot_padding is not None:
                allowed = allowed & ~slot_padding[:, None, :last_slot]
            pairs = self._pairs(start, end, last_slot, lead, states.device) if reads_pairs else None
            context, weight = self._attend(
                queries[:, start:end], memory[:, :last_slot], keys[:, :last_slot], allowed.expand(bsz, -1, -1), pairs
            )
            if chunk >= tgt_len:  # the one pass
                return context, F.pad(weight, (0, memory.size(1) - last_slot))
            if contexts is None:  # no graph is built: each chunk writes its queries' rows of the whole
                contexts = context.new_empty(bsz, tgt_len, context.size(2))
                weights = weight.new_zeros(bsz, tgt_len, memory.size(1))
            contexts[:, start:end] = context
            weights[:, start:end, :last_slot] = weight
        return contexts, weights

    def _queries_per_chunk(self, queries: Tensor, keys: Tensor, tgt_len: int) -> int:
        """All queries at once, unless the score builds a big intermediate and no graph keeps it."""
        per_query = getattr(self.score, "intermediate_size", None)
        # where autograd records (training, dynamic evaluation) it keeps every chunk's tanh for the backward:
        # chunks would bound no memory, only multiply the kernel launches
        if per_query is None or (torch.is_grad_enabled() and (queries.requires_grad or keys.requires_grad)):
            return tgt_len
        budget = self.chunk_elements or CHUNK_ELEMENTS.get(keys.device.type, CHUNK_ELEMENTS["cpu"])
        return max(1, budget // max(1, per_query(keys)))

    def _trim(self, slots: Tensor) -> Tensor:
        """Keep the initial slot and the ``window`` most recent states (all when window is 0)."""
        offset = 1 if self.initial_slot else 0
        if self.window == 0 or slots.size(1) - offset <= self.window:
            return slots
        return torch.cat([slots[:, :offset], slots[:, -self.window :]], dim=1)

    def step(
        self,
        state: Tensor,
        cache: Optional[Dict[str, Tensor]],
        query: Optional[Tensor] = None,
        initial: Optional[Tensor] = None,
    ) -> Tuple[Tensor, Tensor, Dict[str, Tensor]]:
        """One incremental step. ``state``: ``(B, 1, d)``; ``cache`` holds the memory so far
        (``None`` at the first step); ``query`` as in ``forward``. Returns the context
        ``(B, 1, d)``, the weights ``(B, 1, S)`` and the new cache (batch first: reorder it
        with ``index_select`` on dim 0).
        """
        if cache is None:
            empty = self._initial(state, initial) if self.initial_slot else state[:, :0]
            cache = {"memory": empty, "keys": self.score.keys(empty)}
        grown = {
            "memory": torch.cat([cache["memory"], state], dim=1),
            "keys": torch.cat([cache["keys"], self.score.keys(state)], dim=1),
        }
        grown = {name: self._trim(slots) for name, slots in grown.items()}
        read = grown if self.include_current else cache
        if read["memory"].size(1) == 0:  # nothing remembered yet: zero context
            context, weights = torch.zeros_like(state), state.new_zeros(state.size(0), 1, 0)
        else:
            allowed = state.new_ones(state.size(0), 1, read["memory"].size(1), dtype=torch.bool)
            context, weights = self._attend(state if query is None else query, read["memory"], read["keys"], allowed)
        return context, weights, grown
