"""The torch layers the models are built of: history attention, the decoders, the adaptive softmax, the word cache."""

from .history_attention import CausalHistoryAttention, CombinedScore, SingleScore  # noqa: F401
from .history_lstm_decoder import HistoryAttentionConfig, HistoryAttentionLSTMDecoder, RecurrentLMConfig  # noqa: F401
