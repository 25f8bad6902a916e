from .sentence_blocks import SentenceBlockDataset  # noqa: F401
from .word_streams import WordStreamDataset  # noqa: F401
