"""The common body of our character-level word-stream models (HCLM, HCLM + cache, char LSTM).

Such a model scores the *observed* next word from its characters, ``log p(w_t | w_<t)``; there is no
softmax over a word list (the vocabulary is open), so the models score text and refuse step-wise generation.
"""

from dataclasses import dataclass, field

import torch.nn as nn
from fairseq.dataclass import FairseqDataclass
from fairseq.models import FairseqDecoder

from ..data.dictionary_fingerprint import DictionaryFingerprint
from ..data.spelling import PAD, Spelling
from ..errors import UnsupportedError
from .lstm_helpers import UNLIMITED_POSITIONS
from .stream_carry import StreamCarry, next_chunk


@dataclass
class CharacterModelConfig(FairseqDataclass):
    char_embed_dim: int = field(default=600, metadata={"help": "character embedding size"})
    hidden_size: int = field(default=600, metadata={"help": "hidden size of every LSTM"})
    dropout: float = field(default=0.5, metadata={"help": "dropout on all but the recurrent connections (paper: 0.5)"})
    init_range: float = field(
        default=0.08, metadata={"help": "all parameters start uniform in [-init_range, init_range] (paper: 0.08)"}
    )


class OpenVocabularyDecoder(DictionaryFingerprint, FairseqDecoder):
    """Subclasses implement ``score(src_tokens, target_tokens, state) -> (log_probs (B,T),
    extra dict, new state)``; this class carries the state across chunks of a stream."""

    def __init__(self, cfg: CharacterModelConfig, dictionary):
        super().__init__(dictionary)
        self.cfg = cfg
        self.spelling = Spelling(dictionary)
        self.embed_chars = nn.Embedding(self.spelling.num_characters, cfg.char_embed_dim, PAD)
        self.dropout = nn.Dropout(cfg.dropout)
        self.carry = StreamCarry()
        self.register_fingerprint(dictionary)

    def reset_parameters(self):
        """Every parameter uniform in [-init_range, init_range] (Kawakami et al. 2017)."""
        for param in self.parameters():
            nn.init.uniform_(param, -self.cfg.init_range, self.cfg.init_range)

    def forward(
        self,
        src_tokens,
        target_tokens=None,
        stream_ids=None,
        stream_positions=None,
        incremental_state=None,
        stream_chunk=None,
        **unused,
    ):
        """src_tokens (B,T): ``w_{t-1}``; target_tokens (B,T): ``w_t``, the words to score."""
        if incremental_state is not None or target_tokens is None:
            raise UnsupportedError(
                f"{self.__class__.__name__} scores given text (alm-score, fairseq-eval-lm, fairseq-validate, "
                "alm-cache-posterior); it has no word softmax to generate from. Batches come from "
                "--task open_vocabulary_language_modeling, which supplies the target words."
            )
        mode = "train" if self.training else "eval"
        state = self.carry.resume(stream_ids, stream_positions, mode, stream_chunk)
        log_probs, extra, state = self.score(src_tokens, target_tokens, state)
        next_positions = None if stream_positions is None else stream_positions + src_tokens.size(1)
        self.carry.save(stream_ids, next_positions, state, mode, next_chunk(stream_chunk, src_tokens.size(1)))
        return log_probs.unsqueeze(-1), extra

    def score(self, src_tokens, target_tokens, state):
        raise NotImplementedError

    def get_normalized_probs(self, net_output, log_probs, sample=None):
        # a stride-0 view the size of the dictionary: fairseq's scorers gather the target's column, the one
        # that holds the word's probability (any other column is none), without a V-sized softmax
        scores = net_output[0] if log_probs else net_output[0].exp()
        return scores.expand(-1, -1, len(self.dictionary))

    def max_positions(self):
        return UNLIMITED_POSITIONS
