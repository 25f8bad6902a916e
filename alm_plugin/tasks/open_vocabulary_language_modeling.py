"""Open-vocabulary language modelling over word streams, for the character-level models.

Reads ordinary ``fairseq-preprocess --only-source`` word data. The models spell every
dictionary word into characters, so the dictionary should hold every word of every split
(``prepare_lm_data.py --open-vocabulary``; fairseq's ``--thresholdsrc 0`` keeps the full
training vocabulary but maps unseen valid/test words to ``<unk>``, which the models then
spell as the five characters ``<unk>``, as the paper did for PTB).

Batches are consecutive chunks of ``--batch-size`` parallel streams (``WordStreamDataset``),
so the context LSTM and the word cache carry over from chunk to chunk, across sentences,
as in the paper. Each batch gives the model ``src_tokens`` (``w_{t-1}``), ``target_tokens``
(``w_t``, whose characters the model scores) and the stream tags that let it resume its
state; the sample's ``nchars`` is ``|c|`` for bits per character (``modules/spelling.py``).
"""
import logging
import os
from dataclasses import dataclass, field
from typing import Optional

import torch
from fairseq import utils
from fairseq.data import Dictionary, data_utils, iterators
from fairseq.dataclass import FairseqDataclass
from fairseq.distributed import utils as distributed_utils
from fairseq.tasks import FairseqTask, register_task
from omegaconf import II

from ..data.word_streams import WordStreamDataset
from ..modules.spelling import character_counts

logger = logging.getLogger(__name__)


@dataclass
class OpenVocabularyLMConfig(FairseqDataclass):
    data: str = field(default="???", metadata={"help": "data-bin directory with dict.txt and the splits"})
    tokens_per_sample: int = field(default=35, metadata={
        "help": "words per chunk: the truncated-BPTT length (paper: 35)"})
    batch_size: Optional[int] = II("dataset.batch_size")
    data_parallel_rank: Optional[int] = None
    data_parallel_size: Optional[int] = None


@register_task("open_vocabulary_language_modeling", dataclass=OpenVocabularyLMConfig)
class OpenVocabularyLMTask(FairseqTask):
    def __init__(self, cfg: OpenVocabularyLMConfig, dictionary):
        super().__init__(cfg)
        self.dictionary = dictionary
        self.character_counts = character_counts(dictionary)

    @classmethod
    def setup_task(cls, cfg: OpenVocabularyLMConfig, **kwargs):
        dictionary = Dictionary.load(os.path.join(utils.split_paths(cfg.data)[0], "dict.txt"))
        logger.info(f"dictionary: {len(dictionary)} types")
        return cls(cfg, dictionary)

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        if self.cfg.tokens_per_sample < 1:
            raise ValueError(f"--tokens-per-sample {self.cfg.tokens_per_sample}: the words per chunk "
                             "of each stream must be at least 1 (the paper: 35)")
        if not self.cfg.batch_size:
            raise ValueError(
                "open_vocabulary_language_modeling reads the corpus as --batch-size parallel "
                "streams: pass --batch-size N (the paper: 25 for PTB, 10 for WikiText-2; "
                "1 for exact evaluation).")
        if self.cfg.data_parallel_rank is None:
            initialised = torch.distributed.is_initialized()
            self.cfg.data_parallel_rank = distributed_utils.get_data_parallel_rank() if initialised else 0
            self.cfg.data_parallel_size = distributed_utils.get_data_parallel_world_size() if initialised else 1
        paths = utils.split_paths(self.cfg.data)
        split_path = os.path.join(paths[(epoch - 1) % len(paths)], split)
        lines = data_utils.load_indexed_dataset(split_path, self.dictionary, combine=combine)
        if lines is None:
            raise FileNotFoundError(
                f"no '{split}' data in {os.path.dirname(split_path)}: binarise it with "
                "fairseq-preprocess --only-source (see examples/language_model/prepare_lm_data.py)")
        words = torch.cat([lines[i] for i in range(len(lines))])
        unknown = int(words.eq(self.dictionary.unk()).sum())
        if unknown:
            logger.info(f"{split}: {unknown} of {words.numel()} words are <unk> and are spelled "
                        "'<unk>'; build the dictionary over all splits to keep their characters")
        self.datasets[split] = WordStreamDataset(
            words, self.cfg.batch_size, self.cfg.tokens_per_sample, self.dictionary.pad(),
            self.dictionary.eos(), self.cfg.data_parallel_rank, self.cfg.data_parallel_size)

    def get_batch_iterator(self, dataset, num_workers=0, epoch=1, data_buffer_size=0,
                           skip_remainder_batch=False, **unused):
        # every item is already a whole batch, and the chunks must stay in stream order
        return iterators.EpochBatchIterator(
            dataset=dataset, collate_fn=self.collate, batch_sampler=[[i] for i in range(len(dataset))],
            num_workers=num_workers, epoch=epoch, buffer_size=data_buffer_size,
            disable_shuffling=True, skip_remainder_batch=skip_remainder_batch)

    def collate(self, items):
        item, = items
        source, target = item["source"], item["target"]
        real = target.ne(self.dictionary.pad())
        return {
            "id": torch.full((source.size(0),), item["id"]),
            "net_input": {
                "src_tokens": source,
                "src_lengths": real.sum(1),
                "target_tokens": target,
                "stream_ids": item["streams"],
                "stream_positions": torch.full((source.size(0),), item["position"]),
            },
            "target": target,
            "nsentences": source.size(0),
            "ntokens": int(real.sum()),
            "nchars": int(self.character_counts[target].sum()),
        }

    def eval_lm_dataloader(self, dataset, context_window: int = 0, num_shards: int = 1,
                           shard_id: int = 0, num_workers: int = 1, data_buffer_size: int = 10,
                           **unused):
        if context_window > 0:
            raise ValueError("--context-window does not apply: the character models carry their "
                             "state from chunk to chunk of each stream; drop the option.")
        return self.get_batch_iterator(dataset, num_workers=num_workers,
                                       data_buffer_size=data_buffer_size).next_epoch_itr(shuffle=False)

    def build_generator(self, *args, **kwargs):
        raise NotImplementedError(
            "the character-level word-stream models score text (fairseq-eval-lm, fairseq-validate, "
            "alm-cache-posterior); they do not generate")

    @property
    def source_dictionary(self):
        return self.dictionary

    @property
    def target_dictionary(self):
        return self.dictionary
