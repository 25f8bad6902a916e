"""The test-time path in one place: the neural cache (Grave et al. 2017) and dynamic evaluation
(Krause et al. 2018), their options declared, read, refused and handed to a model here alone, the same
for every tool and task that reaches them."""

import sys
import typing
from dataclasses import dataclass, field, fields
from typing import Optional, Tuple

import torch
from fairseq.dataclass.configs import EvalLMConfig

from ..data.task_reading import reads_streams
from ..errors import CheckpointError, OptionError
from ..options.checks import needs, number, whole_batch
from ..options.reading import read_options
from .dynamic_evaluation import (
    DECAY,
    RMS_EPS,
    RULES,
    SEGMENT,
    STATS_BATCHES,
    DynamicEvalSettings,
    DynamicEvaluator,
    check_training_split,
)
from .neural_cache import CACHE_MODELS, LAMBDA, THETA, NeuralCache, cached_log_probs, check_values


@dataclass
class TestTimeOptions:
    """Mixed into the word-level tasks' configs; ``add_arguments`` declares the same for alm-score."""

    __test__ = False  # a dataclass, not a pytest class

    neural_cache_window: int = field(
        default=0, metadata={"help": "test time: mix in a neural cache over the N previous tokens (0: none)"}
    )
    neural_cache_theta: Optional[float] = field(
        default=None, metadata={"help": f"the cache's inverse temperature (default {THETA}; needs the window)"}
    )
    neural_cache_lambda: Optional[float] = field(
        default=None, metadata={"help": f"the cache's weight in the mixture, in [0, 1) (default {LAMBDA})"}
    )
    dynamic_eval_lr: float = field(
        default=0.0, metadata={"help": "test time: the step size of dynamic evaluation after each segment (0: off)"}
    )
    dynamic_eval_decay: Optional[float] = field(
        default=None, metadata={"help": f"the pull back towards the trained weights, in [0, 1] (default {DECAY})"}
    )
    dynamic_eval_rule: Optional[str] = field(
        default=None, metadata={"help": f"the step's rule, {' or '.join(RULES)} (default {RULES[0]})"}
    )
    dynamic_eval_eps: Optional[float] = field(
        default=None, metadata={"help": f"rms: added to each weight's gradient scale (default {RMS_EPS})"}
    )
    dynamic_eval_segment: Optional[int] = field(
        default=None, metadata={"help": f"document_language_modeling: tokens per step (default {SEGMENT})"}
    )
    dynamic_eval_stats_batches: Optional[int] = field(
        default=None,
        metadata={"help": f"rms: training batches that measure the step scale (default {STATS_BATCHES})"},
    )


FLAG = {option.name: "--" + option.name.replace("_", "-") for option in fields(TestTimeOptions)}  # as typed
# the cache's settings after its window, which a config saved by training may hold
SAVED_CACHE_OPTIONS = tuple(name for name in FLAG if name.startswith("neural_cache_") and name != "neural_cache_window")


def add_arguments(parser) -> None:
    """``TestTimeOptions`` as argparse flags: the names, types, defaults and help fairseq's tools take."""
    for option in fields(TestTimeOptions):
        kind = typing.get_args(option.type)[0] if typing.get_origin(option.type) is typing.Union else option.type
        parser.add_argument(
            "--" + option.name.replace("_", "-"), type=kind, default=option.default, help=option.metadata["help"]
        )


def cache_settings(window, theta, lam):
    """The cache's options as a whole: ``(window, theta, lambda)`` with the defaults filled in, or
    ``None`` for no cache; theta or lambda without a window (they would do nothing) refused."""
    window = 0 if window is None else window
    names = ("neural_cache_window", "neural_cache_theta", "neural_cache_lambda")
    check_values(window, theta, lam, tuple(FLAG[name] for name in names))
    for name, value in zip(names[1:], (theta, lam)):
        needs(FLAG[name], value is not None, FLAG[names[0]] + " N", window > 0, " (the cache's size, e.g. 500)")
    if window == 0:
        return None
    return int(window), THETA if theta is None else float(theta), LAMBDA if lam is None else float(lam)


