"""The datasets the tasks read, and what models and tasks ask of the data and of each other."""

from .sentence_blocks import SentenceBlockDataset  # noqa: F401
from .word_streams import WordStreamDataset  # noqa: F401
