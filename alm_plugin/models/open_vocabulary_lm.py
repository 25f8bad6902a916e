"""The fairseq model wrapper shared by the character-level word-stream models."""

from fairseq.models import FairseqLanguageModel

from ..data.task_reading import reads_characters
from ..errors import OptionError
from .checkpoint_fit import CheckpointFitMixin
from .hub import ScoringOnlyHubInterface, from_pretrained


class OpenVocabularyLanguageModel(CheckpointFitMixin, FairseqLanguageModel):
    decoder_class = None

    @classmethod
    def build_model(cls, cfg, task):
        cfg = cls.complete_config(cfg)
        if not reads_characters(task):
            raise OptionError(
                f"--arch {cfg._name} reads words with their characters in streams: train and "
                "evaluate it with --task open_vocabulary_language_modeling (not "
                f"{task.__class__.__name__})."
            )
        decoder = cls.decoder_class(cfg, task.target_dictionary)
        decoder.reset_parameters()
        return cls.record_options(cls(decoder), cfg)

    @classmethod
    def from_pretrained(cls, model_name_or_path, checkpoint_file="model.pt", data_name_or_path=".", **kwargs):
        return from_pretrained(
            ScoringOnlyHubInterface, model_name_or_path, checkpoint_file, data_name_or_path, **kwargs
        )
