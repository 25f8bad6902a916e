"""Document-level language modelling: word-level LMs on a corpus read as parallel streams, their LSTM
state and the last ``--memory-window`` states of their attention memory carried from chunk to chunk across
sentence ends, as Zaremba et al. (2014) train a medium LSTM."""

from dataclasses import dataclass, field

from fairseq.tasks import register_task
from fairseq.tasks.language_modeling import LanguageModelingTask

from ..data.word_streams import WordStreamDataset
from ..errors import OptionError
from ..evaluation.neural_cache import CACHE_MODELS
from ..evaluation.options import TestTimeOptions, TestTimeTask
from ..options.adaptive_softmax import OutputLayerChecks
from .stream_task import WordStreamConfig, WordStreamTask

BURN_IN = 100  # --stream-burn-in's default: docs/models.md says what it rests on


@dataclass
class DocumentLanguageModelingConfig(WordStreamConfig, TestTimeOptions):
    stream_burn_in: int = field(
        default=BURN_IN,
        metadata={
            "help": "evaluation on several streams: the words each stream but the first reads, unscored, before "
            "its first scored word"
        },
    )


def check_burn_in(value) -> None:
    if value is None or value < 0:
        raise OptionError(
            f"--stream-burn-in {value}: the words a stream reads before it scores must be 0 or more (default {BURN_IN})"
        )


@register_task("document_language_modeling", dataclass=DocumentLanguageModelingConfig)
class DocumentLanguageModelingTask(TestTimeTask, OutputLayerChecks, WordStreamTask):
    """Word-level LMs on streams, their state and attention memory carried across chunks."""

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
                f"({CACHE_MODELS}), or fairseq's --task language_modeling for fairseq's own models"
            )
        window = getattr(getattr(model, "decoder", None), "attention", None)
        if window is not None and window.window == 0:
            raise OptionError(
                f"--arch {getattr(cfg, '_name', cfg)} attends over its history, which on "
                "document_language_modeling spans the whole stream: bound it with --memory-window M "
                "(e.g. 100; the last M states are carried from chunk to chunk)."
            )
        return self.attach_evaluation_options(model)

    def build_generator(self, models, args, *rest, **kwargs):
        """Refuse fairseq-generate, whose loaded split is chunks of parallel streams, not prompts; the hub's
        and fairseq-interactive's prompts are sentences, continued as fairseq's ``language_modeling`` does."""
        if any(isinstance(dataset, WordStreamDataset) for dataset in self.datasets.values()):
            raise OptionError(
                "fairseq-generate reads a split of --task document_language_modeling as chunks of parallel "
                "streams, not prompts it can continue: generate with --task sentence_language_modeling (the "
                "same checkpoint, each sentence a prompt: --prefix-size N keeps its first N words), or type "
                "prompts into fairseq-interactive --task document_language_modeling"
            )
        return super().build_generator(models, args, *rest, **kwargs)

    def reading(self, split, training):
        """With dynamic evaluation a split scored is one stream of segments (whatever --batch-size,
        whatever the split's name): one step after each segment, the figure independent of the batching."""
        settings = None if training else self.evaluation_options.dynamic
        return (1, settings.segment) if settings is not None else super().reading(split, training)

    def burn_in(self) -> int:
        check_burn_in(self.cfg.stream_burn_in)
        return self.evaluation_options.burn_in()

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
