"""The character-level LSTM baseline of Kawakami et al. (2017): one LSTM over the character
stream, words separated by the end-of-word symbol (the space), scored per word so that its
bits per character are counted exactly like HCLM's (same task, criterion and ``|c|``)."""

from dataclasses import dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F
from fairseq.models import register_model, register_model_architecture

from ..data.spelling import END_OF_WORD, PAD
from ..modules.lstm_helpers import packed_lstm
from ..modules.open_vocabulary_decoder import CharacterModelConfig, OpenVocabularyDecoder
from .arch_defaults import set_arch_defaults
from .open_vocabulary_lm import OpenVocabularyLanguageModel


@dataclass
class CharLSTMLMConfig(CharacterModelConfig):
    char_embed_dim: int = field(default=1000, metadata={"help": "character embedding size"})
    hidden_size: int = field(default=1000, metadata={"help": "LSTM hidden size (paper: 1000)"})
    num_layers: int = field(default=1, metadata={"help": "number of stacked LSTM layers"})


class CharLSTMDecoder(OpenVocabularyDecoder):
    def __init__(self, cfg: CharLSTMLMConfig, dictionary):
        super().__init__(cfg, dictionary)
        self.lstm = nn.LSTM(
            cfg.char_embed_dim,
            cfg.hidden_size,
            cfg.num_layers,
            batch_first=True,
            dropout=cfg.dropout if cfg.num_layers > 1 else 0.0,
        )
        self.char_output = nn.Linear(cfg.hidden_size, self.spelling.num_characters)

    def score(self, src_tokens, target_tokens, state):
        B, T = target_tokens.shape
        chars, lengths = self.spelling(target_tokens)  # (B,T,L), (B,T)
        inside = torch.arange(chars.size(-1), device=chars.device) < lengths.unsqueeze(-1)
        # lay each row's words end to end: symbol s of row b belongs to word word_of[b, s]
        row_lengths = lengths.sum(1)
        position = inside.flatten(1).cumsum(1).view_as(inside) - 1
        rows = torch.arange(B, device=chars.device).view(B, 1, 1).expand_as(chars)
        words = torch.arange(T, device=chars.device).view(1, T, 1).expand_as(chars)
        targets = chars.new_full((B, int(row_lengths.max())), PAD)
        targets[rows[inside], position[inside]] = chars[inside]
        word_of = chars.new_zeros(targets.shape)
        word_of[rows[inside], position[inside]] = words[inside]
        # every word ends with END_OF_WORD, so the symbol before each chunk is one too
        inputs = F.pad(targets[:, :-1], (1, 0), value=END_OF_WORD)
        states, final = packed_lstm(self.lstm, self.dropout(self.embed_chars(inputs)), row_lengths, state)
        log_probs = self.char_output(self.dropout(states)).log_softmax(-1)
        per_symbol = log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
        per_symbol = per_symbol.masked_fill(targets.eq(PAD), 0.0)
        per_word = per_symbol.new_zeros(B, T).scatter_add_(1, word_of, per_symbol)
        return per_word, {}, final


@register_model("char_lstm_lm", dataclass=CharLSTMLMConfig)
class CharLSTMLanguageModel(OpenVocabularyLanguageModel):
    decoder_class = CharLSTMDecoder


# --arch char_lstm_lm is the paper's baseline (the config's defaults): a 1000-d LSTM.


@register_model_architecture("char_lstm_lm", "char_lstm_lm_small")
def char_lstm_lm_small(args):
    set_arch_defaults(args, char_embed_dim=128, hidden_size=256, dropout=0.3)
