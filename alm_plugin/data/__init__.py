from .sentence_blocks import SentenceBlockDataset  # noqa: F401
