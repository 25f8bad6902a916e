"""One sentence per sample, with over-long sentences cut into consecutive pieces."""

import numpy as np
from fairseq.data import BaseWrapperDataset, TokenBlockDataset
from fairseq.data.token_block_utils_fast import _get_block_to_dataset_index_fast


def sentence_piece_slices(sizes: np.ndarray, max_tokens: int) -> np.ndarray:
    """``[start, end)`` offsets into the token stream: one slice per sentence, or several of
    at most ``max_tokens`` tokens when the sentence is longer (no token is ever dropped)."""
    ends = np.cumsum(sizes)
    starts = ends - sizes
    pieces = np.maximum(1, -(-sizes // max_tokens)) if max_tokens > 0 else np.ones_like(sizes)
    first = np.repeat(starts, pieces)
    piece_index = np.arange(pieces.sum()) - np.repeat(np.cumsum(pieces) - pieces, pieces)
    slice_starts = first + piece_index * max(max_tokens, 1)
    slice_ends = np.minimum(slice_starts + (max_tokens if max_tokens > 0 else sizes.max()), np.repeat(ends, pieces))
    return np.stack([slice_starts, slice_ends], axis=1).astype(np.int64)


class SentenceBlockDataset(TokenBlockDataset):
    """fairseq's ``eos`` break mode, except that a sentence longer than ``block_size`` is split into
    consecutive pieces, none dropped; a continuation piece's source starts with the previous piece's
    last token, so its first word is predicted from its real predecessor."""

    def __init__(self, dataset, sizes, block_size, pad, eos, include_targets=True):
        super().__init__(
            dataset, sizes, block_size, pad=pad, eos=eos, break_mode="eos_split", include_targets=include_targets
        )

    @staticmethod
    def _build_slice_indices(sizes, break_mode, document_sep_len, block_size):
        sizes = np.asarray(sizes, dtype=np.int64)
        slice_indices = sentence_piece_slices(sizes, block_size or 0)
        block_to_dataset_index = _get_block_to_dataset_index_fast(sizes, slice_indices)
        return slice_indices[:, 1] - slice_indices[:, 0], block_to_dataset_index, slice_indices


class CorpusOrder(BaseWrapperDataset):
    """Batches of consecutive samples, in the order of the corpus (not sorted by length)."""

    def ordered_indices(self):
        return np.arange(len(self))
