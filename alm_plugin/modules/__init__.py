from .history_attention import CausalHistoryAttention, CombinedScore, SingleScore  # noqa: F401
from .history_lstm_decoder import HistoryAttentionLSTMDecoder, RecurrentLMConfig  # noqa: F401