def dynamic_settings(lr, decay=None, rule=None, eps=None, segment=None, stats=None) -> Optional[DynamicEvalSettings]:
    """The ``--dynamic-eval-*`` values as a whole (``None``: not given), with the defaults filled in;
    ``None`` when dynamic evaluation is off (lr 0). Whether a segment may be given depends on the
    model: ``refuse``."""
    lr_flag = FLAG["dynamic_eval_lr"]
    given = {"decay": decay, "rule": rule, "eps": eps, "segment": segment, "stats_batches": stats}
    flag = {name: FLAG[f"dynamic_eval_{name}"] for name in given}
    number(lr_flag, lr, least=0, why="the step size (0: off)")
    for name, value in given.items():
        needs(flag[name], value is not None, lr_flag, lr > 0, " (> 0: the step size, e.g. 0.01)")
    number(flag["decay"], decay, least=0, at_most=1, why="the share of the way back to the trained weights")
    if rule is not None and rule not in RULES:
        raise OptionError(f"{flag['rule']} {rule}: choose {' or '.join(RULES)}")
    for name in ("eps", "stats_batches"):
        needs(flag[name], given[name] is not None, f"{flag['rule']} rms", rule == "rms")
    number(flag["eps"], eps, above=0, why="it keeps the rms step finite where MS is 0")
    number(flag["stats_batches"], stats, least=1, why="MS is a mean over training batches")
    number(flag["segment"], segment, least=1, why="a segment holds at least one token")
    if lr == 0:
        return None
    return DynamicEvalSettings(
        float(lr),
        DECAY if decay is None else float(decay),
        rule or RULES[0],
        RMS_EPS if eps is None else float(eps),
        SEGMENT if segment is None else int(segment),
        STATS_BATCHES if stats is None else int(stats),
    )


@dataclass(frozen=True)
class EvaluationOptions:
    cache: Optional[Tuple[int, float, float]] = None  # (window, theta, lambda); None: no cache
    dynamic: Optional[DynamicEvalSettings] = None  # the rule, its defaults filled in; None: off
    segment_given: bool = False  # --dynamic-eval-segment given (a sentence model's segment is its sentence)
    stream_burn_in: int = 0  # words each stream but the first reads before it scores (document task)
    lines_alone: bool = False  # alm-score --context line: each line scored from a fresh state

    @classmethod
    def read(cls, args) -> "EvaluationOptions":
        """From parsed arguments (a task's config or alm-score's command line): an option they lack takes
        ``TestTimeOptions``' default, which leaves it off; ``--stream-burn-in``, the document task's alone,
        is 0 where they lack it (no burn-in); ``--context``, alm-score's alone, scores each line alone where
        it is ``line``."""
        given = read_options(TestTimeOptions, args, *(option.name for option in fields(TestTimeOptions)))
        cache = cache_settings(given.neural_cache_window, given.neural_cache_theta, given.neural_cache_lambda)
        dynamic = dynamic_settings(
            given.dynamic_eval_lr or 0.0,
            given.dynamic_eval_decay,
            given.dynamic_eval_rule,
            given.dynamic_eval_eps,
            given.dynamic_eval_segment,
            given.dynamic_eval_stats_batches,
        )
        burn_in = getattr(args, "stream_burn_in", 0)  # the document task's option (tasks/ declares it); absent: none
        lines_alone = getattr(args, "context", None) == "line"  # alm-score's option (cli/ declares it)
        return cls(cache, dynamic, given.dynamic_eval_segment is not None, burn_in, lines_alone)

    def attach(self, model, training_batches=None, data: Optional[str] = None):
        """Give ``model`` these options' neural cache and dynamic evaluator, and no other (``None`` where an
        option is off); ``training_batches(n, segment)``: n of the task's training batches, which rms dynamic
        evaluation reads from ``data``'s training split."""
        refuse(self, model)
        if self.dynamic is not None and self.dynamic.rule == "rms" and data:
            check_training_split(data)
        if isinstance(model, TestTimeModel):
            model.neural_cache = NeuralCache(*self.cache) if self.cache is not None else None
            evaluator = DynamicEvaluator(model, self.dynamic, training_batches) if self.dynamic is not None else None
            model.dynamic_eval = evaluator
        return model

    def prepare(self, loaded, streams: bool):
        """Refuse what these options cannot score with ``loaded`` (the ``(model, task)`` pairs scored
        together, their tasks reading ``streams`` or sentences), then attach them to each model: alm-score's
        one call, before it reads its input."""
        refuse(self, loaded[0][0], segments_are_sentences=not streams, models=len(loaded))
        for model, task in loaded:
            self.attach(model, getattr(task, "dynamic_eval_training_batches", None))

    @property
    def in_corpus_order(self) -> bool:
        """Whether a split is read in corpus order: the cache spans the text, dynamic evaluation adapts along it."""
        return self.cache is not None or self.dynamic is not None

    def burn_in(self) -> int:
        """The words a stream reads before its first scored one: ``--stream-burn-in``, and with the neural
        cache at least its window, so that each stream's cache holds what the one-stream reading's would."""
        if not self.stream_burn_in:
            return 0
        return max(self.stream_burn_in, self.cache[0] if self.cache else 0)


