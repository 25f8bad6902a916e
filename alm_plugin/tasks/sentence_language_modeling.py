"""Sentence-level language modelling: fairseq's ``language_modeling`` with one sentence per sample, the
memory reset per sample, and the Attentive LM paper's batching as the default (``--sample-break-mode eos``,
``--tokens-per-sample 35``: a longer training sentence cut into pieces, every other split scored whole)."""

import glob
import itertools
import logging
import os
from dataclasses import dataclass, field

import numpy as np
from fairseq import utils
from fairseq.data import LMContextWindowDataset, MonolingualDataset, TokenBlockDataset
from fairseq.data.shorten_dataset import maybe_shorten_dataset
from fairseq.tasks import register_task
from fairseq.tasks.language_modeling import (
    SAMPLE_BREAK_MODE_CHOICES,
    LanguageModelingConfig,
    LanguageModelingTask,
)
from omegaconf import II

from ..data import SentenceBlockDataset
from ..data.host_counts import CountedCollate
from ..data.sentence_blocks import CorpusOrder
from ..data.splits import check_dictionary, load_split, loaded_for_training
from ..errors import MissingDataError, OptionError
from ..evaluation.options import TestTimeOptions, TestTimeTask, refuse
from ..modules import cuda_graphs
from ..options.adaptive_softmax import OutputLayerChecks
from ..options.reading import read_options

logger = logging.getLogger(__name__)


@dataclass
class SentenceLanguageModelingConfig(LanguageModelingConfig, TestTimeOptions):
    sample_break_mode: SAMPLE_BREAK_MODE_CHOICES = field(
        default="eos",
        metadata={
            "help": "eos (default): one sentence per sample; none/complete/complete_doc: as fairseq language_modeling"
        },
    )
    tokens_per_sample: int = field(
        default=35,
        metadata={"help": "most tokens per training sample, longer training sentences cut into pieces (paper: 35)"},
    )
    eval_tokens_per_sample: int = field(
        default=0,
        metadata={
            "help": "with --sample-break-mode eos: most tokens per sample of every split not named train* "
            "(default 0: whole sentences)"
        },
    )
    corpus_order: bool = field(
        default=False,
        metadata={"help": "train on batches of consecutive sentences in the corpus's order, the same every epoch"},
    )
    cuda_graphs: bool = field(
        default=False,
        metadata={
            "help": "replay each training update's forward, loss and backward as a CUDA graph, one per batch shape"
        },
    )
    # what --cuda-graphs checks before a batch is read
    cpu: bool = II("common.cpu")
    fp16: bool = II("common.fp16")
    amp: bool = II("common.amp")
    distributed_world_size: int = II("distributed_training.distributed_world_size")


def sentence_task_options(args, *names: str):
    """The options ``names`` of ``args`` at the defaults ``SentenceLanguageModelingConfig`` declares:
    fairseq hands the task a config that holds every one, but a ``Namespace`` built by hand or another
    task's arguments may lack one."""
    return read_options(SentenceLanguageModelingConfig, args, *names)


