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

Tied, the tails read ``h`` at full width against the embedding rows of their words (as
awd-lstm-lm's ``SplitCrossEntropyLoss`` does), so the model keeps one word vector per word
and no parameter is unused in a step; only ``U, u`` (one row per cluster) are new. Untied
tails are fairseq's (``fairseq.modules.AdaptiveSoftmax``'s head and tail modules, whose
parameters we reuse); the output bias ``b`` is the decoder's in both cases.

Why not fairseq's ``AdaptiveSoftmax`` methods: ``get_log_prob(h, target)`` fills a tail only
for the rows whose target lies there (log p = 0 elsewhere) and writes in place (no backward:
dynamic evaluation needs one); ``adaptive_loss`` gives ``ignore_index=pad`` to the shifted
tail targets, dropping the within-cluster term of the word ``c_k + pad``; it cannot tie its
tails to a plain embedding. Here ``log_probs`` forms the whole distribution (summing to 1,
differentiable) and ``target_log_probs`` the target's log probability alone, each tail
computed only for the rows whose target lies in it; both in float32.
"""

import math
from dataclasses import dataclass, field
from typing import List, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F
from fairseq.dataclass import FairseqDataclass
from torch import Tensor

from ..errors import OptionError
from ..option_checks import needs, number

UNTIED_FACTOR, UNTIED_DROPOUT = 4.0, 0.0


@dataclass
class AdaptiveSoftmaxConfig(FairseqDataclass):
    adaptive_softmax_cutoff: Optional[str] = field(
        default=None,
        metadata={
            "help": "use the adaptive softmax, its head and each tail cluster ending at these word ids, "
            "e.g. 2000,10000 (default: the full softmax)"
        },
    )
    adaptive_softmax_untied: bool = field(
        default=False,
        metadata={
            "help": "give the adaptive softmax's tails their own projections and word vectors (fairseq's "
            "AdaptiveSoftmax) instead of the tied embedding rows at full width"
        },
    )
    adaptive_softmax_factor: Optional[float] = field(
        default=None, metadata={"help": "untied tails only: tail k projects h to d / factor^k dimensions (default 4)"}
    )
    adaptive_softmax_dropout: Optional[float] = field(
        default=None,
        metadata={"help": "untied tails only: dropout between a tail's projection and its words (default 0)"},
    )


def parse_cutoff(text, given_blank_ok: bool = False) -> Optional[List[int]]:
    """``"2000,10000"`` (or a list) -> ``[2000, 10000]``; ``None`` -> ``None``. A list with no
    word id in it (``","``, ``""``, ``" "``) is refused: it would silently train the full softmax
    (``given_blank_ok``: read it as ``None``, for comparing what a checkpoint saved)."""
    if text is None:
        return None
    if isinstance(text, (list, tuple)):
        values = list(text)
    else:
        try:
            values = [int(v) for v in str(text).strip("[]() ").split(",") if v.strip()]
        except ValueError:
            raise OptionError(
                f"--adaptive-softmax-cutoff {text}: expected comma-separated word ids, e.g. 2000,10000"
            ) from None
    if not values and not given_blank_ok:
        raise OptionError(
            f"--adaptive-softmax-cutoff {text!r} holds no word id: give the cutoffs, comma-separated "
            "(e.g. 2000,10000), or drop the option for the full softmax"
        )
    return [int(v) for v in values] or None


def check_options(cfg, vocab_size: int) -> Optional[List[int]]:
    """The cutoffs of ``cfg`` checked against the dictionary size, and the options that need
    them or untied tails; returns the cutoffs (``None``: the full softmax)."""
    cutoff = parse_cutoff(getattr(cfg, "adaptive_softmax_cutoff", None))
    untied = bool(getattr(cfg, "adaptive_softmax_untied", False))
    factor = getattr(cfg, "adaptive_softmax_factor", None)
    dropout = getattr(cfg, "adaptive_softmax_dropout", None)
    for flag, given in (
        ("--adaptive-softmax-untied", untied),
        ("--adaptive-softmax-factor", factor is not None),
        ("--adaptive-softmax-dropout", dropout is not None),
    ):
        needs(
            flag,
            given,
            "--adaptive-softmax-cutoff",
            cutoff is not None,
            " (e.g. 2000,10000: the head's end, then each tail cluster's)",
        )
    for flag, given in (
        ("--adaptive-softmax-factor", factor is not None),
        ("--adaptive-softmax-dropout", dropout is not None),
    ):
        needs(
            flag,
            given,
            "--adaptive-softmax-untied",
            untied,
            " (it shapes the untied tails' projections; the tied "
            "tails, the default, have none: they read h at full width against the embedding rows)",
        )
    number("--adaptive-softmax-factor", factor, above=0, why="tail k projects h to d / factor^k dimensions")
    number("--adaptive-softmax-dropout", dropout, least=0, at_most=1, why="a dropout probability lies in [0, 1]")
    if cutoff is None:
        return None
    if any(b <= a for a, b in zip(cutoff, cutoff[1:])) or cutoff[0] < 1:
        raise OptionError(
            f"--adaptive-softmax-cutoff {','.join(map(str, cutoff))}: the cutoffs must be positive "
            "and strictly increasing (head end, then each tail cluster's end), e.g. 2000,10000"
        )
    if cutoff[-1] >= vocab_size:
        raise OptionError(
            f"--adaptive-softmax-cutoff {','.join(map(str, cutoff))}: every cutoff must lie below the "
            f"dictionary's size ({vocab_size} with its special symbols and padding); the last "
            "cluster runs to the end by itself"
        )
    return cutoff


def check_clusters(
    cutoff: List[int], nspecial: int, input_dim: int, untied: bool = False, factor: Optional[float] = None
) -> None:
    """Refuse cutoffs that leave a special symbol out of the head, and untied tails too narrow to
    read ``h``. ``--adaptive-softmax-cutoff 1,2,3`` put ``<pad>`` and ``</s>`` (which ends every
    line: the most frequent token) into one-word clusters and every word out of the head; fairseq's
    untied tail ``k`` projects ``h`` to ``int(d // factor^(k+1))`` dimensions, which rounds to 0 for
    ``d < factor^(k+1)``: a (0, d) projection whose words get a distribution that ignores the
    context, trained without a word."""
    given = ",".join(map(str, cutoff))
    if cutoff[0] <= nspecial:
        what = (
            f"puts special symbols (ids 0-{nspecial - 1}: <s>, <pad>, </s>, <unk>; </s> ends every line) into tail "
            "clusters"
            if cutoff[0] < nspecial
            else f"gives the head the {nspecial} special symbols and no word"
        )
        raise OptionError(
            f"--adaptive-softmax-cutoff {given}: a head ending at id {cutoff[0]} {what}: start the "
            f"cutoffs above {nspecial} (the head holds the special symbols and the most frequent words), "
            "e.g. 2000,10000"
        )
    if not untied:
        return
    factor = UNTIED_FACTOR if factor is None else float(factor)
    tails = len(cutoff)
    narrow = [k for k in range(tails) if int(input_dim // factor ** (k + 1)) < 1]
    if not narrow:
        return
    k = narrow[0]
    most = max((n for n in range(1, tails + 1) if int(input_dim // factor**n) >= 1), default=0)
    largest = math.floor(input_dim ** (1.0 / tails) * 100) / 100
    while largest > 0 and int(input_dim // largest**tails) < 1:  # float rounding at the edge
        largest = round(largest - 0.01, 2)
    fewer = f", at most {most} cutoff{'s' if most > 1 else ''} at this factor" if most else ""
    raise OptionError(
        f"--adaptive-softmax-untied with --adaptive-softmax-factor {factor:g}: tail {k + 1} of {tails} "
        f"(--adaptive-softmax-cutoff {given}) would project the decoder's {input_dim}-dimensional output "
        f"(--embed-dim) to {input_dim} // {factor:g}^{k + 1} = 0 dimensions, so its words would ignore "
        f"the context: use --adaptive-softmax-factor {largest:g} or less{fewer}, or a larger --embed-dim"
    )


def check_sorted_by_frequency(dictionary) -> None:
    """The head must hold the most frequent words: refuse a dictionary whose counts rise after
    the special symbols (fairseq's zero-count ``madeupword`` padding at the end excepted)."""
    counts, symbols = dictionary.count, dictionary.symbols
    start = getattr(dictionary, "nspecial", 4)
    previous = None
    for index in range(start, len(counts)):
        if counts[index] == 0 and symbols[index].startswith("madeupword"):
            continue
        if previous is not None and counts[index] > counts[previous]:
            raise OptionError(
                f"the adaptive softmax needs the dictionary sorted by frequency (its head holds the most "
                f"frequent words), but it lists '{symbols[previous]}' (count {counts[previous]}) before "
                f"'{symbols[index]}' (count {counts[index]}): rebuild it with fairseq-preprocess without "
                "--srcdict (it sorts by count), or drop --adaptive-softmax-cutoff"
            )
        previous = index


class AdaptiveSoftmax(nn.Module):
    """``log_probs(h, E, b)`` (..., V) and ``target_log_probs(h, target, E, b)`` (...); ``E``
    and ``b`` are the decoder's tied embedding weight and output bias (passed in, so the
    embedding is owned and saved once, by the decoder)."""

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
        check_clusters(list(cutoff), getattr(dictionary, "nspecial", 4), input_dim, untied, factor)
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
        """The tied word rows and biases of the head and of each tail: one ``split`` (its backward
        writes the embedding's gradient once, where a slice per band would fill a V x d zero tensor each)."""
        sizes = [self.cutoff[0]] + [hi - lo for lo, hi in self.bands]
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
        the rows whose target lies in it (on none, it still joins the graph: no parameter is
        unused in a step, as DDP's default backend requires)."""
        h = features.reshape(-1, features.size(-1))
        flat = target.reshape(-1)
        cluster = torch.bucketize(flat, self.boundaries, right=True)  # 0: the head; k + 1: tail k
        weights, biases = self.split(weight, bias)
        head = self.head_log_probs(h, weights, biases)
        head_index = torch.where(cluster.eq(0), flat, self.cutoff[0] + cluster - 1)
        scores = head.gather(1, head_index.unsqueeze(1)).squeeze(1)
        for k, (lo, _) in enumerate(self.bands):
            rows = cluster.eq(k + 1).nonzero().squeeze(1)
            within = self.tail_log_probs(k, h.index_select(0, rows), weights, biases)
            scores = scores.index_add(0, rows, within.gather(1, (flat[rows] - lo).unsqueeze(1)).squeeze(1))
        return scores.view(target.shape)

    def forward(self, *args, **kwargs):
        raise OptionError(
            "this model's adaptive softmax is trained by --criterion attention_cross_entropy "
            "(fairseq's adaptive_loss drops a word's within-cluster term and cannot read tied tails)"
        )


def uses_adaptive_softmax(model) -> bool:
    return getattr(getattr(model, "decoder", None), "adaptive_softmax", None) is not None


# translation: label smoothing spreads mass over the whole vocabulary, so its criteria must form the
# whole distribution whatever the output layer (ours gives it, exact, from get_normalized_probs)
SMOOTHING_CRITERIA = ("label_smoothed_cross_entropy", "label_smoothed_cross_entropy_with_alignment")


def check_criterion(criterion_cfg, adaptive: bool, translation: bool = False) -> None:
    """Only a criterion that asks the decoder for ``target_log_probs`` trains an adaptive
    softmax at its speed; fairseq's would form the whole distribution at every step
    (``cross_entropy``: the right loss, from ``get_normalized_probs``, at the full softmax's cost)
    or read fairseq's own module (``adaptive_loss``): refused by name, before the criterion is
    built (``adaptive_loss`` would first fail on the DDP backend). A translation model may also
    use a label-smoothing criterion, whose smoothing term needs the whole distribution."""
    from fairseq.criterions import CRITERION_REGISTRY

    name = getattr(criterion_cfg, "_name", None) or getattr(criterion_cfg, "criterion", None)
    if not adaptive or getattr(CRITERION_REGISTRY.get(name), "reads_target_log_probs", False):
        return
    if translation and name in SMOOTHING_CRITERIA:
        return
    raise OptionError(
        f"--criterion {name} cannot train a model with --adaptive-softmax-cutoff at the adaptive "
        "softmax's speed (it forms the whole distribution, or expects fairseq's own "
        "AdaptiveSoftmax): use --criterion attention_cross_entropy"
        + (
            " (or label_smoothed_cross_entropy, whose smoothing term reads the whole distribution anyway)"
            if translation
            else ""
        )
    )


def check_criterion_of(task) -> None:
    """fairseq's own tasks (``--task translation``) build the criterion without our check: give
    ``task`` a ``build_criterion`` that makes it first (fairseq-train builds the model, then the
    criterion, on the same task)."""
    build = task.build_criterion
    if getattr(build, "checks_adaptive_softmax", False):
        return

    def build_criterion(cfg, *args, **kwargs):
        check_criterion(cfg, True, translation=True)
        return build(cfg, *args, **kwargs)

    build_criterion.checks_adaptive_softmax = True
    task.build_criterion = build_criterion


def check_temperature(models, args) -> None:
    """fairseq's generator divides the decoder's first output by ``--temperature``: logits for the
    full softmax, but the features for the adaptive softmax (fairseq's own included) and the
    pointer's vocabulary logits before its mixture, so any other temperature than 1 would sample
    from a distribution nobody asked for."""
    temperature = getattr(args, "temperature", 1.0)
    if temperature == 1.0:
        return
    for model in models:
        decoder = getattr(model, "decoder", None)
        if uses_adaptive_softmax(model) or hasattr(decoder, "copy_posterior"):
            raise OptionError(
                f"--temperature {temperature}: fairseq divides the decoder's first output by it, "
                f"which for {model.__class__.__name__} (adaptive softmax or pointer) is not the "
                "logits of its distribution: sample at --temperature 1"
            )


def build_adaptive_softmax(cfg, dictionary, input_dim: int) -> Optional[AdaptiveSoftmax]:
    """The output layer ``cfg`` asks for: ``None`` for the full softmax."""
    cutoff = check_options(cfg, len(dictionary))
    if cutoff is None:
        return None
    return AdaptiveSoftmax(
        dictionary,
        input_dim,
        cutoff,
        bool(getattr(cfg, "adaptive_softmax_untied", False)),
        getattr(cfg, "adaptive_softmax_factor", None),
        getattr(cfg, "adaptive_softmax_dropout", None),
    )
