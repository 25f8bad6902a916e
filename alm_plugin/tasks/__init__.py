"""The fairseq tasks: sentences alone, word streams and character streams."""

from . import document_language_modeling, open_vocabulary_language_modeling, sentence_language_modeling  # noqa: F401
