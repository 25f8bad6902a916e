from . import open_vocabulary_language_modeling, sentence_language_modeling  # noqa: F401
