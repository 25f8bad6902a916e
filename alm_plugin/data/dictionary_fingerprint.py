"""A hash of the dictionary saved with each model and checked when a checkpoint is loaded, so that a
dictionary of the same size with other words is refused rather than scored."""

import hashlib

import torch.nn as nn

from ..errors import OptionError


def dictionary_fingerprint(dictionary) -> int:
    """A 63-bit hash of the symbol list."""
    digest = hashlib.sha256("\n".join(dictionary.symbols).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "little") >> 1


class DictionaryFingerprint(nn.Module):
    """Mixin for decoders: ``self.register_fingerprint(dictionary)`` in ``__init__``."""

    def register_fingerprint(self, dictionary):
        self.dictionary_fingerprint = dictionary_fingerprint(dictionary)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        saved = state_dict.pop(prefix + "dictionary_fingerprint", None)  # torch's loader works on a copy
        if saved is not None and int(saved) != int(self.dictionary_fingerprint):
            raise OptionError(
                "dictionary mismatch: this checkpoint was trained with another dictionary "
                f"than the one loaded now ({len(self.dictionary)} types). Point fairseq at the "
                "data-bin directory (dict.txt) the model was trained on."
            )
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