@register_task("sentence_language_modeling", dataclass=SentenceLanguageModelingConfig)
class SentenceLanguageModelingTask(TestTimeTask, OutputLayerChecks, LanguageModelingTask):
    """fairseq ``language_modeling`` with one (piece of a) sentence per sample."""

    reads_sentences = True  # one sentence a sample: what data/task_reading.py asks
    model_position_limit = 0  # the built model's --max-target-positions (0: none, or no model built yet)
    graphed_step = None  # with --cuda-graphs, the GraphedTrainStep the first graphed update makes

    @classmethod
    def setup_task(cls, args, **kwargs):
        data = utils.split_paths(args.data)[0]
        if not os.path.exists(os.path.join(data, "dict.txt")):
            translation = sorted(os.path.basename(p) for p in glob.glob(os.path.join(data, "dict.*.txt")))
            if translation:
                raise MissingDataError(
                    f"no dict.txt in {data}: it is a translation data directory ({', '.join(translation)}), "
                    "and a language model reads its dictionary from dict.txt: give the data-bin the language "
                    "model was trained on. For fairseq-generate --lm-path, which loads the language model's "
                    f"dictionary from there: copy the target dictionary to {data}/dict.txt (the language "
                    "model must have been trained with it: fairseq-preprocess --only-source --srcdict "
                    f"{data}/dict.<target-lang>.txt)."
                )
            raise MissingDataError(
                f"no dict.txt in {data}: binarise the text with fairseq-preprocess "
                "--only-source (see examples/language_model/prepare_lm_data.py)"
            )
        check_dictionary(os.path.join(data, "dict.txt"))  # fairseq's own load names no file nor line
        if not kwargs.get("from_checkpoint"):  # a loaded model's task is not cut into samples again
            check_sample_lengths(args)
        return super().setup_task(args, **kwargs)

    def __init__(self, args, *rest, **kwargs):
        super().__init__(args, *rest, **kwargs)
        # --cuda-graphs, read here alone
        self.replays_graphs = bool(sentence_task_options(args, "cuda_graphs").cuda_graphs)
        if self.replays_graphs:
            cuda_graphs.check_options(args.cpu, args.fp16, args.amp, args.distributed_world_size)

    def build_model(self, cfg, from_checkpoint=False):
        """Note the model's position limit: whole sentences are scored only up to it
        (fairseq's ``lstm_lm`` / ``transformer_lm`` take at most their --max-target-positions)."""
        model = super().build_model(cfg, from_checkpoint)
        if self.replays_graphs:
            cuda_graphs.check_model(model)
        limit = model.max_positions()
        self.model_position_limit = limit if isinstance(limit, int) and limit < 100_000 else 0
        return self.attach_evaluation_options(model)

    def build_criterion(self, cfg, *args, **kwargs):
        criterion = super().build_criterion(cfg, *args, **kwargs)
        if self.replays_graphs:
            cuda_graphs.check_criterion(criterion)
        return criterion

    def train_step(self, sample, model, criterion, optimizer, update_num, ignore_grad=False):
        """fairseq's step, or with ``--cuda-graphs`` its forward, loss and backward replayed as a graph."""
        if not self.replays_graphs or ignore_grad:
            return super().train_step(sample, model, criterion, optimizer, update_num, ignore_grad)
        if self.graphed_step is None:
            self.graphed_step = cuda_graphs.GraphedTrainStep(model, criterion, optimizer)
        if not self.graphed_step.takes(sample):
            return super().train_step(sample, model, criterion, optimizer, update_num, ignore_grad)
        refuse(self.evaluation_options, training=True)
        model.train()
        model.set_num_updates(update_num)
        return self.graphed_step(model, sample)

    def dynamic_eval_training_batches(self, count, segment=None):
        """``count`` batches of 32 training sentences (cut as training cuts them), in corpus order:
        where rms dynamic evaluation measures each weight's gradient (MS); a segment is a sentence."""
        self.load_dataset("train", as_training=True)
        itr = self.get_batch_iterator(CorpusOrder(self.dataset("train")), max_sentences=32, max_tokens=32 * 400)
        return itertools.islice(itr.next_epoch_itr(shuffle=False), count)

    def eval_lm_dataloader(self, dataset, *args, context_window=0, num_shards=1, **kwargs):
        """With the neural cache or dynamic evaluation, the sentences in corpus order (the cache spans
        them; dynamic evaluation adapts after each), one sentence per batch for dynamic evaluation.
        With ``--context-window N`` each sample after up to N tokens before it (``ContextWindow``)."""
        options = self.evaluation_options
        if options.in_corpus_order:
            if context_window > 0 or num_shards > 1:
                raise OptionError(
                    "--neural-cache-window and --dynamic-eval-lr read the split in corpus order, in "
                    "one process: drop --context-window and score on one GPU (no --distributed-world-size)"
                )
            dataset = CorpusOrder(dataset)
        if options.dynamic is not None:
            kwargs["batch_size"] = 1  # the figure does not depend on the batching: one segment at a time
        if context_window > 0:
            dataset = ContextWindow(dataset, context_window, self.source_dictionary.pad())
        return super().eval_lm_dataloader(dataset, *args, context_window=0, num_shards=num_shards, **kwargs)

    def load_dataset(self, split: str, epoch=1, combine=False, **kwargs):
        options = sentence_task_options(self.args, "eval_tokens_per_sample", "corpus_order")
        dataset = load_split(self.args.data, split, self.dictionary, epoch, self.args.dataset_impl, combine)
        dataset = maybe_shorten_dataset(
            dataset,
            split,
            self.args.shorten_data_split_list,
            self.args.shorten_method,
            self.args.tokens_per_sample,
            self.args.seed,
        )
        if self.args.sample_break_mode == "eos":
            training = loaded_for_training(kwargs)  # not a split named train* that eval-lm scores
            limit = self.args.tokens_per_sample if training else options.eval_tokens_per_sample
            model_limit = self.model_position_limit
            if not training and model_limit and (limit == 0 or limit > model_limit):
                limit = model_limit  # the model cannot read longer samples; the warning below says so
            blocks = SentenceBlockDataset(
                dataset, dataset.sizes, limit, pad=self.dictionary.pad(), eos=self.dictionary.eos()
            )
            n_cut = int((dataset.sizes > limit).sum()) if limit > 0 else 0
            if n_cut and training:
                logger.info(
                    f"{split}: {n_cut} sentences longer than {limit} tokens are cut into "
                    "pieces for training (nothing dropped)"
                )
            elif n_cut:
                logger.warning(
                    f"{split}: {n_cut} of {len(dataset)} sentences are longer than "
                    + (
                        f"--eval-tokens-per-sample {limit}"
                        if limit != model_limit
                        else f"the model's {limit} positions (--max-target-positions)"
                    )
                    + " and are scored in pieces, each piece without the context before it: the "
                    "perplexity depends on the cut. Drop --eval-tokens-per-sample (0 = whole "
                    "sentences) or give the model more positions to score every sentence whole."
                )
        else:
            blocks = TokenBlockDataset(
                dataset,
                dataset.sizes,
                self.args.tokens_per_sample,
                pad=self.dictionary.pad(),
                eos=self.dictionary.eos(),
                break_mode=self.args.sample_break_mode,
                include_targets=True,
            )
        dataset = MonolingualDataset(
            dataset=blocks,
            sizes=blocks.sizes,
            src_vocab=self.dictionary,
            tgt_vocab=self.output_dictionary,
            add_eos_for_other_targets=self.args.sample_break_mode != "none",
            shuffle=True,
            targets=self.targets,
            add_bos_token=self.args.add_bos_token,
        )
        if options.corpus_order and loaded_for_training(kwargs):
            dataset = CorpusOrder(dataset)  # batches never shuffled: see get_batch_iterator
        self.datasets[split] = dataset

    def get_batch_iterator(
        self,
        dataset,
        max_tokens=None,
        max_sentences=None,
        max_positions=None,
        ignore_invalid_inputs=False,
        required_batch_size_multiple=1,
        **kwargs,
    ):
        """fairseq's batches, of any size (``--required-batch-size-multiple`` not applied), the criterion's
        counts made on the host; a ``--max-tokens`` below the longest sample is refused by name."""
        sizes = np.asarray(dataset.sizes)  # the hub's NestedDictionaryDataset holds a list of one array
        longest = int(sizes.max()) if sizes.size else 0
        if max_tokens is not None and longest > max_tokens:
            raise OptionError(
                f"--max-tokens {max_tokens} is below the longest sample of this split ({longest} "
                "tokens; sentences are scored whole): raise --max-tokens to at least "
                f"{longest}, or batch by --batch-size"
            )
        # a multiple of 1: fairseq-fixed's batch_by_size drops a last batch that is not a multiple of it
        iterator = super().get_batch_iterator(
            dataset, max_tokens, max_sentences, max_positions, ignore_invalid_inputs, 1, **kwargs
        )
        if isinstance(dataset, CorpusOrder):  # --corpus-order: the same batches in the same order every epoch
            iterator.disable_shuffling = True
        if not isinstance(iterator.collate_fn, CountedCollate):  # fairseq may hand back an iterator it made before
            # the criterion's counts, made on the host: read from the device they would cost a sync an update
            iterator.collate_fn = CountedCollate(iterator.collate_fn, self.target_dictionary)
        return iterator


