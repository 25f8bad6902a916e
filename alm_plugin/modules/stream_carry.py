"""State carried from one chunk of a word stream to the next (truncated BPTT).

A model resumes the state it saved after the previous batch only if this batch is that batch's direct
continuation (same streams, next positions); any other batch starts from a fresh state, never a stale
one. Training and evaluation keep separate states (``mode``).
"""

from typing import Any, Optional, Tuple

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


def stream_chunk(stream_ids: Tensor, position: int) -> Tuple[Tuple[int, ...], int]:
    """A batch's place in its streams, on the host: which streams, from which word. The tasks'
    collate puts it in the batch's input, so that the carry tells whether a batch continues the
    last one without comparing device tensors."""
    return tuple(stream_ids.tolist()), int(position)


def next_chunk(chunk: Optional[tuple], length: int) -> Optional[tuple]:
    """The place of the batch that continues ``chunk``, ``length`` words later."""
    return None if chunk is None else (chunk[0], chunk[1] + length)


class StreamCarry:
    def __init__(self):
        self._saved = {}  # mode ("train" / "eval") -> (stream ids, next positions, next chunk, state)

    def resume(
        self, stream_ids: Optional[Tensor], positions: Optional[Tensor], mode: str, chunk: Optional[tuple] = None
    ) -> Optional[Any]:
        """The state saved after the previous batch if this one (``stream_ids`` from ``positions``;
        ``chunk``: the same on the host, ``stream_chunk``) continues it, else None."""
        saved = self._saved.get(mode)
        if saved is None or stream_ids is None:
            return None
        saved_ids, next_positions, expected, state = saved
        if chunk is not None and expected is not None:  # both on the host: nothing read from the device
            return state if chunk == expected else None
        if (
            saved_ids.shape == stream_ids.shape
            and torch.equal(saved_ids, stream_ids)
            and torch.equal(next_positions, positions)
        ):
            return state
        return None

    def save(
        self,
        stream_ids: Optional[Tensor],
        next_positions: Optional[Tensor],
        state: Any,
        mode: str,
        expected: Optional[tuple] = None,
    ):
        """Keeps ``state`` for the batch that continues this one: ``stream_ids`` from
        ``next_positions`` (``expected``: its ``stream_chunk``, where this batch had one)."""
        self._saved[mode] = None if stream_ids is None else (stream_ids, next_positions, expected, detach(state))

    def reset(self):
        self._saved = {}
