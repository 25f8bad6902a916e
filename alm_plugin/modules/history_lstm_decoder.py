"""An LSTM decoder that attends over its own history: the common body of our word-level models.

    embed -> LSTM (one call over the whole sequence) -> causal history attention
          -> combine(h_t, c_t [, z_t]) -> softmax tied to the input embeddings
                                          (full, or adaptive: ``adaptive_softmax.py``)

Subclasses choose the attention and the combination layer; this class owns the embedding, the
recurrence, dropout, initialisation, incremental state and the dictionary check. Built with
``source_dim > 0`` it is a translation decoder: it starts from the final state of fairseq's
``LSTMEncoder`` and adds the source context ``z_t`` (``SourceAttention``) to the combination layer's inputs.
"""

from dataclasses import dataclass, field
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F
from fairseq.models import FairseqIncrementalDecoder
from torch import Tensor

from ..data.dictionary_fingerprint import DictionaryFingerprint
from ..options.adaptive_softmax import AdaptiveSoftmaxConfig
from ..options.reading import read_options
from . import cuda_graphs  # cuda_graphs.capturing(): whether a CUDA graph records this pass
from .adaptive_softmax import build_adaptive_softmax
from .lstm_helpers import UNLIMITED_POSITIONS, layer_by_layer
from .source_attention import SourceAttention
from .stream_carry import StreamCarry, next_chunk


def combination_bias_field(default: bool):
    """``--combination-bias``, declared once for every model with a combination layer: off for the
    language models, on for translation; a checkpoint saved without the option holds the bias."""
    return field(
        default=default,
        metadata={
            "help": "give the layer before the tied softmax its bias (b_c of Eq. 7; AMSRN's b); the "
            "output bias b of Eq. 8 is kept either way",
            "default_before_the_option": True,
        },
    )


@dataclass
class RecurrentLMConfig(AdaptiveSoftmaxConfig):
    embed_dim: int = field(default=650, metadata={"help": "word embedding size (tied with the output layer)"})
    hidden_size: int = field(default=650, metadata={"help": "LSTM hidden size"})
    num_layers: int = field(default=2, metadata={"help": "number of stacked LSTM layers"})
    dropout: float = field(
        default=0.5,
        metadata={"help": "dropout on the embeddings, between the LSTM layers and on the output layer's input"},
    )
    forget_gate_bias: float = field(
        default=0.0,
        metadata={"help": "the initial bias of the LSTM forget gates (paper: 0)"},
    )
    init_range: float = field(
        default=0.05, metadata={"help": "weights start uniform in [-init_range, init_range], biases at 0 (paper: 0.05)"}
    )
    share_decoder_input_output_embed: bool = field(
        default=False,
        metadata={"help": "accepted as in fairseq's LM recipes: the output layer is always the input embedding"},
    )


@dataclass
class HistoryAttentionConfig(RecurrentLMConfig):
    memory_window: int = field(
        default=0,
        metadata={
            "help": "attend over at most this many previous states; 0 = the whole sample (with "
            "--sample-break-mode eos: the sentence, the paper's per-sentence reset)"
        },
    )
    combination_bias: bool = combination_bias_field(default=False)
    attend_dropped_states: bool = field(
        default=False,
        metadata={"help": "apply a dropout of their own to the states the attention's memory and queries read"},
    )


