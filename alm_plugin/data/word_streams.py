"""A corpus as parallel streams of words, read chunk by chunk (truncated BPTT).

The split is one long sequence of word ids, ``</s>`` ending each line, preceded by one
``</s>`` that serves as the "previous word" of the first line. It is cut into ``R`` equal
rows (the last one padded, so that **every word is a target exactly once**) and each row
into chunks of ``T`` words; item ``i`` is chunk ``i`` of all rows of this shard. Inputs and
targets overlap by one word, so no word is lost at a chunk boundary (fairseq's
``truncated_bptt`` example pads the last target of every chunk instead).
"""
import math

import torch
from fairseq.data import FairseqDataset


class WordStreamDataset(FairseqDataset):
    def __init__(self, words: torch.Tensor, rows_per_shard: int, words_per_chunk: int, pad: int,
                 eos: int, shard_id: int = 0, num_shards: int = 1):
        super().__init__()
        stream = torch.cat([words.new_tensor([eos]), words])
        rows = rows_per_shard * num_shards
        row_length = max(1, math.ceil(words.numel() / rows))
        padded = stream.new_full((rows * row_length + 1,), pad)
        padded[: stream.numel()] = stream
        # row r: inputs padded[r*L : r*L+L], targets one further; the +1 column is the overlap
        starts = torch.arange(rows).unsqueeze(1) * row_length
        table = padded[starts + torch.arange(row_length + 1)]
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