def refuse(
    options: EvaluationOptions,
    model=None,
    *,
    training: bool = False,
    segments_are_sentences: Optional[bool] = None,
    models: int = 1,
) -> None:
    """Refuse a combination the test-time options cannot score, the same line from every entry.

    ``model``: the model that would take them; ``training``: fairseq-train or fairseq-validate, which score
    with the criterion; ``segments_are_sentences``: whether the model's task reads sentences; ``models``: the
    models scored together (an ensemble)."""
    cache, dynamic = options.cache is not None, options.dynamic is not None
    if training and cache:
        raise OptionError(
            "--neural-cache-window is a test-time option (fairseq-eval-lm, alm-score, alm-cache-grid): "
            "nothing is trained, and fairseq-validate scores with the criterion, which never reads the "
            "cache. Drop --neural-cache-* from fairseq-train and fairseq-validate."
        )
    if training and dynamic:
        raise OptionError(
            "--dynamic-eval-lr is a test-time option (fairseq-eval-lm, alm-score, alm-cache-grid): "
            "fairseq-train and fairseq-validate score with the criterion, which never adapts: drop "
            "--dynamic-eval-* from fairseq-train and fairseq-validate"
        )
    name = ("fairseq's " if type(model).__module__.startswith("fairseq.") else "") + type(model).__name__
    if cache and model is not None and not isinstance(model, TestTimeModel):
        raise OptionError(
            f"--neural-cache-window: {name} does not hand its output features to the cache; the neural "
            f"cache works with {CACHE_MODELS}. Drop the --neural-cache-* options for this model."
        )
    if dynamic and model is not None and not isinstance(model, TestTimeModel):
        raise OptionError(
            f"--dynamic-eval-lr: dynamic evaluation adapts the word-level {CACHE_MODELS}, not {name}: drop "
            "the --dynamic-eval-* options for this model"
        )
    if options.segment_given and segments_are_sentences:
        raise OptionError(
            "--dynamic-eval-segment: here a segment is one sentence, read whole from a fresh state "
            "(sentence_language_modeling, the hub's score()): drop the option; alm-score adapts every N "
            "tokens of a model trained on document_language_modeling"
        )
    if cache and options.lines_alone:
        raise OptionError("--neural-cache-window: the cache spans the lines of a document; drop --context line")
    if dynamic and options.lines_alone:
        raise OptionError("--dynamic-eval-lr: the model adapts to the lines it has read, in order: drop --context line")
    if dynamic and models > 1:
        raise OptionError("--dynamic-eval-lr adapts one model to the text: score an ensemble without it")


def refuse_softmax_batch(model, cfg) -> None:
    """Refuse ``fairseq-eval-lm --softmax-batch N`` up front, whatever the batches, for a model that reads
    a batch's output whole (dynamic evaluation, the neural cache, the Pointer Sentinel-LSTM's mixture)."""
    eval_lm = getattr(cfg, "eval_lm", None)  # the eval-lm group: fairseq-eval-lm's config holds it, others do not
    softmax_batch = read_options(EvalLMConfig, eval_lm, "softmax_batch").softmax_batch
    if softmax_batch is None or softmax_batch >= sys.maxsize:  # not given (EvalLMConfig's default: sys.maxsize)
        return
    readers = [
        name
        for name, on in (
            ("dynamic evaluation (one step per whole segment)", getattr(model, "dynamic_eval", None) is not None),
            ("the neural cache", getattr(model, "neural_cache", None) is not None),
            ("the Pointer Sentinel-LSTM's mixture", hasattr(getattr(model, "decoder", None), "copy_posterior")),
        )
        if on
    ]
    if readers:
        raise OptionError(
            f"--softmax-batch {softmax_batch}: fairseq would hand the model slices of a batch's output, "
            f"but {' and '.join(readers)} read{'s' * (len(readers) == 1)} a batch whole: drop --softmax-batch"
        )


def refuse_sentences_alone(path, reader, fix):
    """The one refusal of a stream-trained model scored a sentence at a time from a fresh state (``reader``: what
    would read it so; ``fix``: what reads it as it learned)."""
    raise CheckpointError(
        f"{path} was trained on document streams (--task document_language_modeling), and {reader} scores each "
        f"sentence alone from a fresh state: {fix}"
    )


