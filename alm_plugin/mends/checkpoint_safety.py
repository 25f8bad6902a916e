"""Let fairseq checkpoints load under torch's safe loading (``weights_only=True``), with exactly the types
they hold allow-listed, and refuse a checkpoint that cannot be read or used in one line that names it."""

import argparse
import contextvars
import os
import re

import torch

from ..evaluation.options import SAVED_CACHE_OPTIONS

SAFE_CHECKPOINT_TYPES = [argparse.Namespace]

torch.serialization.add_safe_globals(SAFE_CHECKPOINT_TYPES)


def read_checkpoint(path):
    """A checkpoint's saved state read as data (``weights_only=True``): a file holding any other
    object (a pickle that would run code when loaded) is refused by torch's ``UnpicklingError``."""
    return torch.load(path, map_location="cpu", weights_only=True)


TEST_TIME_OPTIONS = SAVED_CACHE_OPTIONS

# the task a fairseq command scores with, while its checkpoints load (load_model_ensemble_and_task's task)
SCORING_TASK = contextvars.ContextVar("alm_scoring_task", default=None)
# whether the loading builds its task from the checkpoint (the hub, alm-score: no task given)
BUILDS_TASK = contextvars.ContextVar("alm_builds_task", default=False)


def trained_task(state):
    """The name of the task saved in a checkpoint, the one its training used (its cfg, or a legacy one's args)."""
    task = (state.get("cfg") or {}).get("task")
    if task is not None:
        return task.get("_name")
    return getattr(state.get("args"), "task", None)


def saved_model(state):
    """The name of the model saved in a checkpoint (its cfg's ``_name``, a saved Namespace's or legacy ``arch``)."""
    model = (state.get("cfg") or {}).get("model")
    if isinstance(model, argparse.Namespace):
        return getattr(model, "_name", None) or getattr(model, "arch", None)
    if model is not None:
        return model.get("_name")
    return getattr(state.get("args"), "arch", None)


def check_saved_names(state, path):
    """Refuse a checkpoint whose saved model (or, where the loading builds the task from it, task) fairseq
    does not know here."""
    from fairseq.models import ARCH_MODEL_REGISTRY, MODEL_REGISTRY
    from fairseq.tasks import TASK_REGISTRY

    from ..errors import CheckpointError

    fix = "load the --user-dir that defines it, or give a checkpoint fairseq-train wrote"
    model = saved_model(state)
    if model not in ARCH_MODEL_REGISTRY and model not in MODEL_REGISTRY:
        raise CheckpointError(f"{path}: its saved model {model!r} is not one fairseq knows here: {fix}")
    task = trained_task(state)
    if BUILDS_TASK.get() and task not in TASK_REGISTRY:
        raise CheckpointError(f"{path}: its saved task {task!r} is not one fairseq knows here: {fix}")


def check_scoring_task(state, path):
    """A model trained on document streams scored one sentence at a time from a fresh state
    (``--task sentence_language_modeling``) is scored as it never learned: refused in one line."""
    scoring = SCORING_TASK.get()
    if getattr(scoring, "reads_sentences", False) and trained_task(state) == "document_language_modeling":
        from ..evaluation.options import refuse_sentences_alone

        refuse_sentences_alone(
            path, "--task sentence_language_modeling", "score it under --task document_language_modeling"
        )


def forget_saved_test_time_options(state, overrides):
    """Set the neural cache's settings that a checkpoint's task config holds without a window back to
    "not given", unless ``overrides`` names them: a tool building its task from the checkpoint reads
    only its own."""
    from omegaconf import open_dict

    task = (state.get("cfg") or {}).get("task")
    if task is not None and not task.get("neural_cache_window"):
        with open_dict(task):
            for name in TEST_TIME_OPTIONS:
                if name in task and name not in overrides:
                    task[name] = None
    args = state.get("args")
    if args is not None and not vars(args).get("neural_cache_window"):  # a saved Namespace, read as data
        for name in TEST_TIME_OPTIONS:
            if hasattr(args, name) and name not in overrides:
                setattr(args, name, None)


