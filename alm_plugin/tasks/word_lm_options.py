"""What both word-level LM tasks do with the model-side and test-time options, once: the output
layer's criterion and sampling checks, the neural cache and dynamic evaluation attached at build
time and refused in training and in fairseq-validate."""

from ..modules.adaptive_softmax_options import check_criterion, check_temperature, uses_adaptive_softmax
from ..test_time import EvaluationOptions, refuse


class WordLMOptionsMixin:
    """Put before the fairseq task class; the task reads its options from ``self.args`` and gives
    ``dynamic_eval_training_batches(n, segment)`` (rms dynamic evaluation's statistics)."""

    segments_are_sentences = True  # dynamic evaluation's segment: a sentence, or N tokens of a stream

    @property
    def evaluation_options(self) -> EvaluationOptions:
        """The task's test-time options, read once from its config (``self.args``)."""
        if getattr(self, "_evaluation_options", None) is None:
            self._evaluation_options = EvaluationOptions.read(self.args)
            refuse(self._evaluation_options, segments_are_sentences=self.segments_are_sentences)
        return self._evaluation_options

    def attach_evaluation_options(self, model):
        self.trains_adaptive_softmax = uses_adaptive_softmax(model)
        return self.evaluation_options.attach(
            model, self.dynamic_eval_training_batches, getattr(self.args, "data", None)
        )

    def build_generator(self, models, args, *rest, **kwargs):
        check_temperature(models, args)
        return super().build_generator(models, args, *rest, **kwargs)

    def build_criterion(self, cfg, *args, **kwargs):
        """fairseq-train and fairseq-validate build a criterion (eval-lm, alm-score, the hub do not):
        the test-time options, which the criterion's scoring would ignore, are refused here, before
        a batch is read."""
        refuse(self.evaluation_options, training=True)
        check_criterion(cfg, getattr(self, "trains_adaptive_softmax", False))
        return super().build_criterion(cfg, *args, **kwargs)

    def train_step(self, *args, **kwargs):
        refuse(self.evaluation_options, training=True)
        return super().train_step(*args, **kwargs)