class TestTimeModel:
    """Put before a fairseq language model class whose decoder gives ``log_probs``, ``target_log_probs``
    and the output features: the model takes the neural cache and dynamic evaluation (``attach``)."""

    __test__ = False  # a mixin, not a pytest class

    neural_cache = None  # a NeuralCache, set by ``attach`` (test time only)
    dynamic_eval = None  # a DynamicEvaluator, set by ``attach`` (test time only)

    def forward(self, src_tokens, **kwargs):
        """With dynamic evaluation (eval mode) the scoring pass keeps its graph: the step after the
        segment is scored is taken at the weights that scored it, from this same forward (the first
        segments are scored at the trained weights too, the reference the step is checked against)."""
        if self.dynamic_eval is None or self.training:
            return super().forward(src_tokens, **kwargs)
        self.dynamic_eval.start()
        self.dynamic_eval.shadow(src_tokens, **kwargs)
        with self.dynamic_eval.recording():
            return super().forward(src_tokens, **kwargs)

    def start_text(self):
        """A new text (an alm-score file, a hub ``score()`` call): the neural cache emptied and, with
        dynamic evaluation, the trained weights back."""
        if self.neural_cache is not None:
            self.neural_cache.reset()
        if self.dynamic_eval is not None:
            self.dynamic_eval.reset()

    def prepare_for_inference_(self, cfg):
        """fairseq-eval-lm calls it before it reads a batch: the place to refuse ``--softmax-batch``
        where the model reads a batch's output whole (before any data loader has started)."""
        refuse_softmax_batch(self, cfg)
        super().prepare_for_inference_(cfg)

    def get_normalized_probs(self, net_output, log_probs, sample=None):
        """The model's distribution; in eval mode, given the batch, with the neural cache mixed in
        (``evaluation/neural_cache.py``) and, with dynamic evaluation, followed by the step on the
        segment (``evaluation/dynamic_evaluation.py``): the scores returned are those before it."""
        adapting = self.dynamic_eval is not None and not self.training and sample is not None
        if (self.neural_cache is None and not adapting) or self.training or sample is None:
            return super().get_normalized_probs(net_output, log_probs, sample)
        target = sample["target"]
        whole_batch(net_output[0], target, "the neural cache and dynamic evaluation")
        with torch.no_grad():
            scores = self.decoder.log_probs(net_output)
        if self.neural_cache is not None:
            scores = cached_log_probs(self.neural_cache, scores, net_output, sample, self.decoder.padding_idx)
        if adapting:
            self.adapt(net_output, target)
        return scores if log_probs else scores.exp()

    def adapt(self, net_output, target):
        """Dynamic evaluation's step on one scored segment (``net_output`` from this model's forward,
        with its graph); returns ``log p(target)`` (1, T) at the weights that scored it."""
        if target.size(0) != 1:
            raise OptionError(
                "dynamic evaluation reads the text one segment at a time: this batch holds "
                f"{target.size(0)}; score with fairseq-eval-lm or alm-score"
            )
        with self.dynamic_eval.recording():
            # the targets' log p alone: the backward never spans the whole distribution (the adaptive
            # softmax: the head, and a tail only for the targets in it)
            scores = self.decoder.target_log_probs(net_output, target)
            real = target.ne(self.decoder.padding_idx)
            trained_nll = self.dynamic_eval.trained_nll(target)
            if real.any():  # a segment of padding alone (a stream's end) takes no step
                self.dynamic_eval.step(-scores[real].mean(), trained_nll)
        return scores.detach()


class TestTimeTask:
    """Put before a word-level fairseq task class whose options (``self.args``) hold ``TestTimeOptions``
    and which gives ``dynamic_eval_training_batches(n, segment)`` (rms dynamic evaluation's statistics):
    the task reads its test-time options once, hands them to the model it builds
    (``attach_evaluation_options``) and refuses them where the criterion scores."""

    __test__ = False  # a mixin, not a pytest class

    _evaluation_options = None  # the EvaluationOptions ``evaluation_options`` reads on its first use

    @property
    def evaluation_options(self) -> EvaluationOptions:
        """The task's test-time options, read once from its config (``self.args``)."""
        if self._evaluation_options is None:
            self._evaluation_options = EvaluationOptions.read(self.args)
            # dynamic evaluation's segment: a sentence, or N tokens of a stream
            refuse(self._evaluation_options, segments_are_sentences=not reads_streams(self))
        return self._evaluation_options

    def attach_evaluation_options(self, model):
        return self.evaluation_options.attach(model, self.dynamic_eval_training_batches, self.args.data)

    def build_criterion(self, cfg, *args, **kwargs):
        """fairseq-train and fairseq-validate build a criterion (eval-lm, alm-score, the hub do not):
        the test-time options, which the criterion's scoring would ignore, are refused here, before
        a batch is read."""
        refuse(self.evaluation_options, training=True)
        return super().build_criterion(cfg, *args, **kwargs)

    def train_step(self, *args, **kwargs):
        refuse(self.evaluation_options, training=True)
        return super().train_step(*args, **kwargs)