def whole_sentences(text: str, limit: int = 240) -> str:
    """``text`` on one line, its terminal colours dropped, as many of its sentences as fit in
    ``limit`` characters (at least the first, cut at a word and marked ``...`` where it is longer)."""
    words = re.sub(r"\x1b\[[0-9;]*m", "", text).split()
    sentences = re.split(r"(?<=[.!?])\s+", " ".join(words))
    kept = sentences[0]
    for sentence in sentences[1:]:
        if len(kept) + 1 + len(sentence) > limit:
            break
        kept += " " + sentence
    if len(kept) > limit:
        kept = kept[:limit].rsplit(" ", 1)[0] + " ..."
    return kept


def _explain_unreadable_checkpoints():
    """Wrap fairseq's ``load_checkpoint_to_cpu`` and ``load_model_ensemble_and_task`` (once): a checkpoint
    that cannot be read, or does not fit what loads it, is refused in one line that names it."""
    from fairseq import checkpoint_utils

    from ..errors import CheckpointError

    load = checkpoint_utils.load_checkpoint_to_cpu
    if getattr(load, "explains_errors", False):
        return

    def load_checkpoint_to_cpu(path, arg_overrides=None, *args, **kwargs):
        if os.environ.get("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "0").lower() not in ("", "0", "false"):
            raise CheckpointError(
                f"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD is set: torch would unpickle {path}, running any code it "
                "holds; unset it (the plugin lets fairseq checkpoints load as data)"
            )
        if os.path.exists(path) and not os.path.isfile(path):  # a pipe would block the read for good
            raise CheckpointError(
                f"{path} is not a regular file (a pipe, a device or a folder): give the checkpoint file "
                "fairseq-train wrote (its --save-dir's checkpoint_best.pt)"
            )
        try:
            state = load(path, arg_overrides, *args, **kwargs)
        except FileNotFoundError:
            raise
        except Exception as error:
            raise CheckpointError(
                f"{path} could not be read as a fairseq checkpoint ({error.__class__.__name__}: "
                f"{whole_sentences(str(error))}). Is it a complete checkpoint_*.pt written by "
                "fairseq-train (not truncated by a full disk or an interrupted copy)?"
            ) from None
        from ..models.checkpoint_fit import check_overrides, fill_options_older_than, hand_to_the_model
        from .shallow_fusion import check_lm_fingerprint

        check_saved_names(state, path)
        check_lm_fingerprint(path, state, arg_overrides)
        check_scoring_task(state, path)
        check_overrides(state, arg_overrides)
        fill_options_older_than(state, arg_overrides)
        hand_to_the_model(state)
        forget_saved_test_time_options(state, arg_overrides or {})
        return state

    load_checkpoint_to_cpu.explains_errors = True
    checkpoint_utils.load_checkpoint_to_cpu = load_checkpoint_to_cpu

    ensemble = checkpoint_utils.load_model_ensemble_and_task

    def load_model_ensemble_and_task(filenames, *args, **kwargs):
        task = kwargs.get("task", args[1] if len(args) > 1 else None)
        scoring, builds = SCORING_TASK.set(task), BUILDS_TASK.set(task is None)
        try:
            return ensemble(filenames, *args, **kwargs)
        except OSError as error:  # fairseq's IOError("Model file not found: PATH"), a traceback
            if not str(error).startswith("Model file not found: "):
                raise
            missing = str(error).split(": ", 1)[1]
            parts = missing.split(os.pathsep)
            if len(parts) > 1 and all(os.path.isfile(part) for part in parts):  # eval-lm reads --path whole
                raise CheckpointError(
                    f"--path {missing}: this command scores one checkpoint, not an ensemble: give one of them "
                    "(alm-score --path A:B scores an ensemble)"
                ) from None
            raise CheckpointError(
                f"--path {missing}: no such file; give a checkpoint fairseq-train wrote (its --save-dir's "
                "checkpoint_best.pt)"
            ) from None
        finally:
            SCORING_TASK.reset(scoring)
            BUILDS_TASK.reset(builds)

    checkpoint_utils.load_model_ensemble_and_task = load_model_ensemble_and_task


_explain_unreadable_checkpoints()
