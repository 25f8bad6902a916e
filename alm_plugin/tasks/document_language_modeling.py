"""Document-level language modelling: a corpus read as parallel streams (truncated BPTT).

The split is one sequence of words in corpus order, ``</s>`` ending each line, cut at line
ends into ``--batch-size`` streams (each starts from a fresh state with ``</s>`` as its first
input) and each stream into chunks of ``--tokens-per-sample`` words (``WordStreamDataset``,
every word a target once). Batches come in stream order, tagged with
``stream_ids`` and ``stream_positions``, so a word-level model (``alm_lstm``, ``attentive_lm``,
``amsrn``) carries its LSTM state and the last ``--memory-window`` states of its attention
memory from chunk to chunk, across sentence ends (``StreamCarry``), as Zaremba et al. (2014)
train a medium LSTM and as the neural cache and the Pointer Sentinel-LSTM read text.

There are no sentences in a chunk, so the paper's "sum over the sentence, average over the
batch" becomes Zaremba's recipe: with ``--sentence-avg`` the loss is the NLL summed over the
chunk's steps and averaged over the streams that hold a scored word in the chunk, lr 1.

``fairseq-eval-lm`` scores each split the same way, the streams in order; ``--batch-size 1``
reads it as one stream (the exact document-level figure). With more streams, each stream but
the first reads ``--stream-burn-in`` words of the text before its first scored word (read, not
scored), so its state is a reader's that got there, not a fresh one in mid-document.
``--neural-cache-window N`` adds the neural cache, one per stream, filled from the burn-in too.
``open_vocabulary_language_modeling`` is this task for the character-level models.
"""
import logging
import os
from dataclasses import dataclass, field
from typing import Optional

import torch
from fairseq import utils
from fairseq.data import Dictionary, iterators
from fairseq.dataclass import FairseqDataclass
from fairseq.distributed import utils as distributed_utils
from fairseq.tasks import FairseqTask, register_task
from fairseq.tasks.language_modeling import LanguageModelingTask
from omegaconf import II

from ..criterions.attention_cross_entropy import count_on_host
from ..errors import MissingDataError, OptionError
from ..data.splits import check_dictionary, load_split
from ..data.word_streams import WordStreamDataset
from ..modules.dynamic_evaluation import DynamicEvalOptions, check_options as dynamic_options
from ..modules.neural_cache import CACHE_MODELS, NeuralCacheOptions
from ..modules.stream_carry import stream_chunk
from .word_lm_options import WordLMOptionsMixin, loaded_for_training

logger = logging.getLogger(__name__)
BURN_IN = 100  # --stream-burn-in's default: see its help and docs/models.md for the measurement


@dataclass
class WordStreamConfig(FairseqDataclass):
    data: str = field(default="???", metadata={"help": "data-bin directory with dict.txt and the splits"})
    tokens_per_sample: int = field(default=35, metadata={
        "help": "words per chunk: the truncated-BPTT length (paper: 35)"})
    batch_size: Optional[int] = II("dataset.batch_size")
    data_parallel_rank: Optional[int] = None
    data_parallel_size: Optional[int] = None


@dataclass
class DocumentLanguageModelingConfig(WordStreamConfig, NeuralCacheOptions, DynamicEvalOptions):
    stream_burn_in: int = field(default=BURN_IN, metadata={
        "help": "evaluation read as several streams (fairseq-eval-lm --batch-size N, fairseq-train's validation, "
                "fairseq-validate): each stream but the first first reads this many words of the text before its "
                "first scored word (from a line start; read, not scored: every word is scored once), so it scores "
                "from a reader's state, not a fresh one in mid-document; with the neural cache, at least its "
                "window. 0: fresh starts (the old reading). "
                "Training streams start fresh (docs/models.md)"})