class HistoryAttentionLSTMDecoder(DictionaryFingerprint, FairseqIncrementalDecoder):
    """Base decoder. Subclasses set ``self.attention`` (a ``CausalHistoryAttention``; left
    ``None``, the decoder is a plain LSTM LM), implement ``combine(states, context,
    *source_context) -> features`` of size ``embed_dim`` (its input is ``2 * hidden_size +
    self.source_dim`` wide) and may build the attention queries from the states
    (``attention_queries``; default: the states)."""

    def __init__(self, cfg: RecurrentLMConfig, dictionary, source_dim: int = 0):
        super().__init__(dictionary)
        self.cfg = cfg
        self.padding_idx = dictionary.pad()
        self.embed_tokens = nn.Embedding(len(dictionary), cfg.embed_dim, self.padding_idx)
        self.lstm = nn.LSTM(
            cfg.embed_dim,
            cfg.hidden_size,
            cfg.num_layers,
            batch_first=True,
            dropout=cfg.dropout if cfg.num_layers > 1 else 0.0,
        )
        self.dropout = nn.Dropout(cfg.dropout)
        self.output_bias = nn.Parameter(torch.zeros(len(dictionary)))
        # named as fairseq's decoders name theirs, but read only by the methods below
        self.adaptive_softmax = build_adaptive_softmax(cfg, dictionary, cfg.embed_dim)
        self.source_dim = source_dim
        self.attention = None
        self.zero_context = False  # attention left out, the combination layer fed c_t = 0
        # RecurrentLMConfig (no attention) lacks the option: HistoryAttentionConfig's default
        attention_options = read_options(HistoryAttentionConfig, cfg, "attend_dropped_states")
        self.attend_dropped_states = attention_options.attend_dropped_states
        self.memory_starts_with_h0 = False  # AMSRN: the first slot is the initial state h_0
        if source_dim:
            self.source_attention = SourceAttention(cfg.hidden_size, source_dim)
            # the encoder's final (h, c) -> the initial (h, c) of every decoder layer
            self.bridge = nn.Linear(2 * source_dim, 2 * cfg.num_layers * cfg.hidden_size)
        self.carry = StreamCarry()  # state across the chunks of a stream (document_language_modeling)
        self.register_fingerprint(dictionary)

    def reset_parameters(self):
        """Uniform weights in [-r, r] and zero biases, as in the paper (call after building);
        ``--forget-gate-bias`` starts the LSTM's forget gates elsewhere."""
        for name, param in self.named_parameters():
            if "bias" in name:
                nn.init.zeros_(param)
            else:
                nn.init.uniform_(param, -self.cfg.init_range, self.cfg.init_range)
        forget = self.cfg.forget_gate_bias
        with torch.no_grad():
            self.embed_tokens.weight[self.padding_idx].zero_()
            if forget:
                hidden = self.cfg.hidden_size
                for layer in range(self.cfg.num_layers):
                    # torch orders the gates i, f, g, o and adds bias_ih to bias_hh: the value goes in bias_ih alone
                    getattr(self.lstm, f"bias_ih_l{layer}")[hidden : 2 * hidden].fill_(forget)

    def combine(self, states: Tensor, context: Tensor, *source_context: Tensor) -> Tensor:
        raise NotImplementedError

    def attention_queries(self, states: Tensor) -> Optional[Tensor]:
        return None

    def forward(self, prev_output_tokens, encoder_out=None, incremental_state=None, **kwargs):
        features, extra = self.extract_features(prev_output_tokens, encoder_out, incremental_state, **kwargs)
        return self.output_layer(features), extra

    def initial_state(self, encoder_out):
        """``None`` (zeros) for a language model; from the encoder's top layer for translation."""
        if encoder_out is None or not self.source_dim:
            return None
        _, final_hiddens, final_cells, _ = encoder_out
        start = self.bridge(torch.cat([final_hiddens[-1], final_cells[-1]], dim=-1))
        h0, c0 = start.view(start.size(0), 2, self.cfg.num_layers, -1).permute(1, 2, 0, 3).unbind(0)
        return h0.contiguous(), c0.contiguous()

    def attend_source(self, states, encoder_out):
        """``((z_t,), weights (B,T,S))`` for translation, ``((), None)`` for a language model."""
        if encoder_out is None or not self.source_dim:
            return (), None
        source, _, _, source_padding = encoder_out  # (S,B,C), (S,B): fairseq's LSTMEncoder
        context, weights = self.source_attention(states, source.transpose(0, 1), source_padding.t())
        return (context,), weights

    def extract_features(
        self,
        prev_output_tokens,
        encoder_out=None,
        incremental_state=None,
        stream_ids=None,
        stream_positions=None,
        stream_chunk=None,
        **kwargs,
    ):
        """With ``stream_ids``/``stream_positions`` (the document task's chunks) the LSTM state
        and the last ``--memory-window`` states of the attention memory carry over from the
        previous chunk of the same streams (``StreamCarry``; detached: truncated BPTT)."""
        if self.source_dim and encoder_out is None:
            raise ValueError("this is a translation decoder: it needs the encoder's output")
        tokens = prev_output_tokens
        cache = None
        if incremental_state is not None:
            tokens = tokens[:, -1:]
            cache = self.get_incremental_state(incremental_state, "history")
        streaming = incremental_state is None and stream_ids is not None
        mode = "train" if self.training else "eval"
        carried = self.carry.resume(stream_ids, stream_positions, mode, stream_chunk) if streaming else None
        x = self.dropout(self.embed_tokens(tokens))
        initial_slot = self.sentinel(tokens.size(0))
        if carried is not None:
            hidden = carried["hidden"]
        elif cache is None:
            hidden = self.initial_state(encoder_out)
            if hidden is not None and self.memory_starts_with_h0:
                initial_slot = hidden[0][-1]  # h_0 of the top layer, the memory's first slot
        else:
            hidden = (cache["hidden"].transpose(0, 1).contiguous(), cache["cell"].transpose(0, 1).contiguous())
        # in a CUDA graph one layer at a time: cuDNN's own dropout between the layers cannot be recorded
        states, (h, c) = layer_by_layer(self.lstm, x, hidden) if cuda_graphs.capturing() else self.lstm(x, hidden)
        # h_t is dropped once, on its way to the softmax (below); the attention reads it as it is
        # unless --attend-dropped-states gives the attention a dropout of its own
        attended = self.dropout(states) if self.attend_dropped_states else states
        memory, memory_tokens = {}, tokens
        if self.attention is None:  # the plain LSTM (no history), or the concat layer fed c_t = 0
            context = states.new_zeros(states.shape) if self.zero_context else None
            weights = None
        elif incremental_state is None:
            past, past_tokens = (None, None) if carried is None else carried["memory"]
            context, weights = self.attention(
                attended,
                tokens.eq(self.padding_idx),
                self.attention_queries(attended),
                initial_slot,
                past,
                None if past is None else past_tokens.eq(self.padding_idx),
            )
            if past is not None:
                memory_tokens = torch.cat([past_tokens, tokens], dim=1)
        else:
            memory = None if cache is None else {"memory": cache["memory"], "keys": cache["keys"]}
            context, weights, memory = self.attention.step(
                attended, memory, self.attention_queries(attended), initial_slot
            )
            # the words of the remembered states, trimmed as the memory is (the pointer's targets)
            memory_tokens = tokens if cache is None else torch.cat([cache["tokens"], tokens], dim=1)
            if self.attention.window:
                memory_tokens = memory_tokens[:, -self.attention.window :]
            memory["tokens"] = memory_tokens
            if not self.attention.include_current:
                memory_tokens = None if cache is None else cache["tokens"]
        if incremental_state is not None:
            # batch first everywhere, so reordering is one index_select on dim 0
            self.set_incremental_state(
                incremental_state, "history", {"hidden": h.transpose(0, 1), "cell": c.transpose(0, 1), **memory}
            )
        if streaming:
            self.carry.save(
                stream_ids,
                stream_positions + tokens.size(1),
                {"hidden": (h, c), "memory": self._kept_memory(carried, attended, tokens)},
                mode,
                next_chunk(stream_chunk, tokens.size(1)),
            )
        source_context, source_weights = self.attend_source(states, encoder_out)
        features = self.dropout(self.combine(states, context, *source_context))
        # "attn" is what fairseq's generator reads (source attention, --print-alignment);
        # "features" is what the output layer receives (the neural cache's h_t);
        # "memory_tokens" the input word of each memory slot after the initial one
        return features, {
            "attn": [source_weights],
            "history_attn": [weights],
            "features": features,
            "memory_tokens": memory_tokens,
        }

    def sentinel(self, bsz: int) -> Optional[Tensor]:
        """The state of the memory's initial slot ``(B, d)``; ``None``: zeros (or ``h_0``)."""
        return None

    def _kept_memory(self, carried, states, tokens):
        """The last ``--memory-window`` states and their input words for the stream's next chunk."""
        window = getattr(self.attention, "window", 0)
        if self.attention is None or window == 0:
            return None, None
        if carried is not None and carried["memory"][0] is not None:
            states = torch.cat([carried["memory"][0], states], dim=1)
            tokens = torch.cat([carried["memory"][1], tokens], dim=1)
        return states[:, -window:], tokens[:, -window:]

    def output_layer(self, features, **kwargs):
        """Eq. 8: the logits ``W h'_t + b`` with ``W`` tied to the input embeddings; with the
        adaptive softmax the features themselves (fairseq's convention): the distribution is
        formed by ``log_probs``, the target's probability alone by ``target_log_probs``."""
        if self.adaptive_softmax is not None:
            return features
        return F.linear(features, self.embed_tokens.weight, self.output_bias)

    def log_probs(self, net_output) -> Tensor:
        """``log p`` (B, T, V) in float32 over the whole vocabulary: it sums to 1 with either
        output layer, and can be back-propagated."""
        scores = net_output[0]
        if self.adaptive_softmax is None:
            return F.log_softmax(scores.float(), dim=-1)
        return self.adaptive_softmax.log_probs(scores, self.embed_tokens.weight, self.output_bias)

    def target_log_probs(self, net_output, target: Tensor) -> Tensor:
        """``log p(target)`` (B, T) in float32, what training needs: the adaptive softmax never
        forms the (B, T, V) distribution for it."""
        scores = net_output[0]
        if self.adaptive_softmax is None:
            return F.log_softmax(scores.float(), dim=-1).gather(-1, target.unsqueeze(-1)).squeeze(-1)
        return self.adaptive_softmax.target_log_probs(scores, target, self.embed_tokens.weight, self.output_bias)

    def get_normalized_probs(self, net_output, log_probs, sample=None):
        """The whole distribution, with or without a sample (fairseq's adaptive softmax leaves
        the tails of the rows whose target lies elsewhere at log p = 0 when given one)."""
        scores = self.log_probs(net_output)
        return scores if log_probs else scores.exp()

    def reorder_incremental_state(self, incremental_state, new_order):
        cache = self.get_incremental_state(incremental_state, "history")
        if cache is None:
            return
        self.set_incremental_state(
            incremental_state, "history", {name: value.index_select(0, new_order) for name, value in cache.items()}
        )

    def max_positions(self):
        return UNLIMITED_POSITIONS
