"""A corpus as parallel streams of words, read chunk by chunk (truncated BPTT): the split cut at line ends
into rows, each row into chunks, every word a target exactly once."""

import logging
import math

import torch
from fairseq.data import FairseqDataset

logger = logging.getLogger(__name__)


def starts_of_lines(words: torch.Tensor, eos: int) -> torch.Tensor:
    """Every line's first word, then the text's end (an empty row's start)."""
    return torch.cat(
        [words.new_zeros(1), (words[:-1] == eos).nonzero().flatten() + 1, words.new_tensor([words.numel()])]
    )


def line_starts(words: torch.Tensor, rows: int, eos: int) -> torch.Tensor:
    """The first word of each of ``rows`` rows: the line start at or after each equal cut
    ``r * N / rows`` (a row with no line start left is empty)."""
    lines = starts_of_lines(words, eos)
    cuts = torch.arange(rows, dtype=lines.dtype) * words.numel() // rows
    return lines[torch.searchsorted(lines, cuts)]


PREAMBLE = 35  # words of the text's opening a burnt-in row reads first (one chunk of the usual 35)


def burn_in_starts(words: torch.Tensor, starts: torch.Tensor, burn_in: int, eos: int) -> torch.Tensor:
    """Where each row begins to read: the line start at or before ``burn_in`` words ahead of its
    first scored word (the text's start at most), or that word itself without a burn-in."""
    if burn_in <= 0:
        return starts
    lines = starts_of_lines(words, eos)
    back = (starts - burn_in).clamp(min=0)
    return torch.minimum(lines[torch.searchsorted(lines, back, right=True) - 1], starts)


class WordStreamDataset(FairseqDataset):
    """Shard ``shard_id`` of a split's ``words`` as ``rows_per_shard`` rows cut at line ends: item ``i`` is
    chunk ``i`` of every row, ``words_per_chunk`` inputs and the targets one word further. With ``burn_in``
    (evaluation) every row but the first reads, unscored, the text's opening, then its own text from the line
    start at or before ``burn_in`` words back from its first target."""

    def __init__(
        self,
        words: torch.Tensor,
        rows_per_shard: int,
        words_per_chunk: int,
        pad: int,
        eos: int,
        shard_id: int = 0,
        num_shards: int = 1,
        burn_in: int = 0,
    ):
        super().__init__()
        stream = torch.cat([words.new_tensor([eos]), words])  # one </s> ahead: the first line's previous word
        rows = rows_per_shard * num_shards
        starts = line_starts(words, rows, eos)
        lengths = torch.diff(torch.cat([starts, starts.new_tensor([words.numel()])]))
        longest = int(lengths.max())
        if rows > 1 and longest > 1.5 * words.numel() / rows:
            logger.warning(
                f"the text's lines are long for {rows} streams: the longest stream holds {longest} "
                f"words against {words.numel() / rows:.0f} on average (streams start at line ends)"
            )
        # row r reads stream[0 : opening_r] (the text's opening, or nothing), then stream[begin_r : end_r]:
        # from the burn-in's line start to its last word; an empty row reads nothing
        begin, opening = burn_in_starts(words, starts, burn_in, eos), torch.zeros_like(starts)
        if burn_in > 0:
            lines = starts_of_lines(words, eos)
            opening_end = lines[torch.searchsorted(lines, torch.tensor(min(PREAMBLE, words.numel())))]
            near = (begin <= opening_end) | (lengths == 0)  # a burn-in into the opening reads from the start
            begin, opening = torch.where(near, 0, begin), torch.where(near, 0, opening_end)
            begin = torch.where(lengths > 0, begin, starts)
        read = opening + starts - begin  # inputs read before the first scored word
        total = read + lengths
        row_length = max(1, int(total.max()))
        # the inputs stream[...] (the first, the </s> before a line), targets one further: the +1 column
        # is the overlap; beyond a row's length: pads
        offsets = torch.arange(row_length + 1).unsqueeze(0)
        index = torch.where(
            offsets < opening.unsqueeze(1), offsets, begin.unsqueeze(1) + offsets - opening.unsqueeze(1)
        )
        inside = (offsets <= total.unsqueeze(1)) & (lengths > 0).unsqueeze(1)  # an empty row: pads
        table = torch.where(inside, stream[index.clamp(max=words.numel())], torch.full((), pad, dtype=stream.dtype))
        # targets: the words after each input, padding where a row reads without scoring; what it read:
        # the same but for the opening (a neural cache remembers the burn-in, not another text's opening)
        targets = table.masked_fill((offsets <= read.unsqueeze(1)) & (offsets > 0), pad)
        read_targets = table.masked_fill((offsets <= opening.unsqueeze(1)) & (offsets > 0), pad)
        first_row = shard_id * rows_per_shard
        self.rows = table[first_row : first_row + rows_per_shard]
        self.targets = targets[first_row : first_row + rows_per_shard]
        self.read_targets = read_targets[first_row : first_row + rows_per_shard]
        self.read_words = read[first_row : first_row + rows_per_shard]
        self.stream_ids = torch.arange(first_row, first_row + rows_per_shard)
        self.words_per_chunk = words_per_chunk
        self.num_chunks = math.ceil(row_length / words_per_chunk)

    def __len__(self):
        return self.num_chunks

    def __getitem__(self, index):
        start = index * self.words_per_chunk
        end = start + self.words_per_chunk + 1
        chunk = self.rows[:, start:end]
        return {
            "id": index,
            "source": chunk[:, :-1],
            "target": self.targets[:, start + 1 : end],
            "read_target": self.read_targets[:, start + 1 : end],
            "streams": self.stream_ids,
            "position": start,
        }
