"""The fairseq model wrapper shared by our history-attention language models."""
from fairseq.models import FairseqLanguageModel

from ..errors import OptionError
from ..tasks.open_vocabulary_language_modeling import reads_characters
from ..tasks.sentence_language_modeling import warn_if_memory_spans_sentences
from ..modules.neural_cache import cached_log_probs
from .checkpoint_fit import CheckpointFitMixin
from .hub import LanguageModelHubInterface, from_pretrained


class HistoryAttentionLanguageModel(CheckpointFitMixin, FairseqLanguageModel):
    """A decoder-only LM around ``decoder_class``; ``extra["history_attn"]`` holds the
    attention weights over the model's own history."""

    decoder_class = None
    neural_cache = None  # set by the LM tasks' --neural-cache-* options (test time only)

    @classmethod
    def build_model(cls, cfg, task):
        cfg = cls.complete_config(cfg)
        if reads_characters(task):
            raise OptionError(f"--arch {cfg._name} is a word-level language model; the task "
                              f"{task.__class__.__name__} reads words as character streams for "
                              "char_cache_lm / hclm / char_lstm_lm. Use --task sentence_language_modeling.")
        if hasattr(cfg, "memory_window"):  # the plain LSTM has no attention to span anything
            warn_if_memory_spans_sentences(task, cfg.memory_window, cls.__name__)
        return cls.record_options(cls(cls.decoder_class(cfg, task.target_dictionary)), cfg)

    def get_normalized_probs(self, net_output, log_probs, sample=None):
        """The model's distribution, or with a neural cache (in eval mode, given the batch) the
        cache mixture of ``modules/neural_cache.py``."""
        if self.neural_cache is None or self.training or sample is None:
            return super().get_normalized_probs(net_output, log_probs, sample)
        mixed = cached_log_probs(self.neural_cache, self.decoder, net_output, sample, self.decoder.padding_idx)
        return mixed if log_probs else mixed.exp()

    @classmethod
    def from_pretrained(cls, model_name_or_path, checkpoint_file="model.pt", data_name_or_path=".", **kwargs):
        return from_pretrained(LanguageModelHubInterface, model_name_or_path, checkpoint_file,
                               data_name_or_path, **kwargs)
