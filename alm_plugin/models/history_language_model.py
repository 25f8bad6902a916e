"""The fairseq model wrapper shared by our history-attention language models."""
from fairseq.models import FairseqLanguageModel

from ..tasks.sentence_language_modeling import warn_if_memory_spans_sentences
from .checkpoint_fit import CheckpointFitMixin


class HistoryAttentionLanguageModel(CheckpointFitMixin, FairseqLanguageModel):
    """A decoder-only LM around ``decoder_class``; ``extra["history_attn"]`` holds the
    attention weights over the model's own history."""

    decoder_class = None

    @classmethod
    def build_model(cls, cfg, task):
        warn_if_memory_spans_sentences(task, cfg.memory_window, cls.__name__)
        return cls(cls.decoder_class(cfg, task.target_dictionary))
