"""The fairseq model wrapper shared by our history-attention language models."""

from fairseq.models import FairseqLanguageModel

from ..data.task_reading import reads_characters, warn_if_memory_spans_sentences
from ..errors import OptionError
from ..evaluation.options import TestTimeModel
from .checkpoint_fit import CheckpointFitMixin
from .hub import LanguageModelHubInterface, from_pretrained


class HistoryAttentionLanguageModel(TestTimeModel, CheckpointFitMixin, FairseqLanguageModel):
    """A decoder-only LM around ``decoder_class``; ``extra["history_attn"]`` holds the
    attention weights over the model's own history."""

    decoder_class = None

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

    @classmethod
    def from_pretrained(cls, model_name_or_path, checkpoint_file="model.pt", data_name_or_path=".", **kwargs):
        return from_pretrained(
            LanguageModelHubInterface, model_name_or_path, checkpoint_file, data_name_or_path, **kwargs
        )
