"""The plain LSTM language model our attentive models are measured against (``--arch alm_lstm``).

    h_t = LSTM(x_t, h_{t-1});   p(w_{t+1} | w_<=t) = softmax(E h_t + b)

It is the attentive models' decoder with the attention and the combination layer taken out; docs/models.md
("alm_lstm, the baseline") says what a comparison with it measures.
"""

from fairseq.models import register_model, register_model_architecture

from ..errors import OptionError
from ..modules.history_lstm_decoder import HistoryAttentionLSTMDecoder, RecurrentLMConfig
from .arch_defaults import set_arch_defaults
from .history_language_model import HistoryAttentionLanguageModel


class LSTMDecoder(HistoryAttentionLSTMDecoder):
    def __init__(self, cfg: RecurrentLMConfig, dictionary):
        if cfg.embed_dim != cfg.hidden_size:
            raise OptionError(
                f"alm_lstm feeds h_t straight to the softmax tied to the embeddings, so "
                f"--embed-dim ({cfg.embed_dim}) must equal --hidden-size ({cfg.hidden_size})"
            )
        super().__init__(cfg, dictionary)
        self.reset_parameters()

    def combine(self, states, context):
        """``h'_t = h_t``: no attention, no layer between the LSTM and the tied softmax."""
        return states


@register_model("alm_lstm", dataclass=RecurrentLMConfig)
class LSTMLanguageModel(HistoryAttentionLanguageModel):
    """Plain LSTM LM: the baseline row of the papers' tables, in our own code."""

    decoder_class = LSTMDecoder


@register_model_architecture("alm_lstm", "alm_lstm_ptb")
def alm_lstm_ptb(args):
    """The PTB medium LSTM: 2 x 650, tied 650-d embeddings, dropout 0.5."""
    set_arch_defaults(args, embed_dim=650, hidden_size=650, num_layers=2, dropout=0.5)


@register_model_architecture("alm_lstm", "alm_lstm_small")
def alm_lstm_small(args):
    """A quick model for the shipped sample and tests: 2 x 256, dropout 0.3."""
    set_arch_defaults(args, embed_dim=256, hidden_size=256, num_layers=2, dropout=0.3)
