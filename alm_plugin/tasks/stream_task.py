"""The base of the word-stream tasks (``document_language_modeling`` and, for the character models,
``open_vocabulary_language_modeling``): every split read as ``--batch-size`` parallel streams of
``--tokens-per-sample``-word chunks, in order, each batch one chunk of every stream."""

import logging
import os
from dataclasses import dataclass, field
from typing import Optional

import torch
from fairseq import utils
from fairseq.data import Dictionary, iterators
from fairseq.dataclass import FairseqDataclass
from fairseq.distributed import utils as distributed_utils
from fairseq.tasks import FairseqTask
from omegaconf import II

from ..data.host_counts import count_on_host
from ..data.splits import check_dictionary, load_split, loaded_for_training
from ..data.word_streams import WordStreamDataset
from ..errors import MissingDataError, OptionError
from ..modules.stream_carry import stream_chunk

logger = logging.getLogger(__name__)


@dataclass
class WordStreamConfig(FairseqDataclass):
    data: str = field(default="???", metadata={"help": "data-bin directory with dict.txt and the splits"})
    tokens_per_sample: int = field(
        default=35, metadata={"help": "words per chunk: the truncated-BPTT length (paper: 35)"}
    )
    batch_size: Optional[int] = II("dataset.batch_size")
    data_parallel_rank: Optional[int] = None
    data_parallel_size: Optional[int] = None


class WordStreamTask(FairseqTask):
    """Reads every split as ``--batch-size`` parallel streams of chunks, in order."""

    reads_streams = True  # what data/task_reading.py asks

    def __init__(self, cfg, dictionary):
        super().__init__(cfg)
        self.dictionary = dictionary

    @classmethod
    def setup_task(cls, cfg, **kwargs):
        path = os.path.join(utils.split_paths(cfg.data)[0], "dict.txt")
        if not os.path.exists(path):  # a folder of that name: check_dictionary's to refuse
            raise MissingDataError(
                f"no dict.txt in {os.path.dirname(path)}: binarise the text with "
                "fairseq-preprocess --only-source (see examples/language_model/prepare_lm_data.py)"
            )
        check_dictionary(path)  # fairseq's own load names no file nor line
        dictionary = Dictionary.load(path)
        logger.info(f"dictionary: {len(dictionary)} types")
        return cls(cfg, dictionary)

    def load_words(self, split, epoch=1, combine=False) -> torch.Tensor:
        if self.cfg.tokens_per_sample < 1:
            raise OptionError(
                f"--tokens-per-sample {self.cfg.tokens_per_sample}: the words per chunk "
                "of each stream must be at least 1 (the paper: 35)"
            )
        if not self.cfg.batch_size:
            raise OptionError(
                f"{self.__class__.__name__} reads the corpus as --batch-size parallel streams: pass "
                "--batch-size N (e.g. 20-32 for training; 1 for exact evaluation)."
            )
        lines = load_split(self.cfg.data, split, self.dictionary, epoch, combine=combine)
        return torch.cat([lines[i] for i in range(len(lines))])

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        words = self.load_words(split, epoch, combine)
        if self.cfg.data_parallel_rank is None:
            initialised = torch.distributed.is_initialized()
            self.cfg.data_parallel_rank = distributed_utils.get_data_parallel_rank() if initialised else 0
            self.cfg.data_parallel_size = distributed_utils.get_data_parallel_world_size() if initialised else 1
        training = loaded_for_training(kwargs)
        streams, chunk = self.reading(split, training)
        burn_in = 0 if training else self.burn_in()
        self.datasets[split] = WordStreamDataset(
            words,
            streams,
            chunk,
            self.dictionary.pad(),
            self.dictionary.eos(),
            self.cfg.data_parallel_rank,
            self.cfg.data_parallel_size,
            burn_in=burn_in,
        )
        if not training and streams * self.cfg.data_parallel_size > 1:
            # fairseq-train's validation (and checkpoint_best) reads it so: say what that measures
            logger.info(
                f"'{split}' is read as {streams * self.cfg.data_parallel_size} streams, each but the first "
                + (
                    f"after reading up to {burn_in} words before it (not scored)"
                    if burn_in
                    else "from a fresh state at a line start"
                )
                + "; fairseq-eval-lm --batch-size 1 reads it as one stream, the exact figure"
            )

    def burn_in(self) -> int:
        """Words a stream reads before its first scored one when a split is scored as several."""
        return 0

    def get_batch_iterator(
        self, dataset, num_workers=0, epoch=1, data_buffer_size=0, skip_remainder_batch=False, **kwargs
    ):
        if not isinstance(dataset, WordStreamDataset):  # the hub's sentences: fairseq's batching
            return super().get_batch_iterator(
                dataset,
                num_workers=num_workers,
                epoch=epoch,
                data_buffer_size=data_buffer_size,
                skip_remainder_batch=skip_remainder_batch,
                **kwargs,
            )
        # every item is already a whole batch, and the chunks must stay in stream order
        return iterators.EpochBatchIterator(
            dataset=dataset,
            collate_fn=self.collate,
            batch_sampler=[[i] for i in range(len(dataset))],
            num_workers=num_workers,
            epoch=epoch,
            buffer_size=data_buffer_size,
            disable_shuffling=True,
            skip_remainder_batch=skip_remainder_batch,
        )

    def collate(self, items):
        (item,) = items
        # contiguous: fairseq's cross_entropy views the target flat
        source, target = item["source"].contiguous(), item["target"].contiguous()
        real = target.ne(self.dictionary.pad())
        return count_on_host(
            {
                "id": torch.full((source.size(0),), item["id"]),
                "net_input": {
                    "src_tokens": source,
                    "src_lengths": real.sum(1),
                    "stream_ids": item["streams"],
                    "stream_positions": torch.full((source.size(0),), item["position"]),
                    "stream_chunk": stream_chunk(item["streams"], item["position"]),  # the same, on the host
                },
                "target": target,
                # the words after each input, also where a stream reads without scoring (its burn-in):
                # what the neural cache remembers
                "read_target": item["read_target"].contiguous(),
                # where each row's scored words begin (after a burn-in's padded targets): fairseq's
                # SequenceScorer (eval-lm) takes a row's scores from there, as for --context-window
                "start_indices": (real.cumsum(1) == 0).sum(1).tolist(),
                "nsentences": source.size(0),
                "ntokens": int(real.sum()),
            },
            self.dictionary,
        )

    def reading(self, split, training):
        """``(streams, tokens per chunk)`` of ``split``: ``--batch-size`` x ``--tokens-per-sample``."""
        return self.cfg.batch_size, self.cfg.tokens_per_sample

    def eval_lm_dataloader(
        self,
        dataset,
        context_window: int = 0,
        num_shards: int = 1,
        shard_id: int = 0,
        num_workers: int = 1,
        data_buffer_size: int = 10,
        **unused,
    ):
        if context_window > 0:
            raise OptionError(
                "--context-window does not apply: the model carries its state from "
                "chunk to chunk of each stream; drop the option."
            )
        if num_shards > 1:  # every shard would score the whole split
            raise OptionError(
                f"--num-shards {num_shards}: the streams of a split are read in one process; drop "
                "--num-shards / --shard-id (--batch-size N reads it as N parallel streams)"
            )
        return self.get_batch_iterator(
            dataset, num_workers=num_workers, data_buffer_size=data_buffer_size
        ).next_epoch_itr(shuffle=False)

    @property
    def source_dictionary(self):
        return self.dictionary

    @property
    def target_dictionary(self):
        return self.dictionary
