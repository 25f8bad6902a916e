"""A corpus as parallel streams of words, read chunk by chunk (truncated BPTT).

The split is one long sequence of word ids, ``</s>`` ending each line, preceded by one
``</s>`` that serves as the "previous word" of the first line. It is cut into ``R`` rows of
about equal length, **each cut at a line end** (the shorter rows padded, so that **every
word is a target exactly once**), and each row into chunks of ``T`` words; item ``i`` is
chunk ``i`` of all rows of this shard. Inputs and targets overlap by one word, so no word
is lost at a chunk boundary (fairseq's ``truncated_bptt`` example pads the last target of
every chunk instead).

Every row starts, from a fresh state, with ``</s>`` as its first input, as the one-stream
reading and a sentence do. A row cut mid-sentence started a fresh state on a word in
mid-text, a state a model trained with Adam may never leave (the docs' recipe on the
shipped sample: valid 379 read as one stream, 71,510 as 20 streams cut mid-text; issue 47).
"""
import logging
import math

import torch
from fairseq.data import FairseqDataset

logger = logging.getLogger(__name__)


def line_starts(words: torch.Tensor, rows: int, eos: int) -> torch.Tensor:
    """The first word of each of ``rows`` rows: the line start at or after each equal cut
    ``r * N / rows`` (a row with no line start left is empty)."""
    count = words.numel()
    # every line start, then the text's end (an empty row's start)
    starts_of_lines = torch.cat([words.new_zeros(1), (words[:-1] == eos).nonzero().flatten() + 1,
                                 words.new_tensor([count])])
    cuts = torch.arange(rows, dtype=starts_of_lines.dtype) * count // rows
    return starts_of_lines[torch.searchsorted(starts_of_lines, cuts)]


class WordStreamDataset(FairseqDataset):
    def __init__(self, words: torch.Tensor, rows_per_shard: int, words_per_chunk: int, pad: int,
                 eos: int, shard_id: int = 0, num_shards: int = 1):
        super().__init__()
        stream = torch.cat([words.new_tensor([eos]), words])
        rows = rows_per_shard * num_shards
        starts = line_starts(words, rows, eos)
        lengths = torch.diff(torch.cat([starts, starts.new_tensor([words.numel()])]))
        row_length = max(1, int(lengths.max()))
        if rows > 1 and row_length > 1.5 * words.numel() / rows:
            logger.warning(f"the text's lines are long for {rows} streams: the longest stream holds {row_length} "
                           f"words against {words.numel() / rows:.0f} on average (streams start at line ends)")
        # row r: inputs stream[start_r : start_r + length_r] (the first is the </s> before its line),
        # targets one further; the +1 column is the overlap; beyond a row's length: pads
        offsets = torch.arange(row_length + 1)
        inside = (offsets.unsqueeze(0) <= lengths.unsqueeze(1)) & (lengths > 0).unsqueeze(1)  # an empty row: pads
        table = torch.where(inside, stream[(starts.unsqueeze(1) + offsets).clamp(max=words.numel())],
                            torch.full((), pad, dtype=stream.dtype))
        first_row = shard_id * rows_per_shard
        self.rows = table[first_row: first_row + rows_per_shard]
        self.stream_ids = torch.arange(first_row, first_row + rows_per_shard)
        self.words_per_chunk = words_per_chunk
        self.num_chunks = math.ceil(row_length / words_per_chunk)

    def __len__(self):
        return self.num_chunks

    def __getitem__(self, index):
        start = index * self.words_per_chunk
        chunk = self.rows[:, start: start + self.words_per_chunk + 1]
        return {"id": index, "source": chunk[:, :-1], "target": chunk[:, 1:],
                "streams": self.stream_ids, "position": start}
