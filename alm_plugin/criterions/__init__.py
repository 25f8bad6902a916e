"""The fairseq criterions: perplexity with the attention's entropy, and bits per character."""

from . import attention_cross_entropy, open_vocabulary_cross_entropy  # noqa: F401
