"""The continuous LRU word cache of Kawakami et al. (2017, Sec. 3), kept on tensors.

Per batch row, ``K`` slots hold a word id (``values``, -1 when empty), a key and the time of the slot's
last write. At step t the cache is read, then ``w_t`` is written: into its own slot, the key averaged
``k_i <- (k_i + h_t) / 2``, else into an empty slot or the least recently written one, with key ``h_t``.

    r_t = tanh(W_q h_t + b_q)                    u_{i,t} = v . tanh(W_u k_i + r_t)
    p_mem(i) = softmax_i(u_t)                    p_ptr(w) = sum_i p_mem(i) [m_i = w]
    lambda_t = sigmoid(MLP(h_t))                 p(w_t) = lambda_t p_lm(w_t) + (1 - lambda_t) p_ptr(w_t)
"""

from typing import Dict, Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor

EMPTY = -1


class ContinuousWordCache(nn.Module):
    def __init__(
        self,
        state_size: int,
        cache_size: int = 100,
        attention_dim: Optional[int] = None,
        gate_hidden_dim: Optional[int] = None,
    ):
        super().__init__()
        attention_dim = attention_dim or state_size
        gate_hidden_dim = gate_hidden_dim or state_size
        self.cache_size = cache_size
        self.query = nn.Linear(state_size, attention_dim)  # W_q, b_q
        # W_u, without a bias: W_u of an averaged key is the average of the projected keys, so the
        # slots store W_u k_i and nothing is projected twice
        self.key = nn.Linear(state_size, attention_dim, bias=False)
        self.score = nn.Linear(attention_dim, 1, bias=False)  # v
        # "an MLP with two non-linear transformations ... followed by the logistic sigmoid"
        self.gate = nn.Sequential(
            nn.Linear(state_size, gate_hidden_dim),
            nn.Tanh(),
            nn.Linear(gate_hidden_dim, gate_hidden_dim),
            nn.Tanh(),
            nn.Linear(gate_hidden_dim, 1),
        )

    def empty(self, batch_size: int, like: Tensor) -> Dict[str, Tensor]:
        K = self.cache_size
        return {
            "values": like.new_full((batch_size, K), EMPTY, dtype=torch.long),
            "keys": like.new_zeros(batch_size, K, self.key.out_features),
            "last_write": self.never_written(like.device).expand(batch_size, K).clone(),
            "clock": torch.zeros((), dtype=torch.long, device=like.device),
        }

    def never_written(self, device) -> Tensor:
        """``last_write`` of empty slots: before any real write, lowest index first."""
        return torch.arange(-self.cache_size, 0, device=device)

    def forward(
        self,
        states: Tensor,
        words: Tensor,
        lm_log_probs: Tensor,
        cache: Dict[str, Tensor],
        write_mask: Tensor,
        reset_before: Optional[Tensor] = None,
    ) -> Tuple[Tensor, Tensor, Tensor, Dict[str, Tensor]]:
        """Mix the LM with copies from the cache for a chunk of ``T`` words.

        states (B,T,H): ``h_t``; words (B,T): ``w_t``; lm_log_probs (B,T): ``log p_lm(w_t)``;
        write_mask (B,T): which words enter the cache (not padding); reset_before (B,T):
        empty the row's cache before step t. Returns ``log p(w_t)`` (B,T), the cache
        posterior ``p(z_t | w)`` (B,T), ``lambda_t`` (B,T) and the cache after the chunk.
        """
        queries = torch.tanh(self.query(states))  # r_t for every step at once
        new_keys = self.key(states)  # W_u h_t for every step at once
        copy_probs, has_entries = [], []
        # copies: the writes below are in place (O(B x A) per step, not O(B x K x A))
        values, keys, last_write, clock = (
            cache["values"].clone(),
            cache["keys"].clone(),
            cache["last_write"].clone(),
            cache["clock"],
        )
        never_written = self.never_written(words.device)
        rows = torch.arange(words.size(0), device=words.device)
        # The loop is over time because the cache recurs: step t reads what t-1 wrote.
        for t in range(words.size(1)):
            if reset_before is not None:
                reset = reset_before[:, t, None]
                values = values.masked_fill(reset, EMPTY)
                last_write = torch.where(reset, never_written, last_write)
            occupied = values.ne(EMPTY)
            scores = self.score(torch.tanh(keys + queries[:, t, None])).squeeze(-1)
            p_mem = scores.masked_fill(~occupied, float("-inf")).softmax(-1).nan_to_num(0.0)
            hit = values.eq(words[:, t, None])
            copy_probs.append((p_mem * hit).sum(-1))
            has_entries.append(occupied.any(-1))

            # write w_t: average the key on a hit, else the empty / least recently written slot;
            # one slot per row, in place (rows not written get their old slot back)
            is_hit = hit.any(-1)
            slot = torch.where(is_hit, hit.long().argmax(-1), last_write.argmin(-1))
            at = (rows, slot)
            write, old_key = write_mask[:, t], keys[at]
            key_t = torch.where(is_hit[:, None], (old_key + new_keys[:, t]) / 2, new_keys[:, t])
            keys = keys.index_put_(at, torch.where(write[:, None], key_t, old_key))
            values = values.index_put_(at, torch.where(write, words[:, t], values[at]))
            last_write = last_write.index_put_(at, torch.where(write, clock, last_write[at]))
            clock = clock + 1

        p_ptr = torch.stack(copy_probs, 1)
        gate = self.gate(states).squeeze(-1)  # lambda_t = sigmoid(gate)
        has_entries = torch.stack(has_entries, 1)
        # while a row's cache is empty the LM takes all the mass (lambda = 1): the copies have no support
        log_lm_weight = torch.where(has_entries, F.logsigmoid(gate), torch.zeros_like(gate))
        from_lm = lm_log_probs + log_lm_weight
        # clamped log: p_ptr = 0 must not give log 0 (whose gradient is NaN under torch.where)
        from_cache = F.logsigmoid(-gate) + p_ptr.clamp_min(torch.finfo(p_ptr.dtype).tiny).log()
        copied = p_ptr > 0
        log_probs = torch.where(copied, torch.logaddexp(from_lm, from_cache), from_lm)
        posterior = torch.where(copied, (from_cache - log_probs).exp(), torch.zeros_like(p_ptr))
        # a chunk whose new keys are never read in it (one word long) would leave W_u out of the
        # graph, and DDP (find_unused_parameters=False) then fails: keep it in with a zero
        log_probs = log_probs + 0.0 * new_keys.sum()
        cache = {"values": values, "keys": keys, "last_write": last_write, "clock": clock}
        return log_probs, posterior, log_lm_weight.exp(), cache