def check_sample_lengths(args):
    """``--tokens-per-sample`` below 1 would silently stop cutting long training sentences (with
    ``--sample-break-mode eos``) or divide by zero (the other modes); a negative
    ``--eval-tokens-per-sample`` would silently mean 0 (whole sentences)."""
    options = sentence_task_options(args, "tokens_per_sample", "eval_tokens_per_sample")
    tokens = options.tokens_per_sample
    if tokens is not None and tokens < 1:
        raise OptionError(
            f"--tokens-per-sample {tokens}: a training sample holds at least 1 token (the "
            "paper: 35; longer sentences are cut into pieces of this many). fairseq-eval-lm "
            "subtracts --context-window from it: give a --tokens-per-sample above the window"
        )
    eval_tokens = options.eval_tokens_per_sample or 0
    if eval_tokens < 0:
        raise OptionError(
            f"--eval-tokens-per-sample {eval_tokens}: give 0 (whole sentences, the default) "
            "or the most tokens per evaluation sample"
        )


class ContextWindow(LMContextWindowDataset):
    """fairseq's ``--context-window`` dataset over this task's samples: each sample read after up to
    ``context_window`` tokens of the samples before it in corpus order."""

    def __init__(self, dataset, context_window, pad_idx):
        sizes = np.asarray(dataset.sizes)
        # bounded by the longest sample (fairseq: --tokens-per-sample) plus the window: every sample gets
        # the whole window, a whole sentence longer than --tokens-per-sample too
        super().__init__(dataset, max(int(sizes.max()) if sizes.size else 0, 1), context_window, pad_idx)

    @property
    def sizes(self):
        return self.dataset.sizes
