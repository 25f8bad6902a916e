"""What a task reads, asked of the task by the models that must agree with it (a model never imports a task):
words with their characters, or one sentence a sample."""

import logging

logger = logging.getLogger(__name__)


def reads_characters(task) -> bool:
    """Whether ``task`` reads words with their characters (open_vocabulary_language_modeling): what the
    character models need and what the word-level and translation models refuse."""
    return bool(getattr(task, "reads_characters", False))


def reads_streams(task) -> bool:
    """Whether ``task`` reads a split as parallel streams, its state carried from chunk to chunk (the stream
    tasks): a model trained so is scored so, never a sentence alone from a fresh state."""
    return bool(getattr(task, "reads_streams", False))


def warn_if_memory_spans_sentences(task, memory_window: int, arch: str) -> None:
    """fairseq-eval-lm builds its task from the command line (default: language_modeling,
    1024-token blocks across sentences), not from the checkpoint. A model trained one
    sentence per sample then silently attends across sentences; say so, and how to fix it."""
    args = getattr(task, "args", None)  # a legacy task's options; fairseq's dataclass tasks keep theirs in task.cfg
    # options that declare no --sample-break-mode (translation's, the stream tasks') read as eos: no warning
    break_mode = getattr(args, "sample_break_mode", None) or "eos"
    if getattr(task, "reads_sentences", False) or break_mode == "eos" or memory_window > 0:
        return
    tokens = getattr(args, "tokens_per_sample", "?")  # the other task's value, shown as it gives it
    logger.warning(
        f"{arch}: task '{task.__class__.__name__}' gives samples of up to {tokens} tokens across sentence boundaries "
        f"(--sample-break-mode {break_mode}) and --memory-window is 0, so the attention spans "
        "the whole sample. For the paper's per-sentence setting add "
        "--task sentence_language_modeling (fairseq-eval-lm does not take the task from the "
        "checkpoint)."
    )
