from . import attention_cross_entropy, open_vocabulary_cross_entropy  # noqa: F401
