"""Words as character sequences, the bridge between fairseq's word data and the character models: every
dictionary word spelled once, at model build time, into a padded table of character ids, each spelling
ended by an end-of-word symbol."""

from typing import List, Optional, Tuple

import torch
import torch.nn as nn
from torch import Tensor

# start-of-word: the decoder's first input (v_S); the dictionary's characters follow, in sorted order
PAD, START_OF_WORD, END_OF_WORD = 0, 1, 2
NUM_SPECIAL_CHARACTERS = 3


def word_spellings(dictionary):
    """Strings to spell per dictionary index: ``</s>`` and ``<pad>`` spell as nothing."""
    silent = {dictionary.eos(), dictionary.pad()}
    return ["" if index in silent else symbol for index, symbol in enumerate(dictionary.symbols)]


def character_counts(dictionary) -> Tensor:
    """Each dictionary index's share of ``|c|`` in bits per character (Kawakami et al. 2017,
    ``bpc = -log2 p(corpus) / |c|``): its characters + 1 (the space or line break after it); ``</s>``,
    the line break already counted after the sentence's last word, adds nothing."""
    return torch.tensor([len(word) + 1 if word else 0 for word in word_spellings(dictionary)])


class Spelling(nn.Module):
    """A table ``word id -> character ids + end-of-word`` (rebuilt from the dictionary)."""

    def __init__(self, dictionary, characters: Optional[List[str]] = None):
        """``characters``: keep this character inventory (a trained model's), so that a
        dictionary extended with new words spells them with the ids the model learnt; every
        character of the dictionary must be in it."""
        super().__init__()
        words = word_spellings(dictionary)
        self.characters = sorted({c for word in words for c in word}) if characters is None else list(characters)
        index = {c: i + NUM_SPECIAL_CHARACTERS for i, c in enumerate(self.characters)}
        unknown = {c for word in words for c in word} - index.keys()
        if unknown:
            raise ValueError(f"characters outside the model's inventory: {''.join(sorted(unknown))}")
        longest = max(len(word) for word in words) + 1
        table = torch.full((len(words), longest), PAD, dtype=torch.long)
        for row, word in enumerate(words):
            table[row, : len(word)] = torch.tensor([index[c] for c in word], dtype=torch.long)
            table[row, len(word)] = END_OF_WORD
        # not saved: derived from the dictionary, whose fingerprint the model does save
        self.register_buffer("table", table, persistent=False)
        self.register_buffer("lengths", torch.tensor([len(w) + 1 for w in words]), persistent=False)

    @property
    def num_characters(self) -> int:
        return len(self.characters) + NUM_SPECIAL_CHARACTERS

    def forward(self, words: Tensor) -> Tuple[Tensor, Tensor]:
        """``words (...,) -> (characters (..., L), lengths (...,))``, ``L`` the longest here.

        Each spelling ends with END_OF_WORD, so every length is at least 1."""
        lengths = self.lengths[words]
        return self.table[words][..., : int(lengths.max())], lengths
