"""The fairseq model wrapper shared by our language models."""
from fairseq.models import FairseqLanguageModel

from ..tasks.sentence_language_modeling import warn_if_memory_spans_sentences


class HistoryAttentionLanguageModel(FairseqLanguageModel):
    """A decoder-only LM around ``decoder_class``; ``extra["history_attn"]`` holds the
    attention weights over the model's own history."""

    decoder_class = None

    @classmethod
    def build_model(cls, cfg, task):
        warn_if_memory_spans_sentences(task, cfg.memory_window, cls.__name__)
        return cls(cls.decoder_class(cfg, task.target_dictionary))

    def load_state_dict(self, state_dict, strict=True, model_cfg=None, args=None):
        if strict:
            expected, saved = set(self.state_dict()), set(state_dict)
            missing, unexpected = sorted(expected - saved), sorted(saved - expected)
            if missing or unexpected:
                raise ValueError(
                    f"this checkpoint does not fit {self.__class__.__name__}: {len(missing)} "
                    f"parameters missing (e.g. {missing[:2]}), {len(unexpected)} unexpected "
                    f"(e.g. {unexpected[:2]}). It was saved by another --arch; load it with that "
                    "architecture, or train this one without --restore-file.")
        return super().load_state_dict(state_dict, strict=strict, model_cfg=model_cfg, args=args)
