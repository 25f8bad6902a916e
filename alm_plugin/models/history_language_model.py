"""The fairseq model wrapper shared by our history-attention language models."""

import sys

import torch
from fairseq.models import FairseqLanguageModel

from ..errors import OptionError
from ..modules.neural_cache import cached_log_probs
from ..tasks.open_vocabulary_language_modeling import reads_characters
from ..tasks.sentence_language_modeling import warn_if_memory_spans_sentences
from .checkpoint_fit import CheckpointFitMixin
from .hub import LanguageModelHubInterface, from_pretrained


def refuse_softmax_batch(model, cfg) -> None:
    """``fairseq-eval-lm --softmax-batch N`` hands ``get_normalized_probs`` slices of N tokens of a
    batch's output (flattened across its rows) once the batch holds N or more: dynamic evaluation
    would take a step per slice (another figure, without a word), the neural cache and the pointer's
    mixture would read slices as rows. Refused up front, whatever the batches."""
    softmax_batch = getattr(getattr(cfg, "eval_lm", None), "softmax_batch", None)
    if softmax_batch is None or softmax_batch >= sys.maxsize:  # not given (fairseq's default: sys.maxsize)
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


class HistoryAttentionLanguageModel(CheckpointFitMixin, FairseqLanguageModel):
    """A decoder-only LM around ``decoder_class``; ``extra["history_attn"]`` holds the
    attention weights over the model's own history."""

    decoder_class = None
    neural_cache = None  # set by the LM tasks' --neural-cache-* options (test time only)
    dynamic_eval = None  # a DynamicEvaluator, set by the LM tasks' --dynamic-eval-* options (test time only)

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

    @classmethod
    def build_model(cls, cfg, task):
        cfg = cls.complete_config(cfg)
        if reads_characters(task):
            raise OptionError(
                f"--arch {cfg._name} is a word-level language model; the task "
                f"{task.__class__.__name__} reads words as character streams for "
                "char_cache_lm / hclm / char_lstm_lm. Use --task sentence_language_modeling."
            )
        if hasattr(cfg, "memory_window"):  # the plain LSTM has no attention to span anything
            warn_if_memory_spans_sentences(task, cfg.memory_window, cls.__name__)
        return cls.record_options(cls(cls.decoder_class(cfg, task.target_dictionary)), cfg)

    def get_normalized_probs(self, net_output, log_probs, sample=None):
        """The model's distribution; in eval mode, given the batch, with the neural cache mixed in
        (``modules/neural_cache.py``) and, with dynamic evaluation, followed by the step on the
        segment (``modules/dynamic_evaluation.py``): the scores returned are those before it."""
        adapting = self.dynamic_eval is not None and not self.training and sample is not None
        if (self.neural_cache is None and not adapting) or self.training or sample is None:
            return super().get_normalized_probs(net_output, log_probs, sample)
        target = sample["target"]
        if net_output[0].shape[:2] != target.shape:
            raise OptionError(
                "the neural cache and dynamic evaluation score a whole batch at once: drop --softmax-batch"
            )
        with torch.no_grad():
            scores = self.decoder.log_probs(net_output)
        if self.neural_cache is not None:
            scores = cached_log_probs(self.neural_cache, scores, net_output, sample, self.decoder.padding_idx)
        if adapting:
            self.adapt(net_output, target)
        return scores if log_probs else scores.exp()

    def adapt(self, net_output, target):
        """Dynamic evaluation's step on one scored segment (``net_output`` from this model's forward,
        with its graph); returns ``log p(target)`` (1, T) at the weights that scored it. The step's
        NLL comes from ``target_log_probs``: its backward never spans the whole distribution
        (the adaptive softmax: the head, and a tail only for the targets in it)."""
        if target.size(0) != 1:
            raise OptionError(
                "dynamic evaluation reads the text one segment at a time: this batch holds "
                f"{target.size(0)}; score with fairseq-eval-lm or alm-score"
            )
        with self.dynamic_eval.recording():
            scores = self.decoder.target_log_probs(net_output, target)
            real = target.ne(self.decoder.padding_idx)
            trained_nll = self.dynamic_eval.trained_nll(target)
            if real.any():  # a segment of padding alone (a stream's end) takes no step
                self.dynamic_eval.step(-scores[real].mean(), trained_nll)
        return scores.detach()

    @classmethod
    def from_pretrained(cls, model_name_or_path, checkpoint_file="model.pt", data_name_or_path=".", **kwargs):
        return from_pretrained(
            LanguageModelHubInterface, model_name_or_path, checkpoint_file, data_name_or_path, **kwargs
        )
