"""The adaptive softmax (Grave, Joulin, Cisse, Grangier & Jegou 2017), tied to the input
embeddings: the output layer of every word model when ``--adaptive-softmax-cutoff`` is given.

With the dictionary sorted by frequency and cutoffs ``c_0 < c_1 < ... < c_{K-1} < V``, the
head scores the ``c_0`` most frequent words and one logit per tail cluster ``k`` (words
``c_{k-1} .. c_k - 1``, the last running to ``V``):

    head(h)   = [E_{0:c_0} h + b_{0:c_0} ; U h + u]                   (c_0 + K logits)
    p(w)      = softmax(head(h))[w]                                    w in the head
    p(w)      = softmax(head(h))[c_0 + k] * softmax(tail_k(h))[w]      w in tail cluster k
    tail_k(h) = E_k h + b_k                                            (tied, the default)
    tail_k(h) = W_k (P_k h) + b_k,  P_k: d -> d / factor^k             (--adaptive-softmax-untied)

Untied tails are ``fairseq.modules.AdaptiveSoftmax``'s head and tail modules. Options and refusals:
``options/adaptive_softmax.py``; why fairseq's own methods are not used: docs/models.md.
"""

from typing import List, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor

from ..errors import OptionError
from ..options.adaptive_softmax import (
    UNTIED_DROPOUT,
    UNTIED_FACTOR,
    AdaptiveSoftmaxOptions,
    check_clusters,
    check_options,
    check_sorted_by_frequency,
)


class AdaptiveSoftmax(nn.Module):
    """The head and tails of the adaptive softmax, read by ``log_probs(h, E, b)`` (..., V) and
    ``target_log_probs(h, target, E, b)`` (...). ``E`` and ``b``, the decoder's tied embedding weight
    and output bias, are passed in, so the decoder alone owns and saves them."""

    def __init__(
        self,
        dictionary,
        input_dim: int,
        cutoff: List[int],
        untied: bool = False,
        factor: Optional[float] = None,
        dropout: Optional[float] = None,
    ):
        super().__init__()
        check_clusters(list(cutoff), dictionary.nspecial, input_dim, untied, factor)
        check_sorted_by_frequency(dictionary)
        self.vocab_size = len(dictionary)
        self.cutoff = list(cutoff)
        self.bands = list(zip(self.cutoff, self.cutoff[1:] + [self.vocab_size]))  # each tail's [lo, hi)
        self.register_buffer("boundaries", torch.tensor(self.cutoff), persistent=False)
        if untied:
            from fairseq.modules import AdaptiveSoftmax as FairseqAdaptiveSoftmax

            fairseq_layer = FairseqAdaptiveSoftmax(
                self.vocab_size,
                input_dim,
                self.cutoff,
                UNTIED_DROPOUT if dropout is None else dropout,
                UNTIED_FACTOR if factor is None else factor,
            )
            self.head, self.tails = fairseq_layer.head, fairseq_layer.tail  # (d -> c_0 + K), [d -> |band|]
            self.clusters = None
        else:
            self.head, self.tails = None, None
            self.clusters = nn.Linear(input_dim, len(self.bands))  # U h + u: one logit per tail

    def split(self, weight: Tensor, bias: Tensor):
        """The tied word rows and biases of the head and of each tail."""
        sizes = [self.cutoff[0]] + [hi - lo for lo, hi in self.bands]
        # one split: its backward writes the embedding's gradient once (a slice per band fills a V x d zero tensor each)
        return weight.split(sizes), bias.split(sizes)

    def head_log_probs(self, h: Tensor, weights, biases) -> Tensor:
        """``log softmax(head(h))`` (N, c_0 + K) in float32."""
        if self.head is not None:
            logits = self.head(h)
            logits = torch.cat([logits[:, : self.cutoff[0]] + biases[0], logits[:, self.cutoff[0] :]], dim=-1)
        else:  # one product for the head's words and the cluster logits
            logits = F.linear(
                h, torch.cat([weights[0], self.clusters.weight]), torch.cat([biases[0], self.clusters.bias])
            )
        return F.log_softmax(logits.float(), dim=-1)

    def tail_log_probs(self, k: int, h: Tensor, weights, biases) -> Tensor:
        """``log softmax(tail_k(h))`` (n, |band k|) in float32, within cluster ``k``."""
        if self.tails is None:
            logits = F.linear(h, weights[k + 1], biases[k + 1])
        else:
            logits = self.tails[k](h) + biases[k + 1]
        return F.log_softmax(logits.float(), dim=-1)

    def log_probs(self, features: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
        """The whole distribution ``log p`` (..., V): the head's words, then each cluster's
        log probability plus its words' log probabilities within it."""
        h = features.reshape(-1, features.size(-1))
        weights, biases = self.split(weight, bias)
        head = self.head_log_probs(h, weights, biases)
        parts = [head[:, : self.cutoff[0]]]
        for k in range(len(self.bands)):
            parts.append(
                head[:, self.cutoff[0] + k : self.cutoff[0] + k + 1] + self.tail_log_probs(k, h, weights, biases)
            )
        return torch.cat(parts, dim=-1).view(*features.shape[:-1], self.vocab_size)

    def target_log_probs(self, features: Tensor, target: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
        """``log p(target)`` (...) without forming the distribution: tail ``k`` runs only on
        the rows whose target lies in it."""
        h = features.reshape(-1, features.size(-1))
        flat = target.reshape(-1)
        cluster = torch.bucketize(flat, self.boundaries, right=True)  # 0: the head; k + 1: tail k
        weights, biases = self.split(weight, bias)
        head = self.head_log_probs(h, weights, biases)
        head_index = torch.where(cluster.eq(0), flat, self.cutoff[0] + cluster - 1)
        scores = head.gather(1, head_index.unsqueeze(1)).squeeze(1)
        for k, (lo, _) in enumerate(self.bands):
            # a tail with no row still joins the graph: DDP's default backend needs every parameter used in a step
            rows = cluster.eq(k + 1).nonzero().squeeze(1)
            within = self.tail_log_probs(k, h.index_select(0, rows), weights, biases)
            scores = scores.index_add(0, rows, within.gather(1, (flat[rows] - lo).unsqueeze(1)).squeeze(1))
        return scores.view(target.shape)

    def forward(self, *args, **kwargs):
        raise OptionError(
            "this model's adaptive softmax is trained by --criterion attention_cross_entropy "
            "(fairseq's adaptive_loss drops a word's within-cluster term and cannot read tied tails)"
        )


def build_adaptive_softmax(cfg, dictionary, input_dim: int) -> Optional[AdaptiveSoftmax]:
    """The output layer ``cfg`` asks for: ``None`` for the full softmax."""
    options = AdaptiveSoftmaxOptions.read(cfg)
    cutoff = check_options(options, len(dictionary))
    if cutoff is None:
        return None
    return AdaptiveSoftmax(dictionary, input_dim, cutoff, options.untied, options.factor, options.dropout)
