"""The fairseq models and their named architectures: the papers' models, their baselines and the hub."""

from . import amsrn, attentive_lm, char_cache_lm, char_lstm_lm, history_translation, lstm_lm, pointer_sentinel_lm  # noqa: F401
