"""The adaptive softmax's options (``--adaptive-softmax-*``) and every refusal around it: cutoffs that
cannot form clusters, a dictionary not sorted by frequency, a criterion that cannot train it, a sampling
temperature that would not divide its logits. The layer itself: ``modules/adaptive_softmax.py``."""

import math
from dataclasses import dataclass, field
from typing import List, Optional

from fairseq.dataclass import FairseqDataclass
from fairseq.dataclass.configs import GenerationConfig

from ..errors import OptionError
from .checks import needs, number
from .reading import read_options

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


@dataclass(frozen=True)
class AdaptiveSoftmaxOptions:
    """The ``--adaptive-softmax-*`` options of one model config, as given (the cutoffs unparsed)."""

    cutoff: Optional[str]
    untied: bool
    factor: Optional[float]
    dropout: Optional[float]

    @classmethod
    def read(cls, cfg) -> "AdaptiveSoftmaxOptions":
        """From any model's config: an option it lacks (fairseq's own models declare none but the
        cutoff) takes ``AdaptiveSoftmaxConfig``'s default."""
        given = read_options(
            AdaptiveSoftmaxConfig,
            cfg,
            "adaptive_softmax_cutoff",
            "adaptive_softmax_untied",
            "adaptive_softmax_factor",
            "adaptive_softmax_dropout",
        )
        return cls(
            given.adaptive_softmax_cutoff,
            bool(given.adaptive_softmax_untied),
            given.adaptive_softmax_factor,
            given.adaptive_softmax_dropout,
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


def check_options(options: AdaptiveSoftmaxOptions, vocab_size: int) -> Optional[List[int]]:
    """The cutoffs of ``options`` checked against the dictionary size, and the options that need
    them or untied tails; returns the cutoffs (``None``: the full softmax)."""
    cutoff = parse_cutoff(options.cutoff)
    untied, factor, dropout = options.untied, options.factor, options.dropout
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
    """Refuse cutoffs that leave a special symbol out of the head or give it no word, and untied tails
    too narrow to read ``h``: fairseq's tail ``k`` projects it to ``int(d // factor^(k+1))`` dimensions."""
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
    start = dictionary.nspecial
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


def uses_adaptive_softmax(model) -> bool:
    return getattr(getattr(model, "decoder", None), "adaptive_softmax", None) is not None


# translation: label smoothing spreads mass over the whole vocabulary, so its criteria must form the
# whole distribution whatever the output layer (ours gives it, exact, from get_normalized_probs)
SMOOTHING_CRITERIA = ("label_smoothed_cross_entropy", "label_smoothed_cross_entropy_with_alignment")


def check_criterion(criterion_cfg, adaptive: bool, translation: bool = False) -> None:
    """Refuse, before it is built, a criterion that cannot train an adaptive softmax at its speed: one that
    does not ask the decoder for ``target_log_probs`` (a translation model may also use label smoothing,
    whose smoothing term needs the whole distribution anyway)."""
    from fairseq.criterions import CRITERION_REGISTRY

    # the criterion's name: a dataclass config holds it as ``_name``, a legacy Namespace as ``criterion``
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
    """Refuse a ``--temperature`` other than 1 for a model whose decoder's first output, which fairseq's
    generator divides by it, is not the logits of its distribution (the adaptive softmax, the pointer)."""
    temperature = read_options(GenerationConfig, args, "temperature").temperature
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


class OutputLayerChecks:
    """Put before a fairseq language-modelling task class: the task checks its criterion and its
    sampling temperature against the output layer of the model it built (``check_criterion``,
    ``check_temperature``)."""

    trains_adaptive_softmax = False  # whether the model ``build_model`` gave has an adaptive softmax

    def build_model(self, cfg, *args, **kwargs):
        model = super().build_model(cfg, *args, **kwargs)
        self.trains_adaptive_softmax = uses_adaptive_softmax(model)
        return model

    def build_generator(self, models, args, *rest, **kwargs):
        check_temperature(models, args)
        return super().build_generator(models, args, *rest, **kwargs)

    def build_criterion(self, cfg, *args, **kwargs):
        check_criterion(cfg, self.trains_adaptive_softmax)
        return super().build_criterion(cfg, *args, **kwargs)