class WordStreamTask(FairseqTask):
    """Reads every split as ``--batch-size`` parallel streams of chunks, in order."""

    def __init__(self, cfg, dictionary):
        super().__init__(cfg)
        self.dictionary = dictionary

    @classmethod
    def setup_task(cls, cfg, **kwargs):
        path = os.path.join(utils.split_paths(cfg.data)[0], "dict.txt")
        if not os.path.isfile(path):
            raise MissingDataError(f"no dict.txt in {os.path.dirname(path)}: binarise the text with "
                                   "fairseq-preprocess --only-source (see examples/language_model/prepare_lm_data.py)")
        check_dictionary(path)  # fairseq's own load names no file nor line
        dictionary = Dictionary.load(path)
        logger.info(f"dictionary: {len(dictionary)} types")
        return cls(cfg, dictionary)

    def load_words(self, split, epoch=1, combine=False) -> torch.Tensor:
        if self.cfg.tokens_per_sample < 1:
            raise OptionError(f"--tokens-per-sample {self.cfg.tokens_per_sample}: the words per chunk "
                              "of each stream must be at least 1 (the paper: 35)")
        if not self.cfg.batch_size:
            raise OptionError(
                f"{self.__class__.__name__} reads the corpus as --batch-size parallel streams: pass "
                "--batch-size N (e.g. 20-32 for training; 1 for exact evaluation).")
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
            words, streams, chunk, self.dictionary.pad(),
            self.dictionary.eos(), self.cfg.data_parallel_rank, self.cfg.data_parallel_size, burn_in=burn_in)
        if not training and streams * self.cfg.data_parallel_size > 1:
            # fairseq-train's validation (and checkpoint_best) reads it so: say what that measures
            logger.info(f"'{split}' is read as {streams * self.cfg.data_parallel_size} streams, each but the first "
                        + (f"after reading up to {burn_in} words before it (not scored)" if burn_in else
                           "from a fresh state at a line start")
                        + "; fairseq-eval-lm --batch-size 1 reads it as one stream, the exact figure")

    def burn_in(self) -> int:
        """Words a stream reads before its first scored one when a split is scored as several."""
        return 0

    def get_batch_iterator(self, dataset, num_workers=0, epoch=1, data_buffer_size=0,
                           skip_remainder_batch=False, **kwargs):
        if not isinstance(dataset, WordStreamDataset):  # the hub's sentences: fairseq's batching
            return super().get_batch_iterator(dataset, num_workers=num_workers, epoch=epoch,
                                              data_buffer_size=data_buffer_size,
                                              skip_remainder_batch=skip_remainder_batch, **kwargs)
        # every item is already a whole batch, and the chunks must stay in stream order
        return iterators.EpochBatchIterator(
            dataset=dataset, collate_fn=self.collate, batch_sampler=[[i] for i in range(len(dataset))],
            num_workers=num_workers, epoch=epoch, buffer_size=data_buffer_size,
            disable_shuffling=True, skip_remainder_batch=skip_remainder_batch)

    def collate(self, items):
        item, = items
        # contiguous: fairseq's cross_entropy views the target flat
        source, target = item["source"].contiguous(), item["target"].contiguous()
        real = target.ne(self.dictionary.pad())
        return count_on_host({
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
        }, self.dictionary)

    def reading(self, split, training):
        """``(streams, tokens per chunk)`` of ``split``: ``--batch-size`` x ``--tokens-per-sample``."""
        return self.cfg.batch_size, self.cfg.tokens_per_sample

    def eval_lm_dataloader(self, dataset, context_window: int = 0, num_shards: int = 1,
                           shard_id: int = 0, num_workers: int = 1, data_buffer_size: int = 10,
                           **unused):
        if context_window > 0:
            raise OptionError("--context-window does not apply: the model carries its state from "
                              "chunk to chunk of each stream; drop the option.")
        if num_shards > 1:  # every shard would score the whole split
            raise OptionError(f"--num-shards {num_shards}: the streams of a split are read in one process; drop "
                              "--num-shards / --shard-id (--batch-size N reads it as N parallel streams)")
        return self.get_batch_iterator(dataset, num_workers=num_workers,
                                       data_buffer_size=data_buffer_size).next_epoch_itr(shuffle=False)

    @property
    def source_dictionary(self):
        return self.dictionary

    @property
    def target_dictionary(self):
        return self.dictionary


def check_burn_in(value) -> None:
    if value is None or value < 0:
        raise OptionError(f"--stream-burn-in {value}: the words a stream reads before it scores must be 0 or more "
                          f"(default {BURN_IN})")


@register_task("document_language_modeling", dataclass=DocumentLanguageModelingConfig)
class DocumentLanguageModelingTask(WordLMOptionsMixin, WordStreamTask):
    """Word-level LMs on streams, their state and attention memory carried across chunks."""

    segments_are_sentences = False

    @classmethod
    def setup_task(cls, cfg, **kwargs):
        check_burn_in(cfg.stream_burn_in)  # also where nothing is scored as streams (--disable-validation)
        return super().setup_task(cfg, **kwargs)

    def build_model(self, cfg, from_checkpoint=False):
        model = super().build_model(cfg, from_checkpoint)
        if not hasattr(getattr(model, "decoder", None), "carry"):
            raise OptionError(
                f"--task document_language_modeling hands the model chunks of streams whose state it carries from "
                f"one to the next, which {model.__class__.__name__} cannot: use one of our word models "
                f"({CACHE_MODELS}), or fairseq's --task language_modeling for fairseq's own models")
        window = getattr(getattr(model, "decoder", None), "attention", None)
        if window is not None and window.window == 0:
            raise OptionError(
                f"--arch {getattr(cfg, '_name', cfg)} attends over its history, which on "
                "document_language_modeling spans the whole stream: bound it with --memory-window M "
                "(e.g. 100; the last M states are carried from chunk to chunk).")
        return self.attach_test_time_options(model)

    def reading(self, split, training):
        """With dynamic evaluation a split scored is one stream of segments (whatever --batch-size,
        whatever the split's name): one step after each segment, the figure independent of the batching."""
        settings = None if training else dynamic_options(self.cfg, segments_are_sentences=False)
        return (1, settings.segment) if settings is not None else super().reading(split, training)

    def burn_in(self) -> int:
        check_burn_in(self.cfg.stream_burn_in)
        # with the neural cache, a past as long as its window: each stream's cache then holds what
        # the one-stream reading's would
        window = getattr(self.cfg, "neural_cache_window", 0) or 0
        return max(self.cfg.stream_burn_in, window) if self.cfg.stream_burn_in else 0

    def dynamic_eval_training_batches(self, count, segment):
        """``count`` batches of the training split as 20 streams of ``segment`` words, state carried:
        where rms dynamic evaluation measures each weight's gradient (MS). The segment comes from the
        evaluator (eval-lm's options, or alm-score's and alm-cache-grid's, which the task never sees)."""
        words = self.load_words("train")
        dataset = WordStreamDataset(words, 20, segment, self.dictionary.pad(), self.dictionary.eos())
        return (self.collate([dataset[i]]) for i in range(min(count, len(dataset))))

    # The hub (``from_pretrained``: score, sample) reads each sentence alone, from a fresh state,
    # as fairseq's language_modeling task batches it; fairseq-eval-lm and alm-score read streams.
    build_dataset_for_inference = LanguageModelingTask.build_dataset_for_inference
    inference_step = LanguageModelingTask.inference_step

    @property
    def args(self):  # what language_modeling's methods read their options (add_bos_token) from
        return self.cfg
