"""The test-time options of a run (the neural cache, dynamic evaluation, a stream's burn-in), read
once from its parsed arguments into one ``EvaluationOptions``, which the tasks and the tools take;
``attach`` is the one place that gives a model its cache and its evaluator (or takes them away).

The arguments are a task's config (fairseq-eval-lm, fairseq-validate, fairseq-train and the hub
build the task from it; the word-level tasks mix ``NeuralCacheOptions`` and ``DynamicEvalOptions``
into it) or alm-score's parsed command line; an option the arguments lack is not given. The
values are checked as a whole when read: modules/neural_cache.py (Grave et al. 2017, Eq. 2-4) and
modules/dynamic_evaluation.py (Krause et al. 2018) say what each refuses."""

from dataclasses import dataclass
from typing import Optional, Tuple

from .errors import OptionError
from .modules.dynamic_evaluation import DynamicEvalSettings, DynamicEvaluator, check_training_split
from .modules.dynamic_evaluation import check_options as dynamic_settings
from .modules.neural_cache import CACHE_MODELS, NeuralCache
from .modules.neural_cache import check_options as cache_settings


@dataclass(frozen=True)
class EvaluationOptions:
    cache: Optional[Tuple[int, float, float]] = None  # (window, theta, lambda); None: no cache
    dynamic: Optional[DynamicEvalSettings] = None  # the rule, its defaults filled in; None: off
    segment_given: bool = False  # --dynamic-eval-segment given (a sentence model's segment is its sentence)
    stream_burn_in: int = 0  # words each stream but the first reads before it scores (document task)

    @classmethod
    def read(cls, args, segments_are_sentences: Optional[bool] = None) -> "EvaluationOptions":
        """From parsed arguments; ``segments_are_sentences``: whether the model's segment is a
        sentence (refusing --dynamic-eval-segment), ``None`` where the model is not loaded yet
        (``check_segments`` then, once it is)."""

        def given(name, default=None):
            return getattr(args, name, default)

        cache = cache_settings(
            given("neural_cache_window", 0), given("neural_cache_theta"), given("neural_cache_lambda")
        )
        dynamic = dynamic_settings(
            given("dynamic_eval_lr", 0.0) or 0.0,
            given("dynamic_eval_decay"),
            given("dynamic_eval_rule"),
            given("dynamic_eval_eps"),
            given("dynamic_eval_segment"),
            given("dynamic_eval_stats_batches"),
        )
        options = cls(cache, dynamic, given("dynamic_eval_segment") is not None, given("stream_burn_in", 0))
        if segments_are_sentences is not None:
            options.check_segments(segments_are_sentences)
        return options

    def attach(self, model, training_batches=None, data: Optional[str] = None):
        """Give ``model`` these options' neural cache and dynamic evaluator, and no other (``None``
        where an option is off); ``training_batches(n, segment)``: n of the task's training batches,
        which rms dynamic evaluation reads from ``data``'s training split."""
        name = model.__class__.__name__
        if self.cache is not None and not hasattr(model, "neural_cache"):
            raise OptionError(
                f"--neural-cache-window: {name} does not hand its output features to the cache; the neural "
                f"cache works with {CACHE_MODELS}. Drop the --neural-cache-* options for this model."
            )
        if self.dynamic is not None and not hasattr(model, "dynamic_eval"):
            raise OptionError(
                f"--dynamic-eval-lr: dynamic evaluation adapts the word-level {CACHE_MODELS}, not {name}: drop "
                "the --dynamic-eval-* options for this model"
            )
        if self.dynamic is not None and self.dynamic.rule == "rms" and data:
            check_training_split(data)
        if hasattr(model, "neural_cache"):
            model.neural_cache = NeuralCache(*self.cache) if self.cache is not None else None
        if hasattr(model, "dynamic_eval"):
            evaluator = DynamicEvaluator(model, self.dynamic, training_batches) if self.dynamic is not None else None
            model.dynamic_eval = evaluator
        return model

    def check_segments(self, segments_are_sentences: bool) -> None:
        if self.segment_given and segments_are_sentences:
            raise OptionError(
                "--dynamic-eval-segment: on sentence_language_modeling a segment is one sentence, read "
                "whole from a fresh state as the model was trained: drop the option"
            )

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

    def refuse_in_training(self) -> None:
        """fairseq-train and fairseq-validate (the tools that build a criterion) score with the criterion,
        which never reads the cache nor adapts: refused, not ignored (fairseq-validate printed the static figure)."""
        if self.cache is not None:
            raise OptionError(
                "--neural-cache-window is a test-time option (fairseq-eval-lm, alm-score, "
                "alm-cache-grid): nothing is trained, and fairseq-validate scores with the criterion, "
                "which never reads the cache. Drop --neural-cache-* from fairseq-train and "
                "fairseq-validate."
            )
        if self.dynamic is not None:
            raise OptionError(
                "--dynamic-eval-lr is a test-time option (fairseq-eval-lm, alm-score, alm-cache-grid): "
                "fairseq-train and fairseq-validate score with the criterion, which never adapts: drop "
                "--dynamic-eval-* from fairseq-train and fairseq-validate"
            )
