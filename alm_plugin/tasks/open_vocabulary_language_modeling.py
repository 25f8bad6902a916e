"""Open-vocabulary language modelling over word streams, for the character-level models: each batch of
``--batch-size`` parallel streams also gives the target words, whose characters the model scores, and their
characters counted for bits per character (``nchars``, ``|c|``: ``data/spelling.py``)."""

import logging

import torch
from fairseq.tasks import register_task

from ..data.spelling import character_counts
from ..errors import UnsupportedError
from .stream_task import WordStreamConfig, WordStreamTask

logger = logging.getLogger(__name__)


@register_task("open_vocabulary_language_modeling", dataclass=WordStreamConfig)
class OpenVocabularyLMTask(WordStreamTask):
    reads_characters = True  # words with their characters: what data/task_reading.py asks

    def __init__(self, cfg: WordStreamConfig, dictionary):
        super().__init__(cfg, dictionary)
        self.character_counts = character_counts(dictionary)

    def load_words(self, split, epoch=1, combine=False) -> torch.Tensor:
        words = super().load_words(split, epoch, combine)
        unknown = int(words.eq(self.dictionary.unk()).sum())
        if unknown:
            logger.info(
                f"{split}: {unknown} of {words.numel()} words are <unk> and are spelled "
                "'<unk>'; build the dictionary over all splits to keep their characters"
            )
        return words

    def collate(self, items):
        sample = super().collate(items)
        target = sample["target"]
        sample["net_input"]["target_tokens"] = target
        sample["nchars"] = int(self.character_counts[target].sum())
        return sample

    def build_generator(self, *args, **kwargs):
        raise UnsupportedError(
            "the character-level word-stream models score text (fairseq-eval-lm, fairseq-validate, "
            "alm-cache-posterior); they do not generate"
        )
