from . import amsrn, attentive_lm, char_cache_lm, char_lstm_lm, history_translation  # noqa: F401
