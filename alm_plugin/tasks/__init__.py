from . import sentence_language_modeling  # noqa: F401
