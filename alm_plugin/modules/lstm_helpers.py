"""What the plugin's LSTM decoders share (word-level and character-level alike)."""

import warnings

import torch
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

# LSTMs have no position limit; fairseq drops samples longer than max_positions, so say so.
UNLIMITED_POSITIONS = 1_000_000


def packed_lstm(lstm, inputs, lengths, state=None):
    """Run ``lstm`` over padded ``inputs (N,L,E)`` of the given lengths; padding is skipped."""
    packed = pack_padded_sequence(inputs, lengths.cpu(), batch_first=True, enforce_sorted=False)
    outputs, final = lstm(packed, state)
    return pad_packed_sequence(outputs, batch_first=True, total_length=inputs.size(1))[0], final


def layer_by_layer(lstm, inputs, state=None):
    """``lstm(inputs, state)`` one layer at a time, the dropout between layers drawn by ``F.dropout``
    from the generator: what a CUDA graph can record (docs/models.md, "CUDA graphs"). On the CPU it
    is the same computation, in the same order, as the multi-layer call."""
    if not (lstm.training and lstm.dropout > 0 and lstm.num_layers > 1) or lstm.bidirectional or lstm.proj_size:
        return lstm(inputs, state)
    if state is None:
        zeros = inputs.new_zeros(lstm.num_layers, inputs.size(0 if lstm.batch_first else 1), lstm.hidden_size)
        state = (zeros, zeros)
    per_layer = len(lstm._flat_weights) // lstm.num_layers  # w_ih, w_hh (, b_ih, b_hh)
    finals = []
    for layer in range(lstm.num_layers):
        weights = lstm._flat_weights[layer * per_layer : (layer + 1) * per_layer]
        # torch's own LSTM function, as nn.LSTM calls it, for one layer and no dropout
        # cuDNN copies each layer after the first out of nn.LSTM's flat weight buffer (a slice it does
        # not recognise) and warns with advice that does not apply here
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "RNN module weights are not part of single contiguous")
            inputs, h, c = torch._VF.lstm(
                inputs,
                (state[0][layer : layer + 1], state[1][layer : layer + 1]),
                weights,
                lstm.bias,
                1,
                0.0,
                True,
                False,
                lstm.batch_first,
            )
        finals.append((h, c))
        if layer < lstm.num_layers - 1:
            inputs = F.dropout(inputs, lstm.dropout, training=True)
    return inputs, (torch.cat([h for h, _ in finals]), torch.cat([c for _, c in finals]))
