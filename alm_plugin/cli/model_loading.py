"""How every console script loads its checkpoints (``load_models``): each model in eval mode with its
task, and every failed load one ``ScoringError`` naming the file and the fix."""

import os
from typing import List, Optional

import torch

from ..errors import CorruptDataError, ScoringError

LANGUAGE_MODEL_TASKS = (
    "language_modeling",
    "sentence_language_modeling",
    "document_language_modeling",
    "open_vocabulary_language_modeling",
)


def saved_task_name(path: str) -> str:
    """The ``--task`` saved in a checkpoint, the one its training used (read only to explain a failed load)."""
    from fairseq import checkpoint_utils

    state = checkpoint_utils.load_checkpoint_to_cpu(path)
    if state.get("cfg") is not None and state["cfg"].get("task") is not None:
        return state["cfg"]["task"].get("_name") or getattr(state["cfg"]["task"], "task", "unknown")
    return getattr(state.get("args"), "task", "unknown")


def load_models(paths: List[str], data: Optional[str], use_cpu: bool, tool: str = "alm-score"):
    """``[(model, task)]`` for each checkpoint, in eval mode, on the GPU when there is one
    and ``use_cpu`` is false; every problem a ``ScoringError``. Every console script loads
    its checkpoints here."""
    from fairseq import checkpoint_utils
    from fairseq.models import FairseqLanguageModel

    for path in paths:
        if not os.path.isfile(path):
            raise ScoringError(f"no language model checkpoint at {path}")
    data_option = "--lm-data" if tool == "alm-rescore" else "--data"
    loaded = []
    for path in paths:
        overrides = {"data": data} if data else None
        try:
            models, _, task = checkpoint_utils.load_model_ensemble_and_task([path], arg_overrides=overrides)
        except FileNotFoundError as error:
            task = saved_task_name(path)
            if task not in LANGUAGE_MODEL_TASKS:  # a translation model asks for dict.de.txt: say what it is
                raise ScoringError(
                    f"{path} holds a model of the {task} task, not a language model: {tool} works "
                    f"with language models (trained with --task {' / '.join(LANGUAGE_MODEL_TASKS)})"
                ) from None
            raise ScoringError(
                f"{path}: could not load its dictionary ({error}); pass {data_option}, "
                "the data-bin directory with the dict.txt the LM was trained on"
            ) from None
        except CorruptDataError:  # a broken dict.txt: its own line names the file and the fix
            raise
        except ValueError as error:  # our models' own checks: dictionary, architecture, options
            hint = (
                f" ({data_option} must be the data-bin the LM was trained on)"
                if data and "dictionary" in str(error)
                else ""
            )
            raise ScoringError(f"{path}: {error}{hint}") from None
        except Exception as error:  # a truncated or foreign file (explained by checkpoint_safety)
            raise ScoringError(str(error)) from None
        model = models[0]
        if not isinstance(model, FairseqLanguageModel):
            raise ScoringError(
                f"{path} holds a {model.__class__.__name__}, not a language model: {tool} "
                "works with language models (attentive_lm, amsrn, alm_lstm, char_cache_lm, "
                "fairseq's lstm_lm / transformer_lm)"
            )
        loaded.append((model.eval() if use_cpu or not torch.cuda.is_available() else model.cuda().eval(), task))
    return loaded


def task_data(task) -> Optional[str]:
    """The data directory (or ``:``-separated directories) a loaded task reads."""
    options = task.cfg if getattr(task, "cfg", None) is not None else getattr(task, "args", None)
    return getattr(options, "data", None)
