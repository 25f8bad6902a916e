"""State carried from one chunk of a word stream to the next (truncated BPTT).

The ``open_vocabulary_language_modeling`` task cuts each of its parallel streams into
consecutive chunks and tags every batch with ``stream_ids`` and ``stream_positions`` (the
index, within its stream, of each row's first word). A model resumes the state it saved
after the previous batch only if this batch is that batch's direct continuation (same
streams, next positions); anything else (a new epoch, validation after training, a
resumed run, a shuffled or foreign batch) starts from a fresh state, never a stale one.
Training and evaluation keep separate states (``mode``), so a validation run in the middle
of an epoch (``--validate-interval-updates``) neither overwrites the training streams'
state nor hands its own to them.
"""
from typing import Any, Optional

import torch
from torch import Tensor


def detach(state: Any) -> Any:
    if isinstance(state, Tensor):
        return state.detach()
    if isinstance(state, dict):
        return {name: detach(value) for name, value in state.items()}
    if isinstance(state, (tuple, list)):
        return type(state)(detach(value) for value in state)
    return state


class StreamCarry:
    def __init__(self):
        self._saved = {}  # mode ("train" / "eval") -> (stream ids, next positions, state)

    def resume(self, stream_ids: Optional[Tensor], positions: Optional[Tensor], mode: str) -> Optional[Any]:
        saved = self._saved.get(mode)
        if saved is None or stream_ids is None:
            return None
        saved_ids, next_positions, state = saved
        if (saved_ids.shape == stream_ids.shape and torch.equal(saved_ids, stream_ids)
                and torch.equal(next_positions, positions)):
            return state
        return None

    def save(self, stream_ids: Optional[Tensor], next_positions: Optional[Tensor], state: Any, mode: str):
        self._saved[mode] = None if stream_ids is None else (stream_ids, next_positions, detach(state))

    def reset(self):
        self._saved = {}
