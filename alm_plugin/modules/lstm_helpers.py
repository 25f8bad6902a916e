"""What the plugin's LSTM decoders share (word-level and character-level alike)."""
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

# LSTMs have no position limit; fairseq drops samples longer than max_positions, so say so.
UNLIMITED_POSITIONS = 1_000_000


def packed_lstm(lstm, inputs, lengths, state=None):
    """Run ``lstm`` over padded ``inputs (N,L,E)`` of the given lengths; padding is skipped."""
    packed = pack_padded_sequence(inputs, lengths.cpu(), batch_first=True, enforce_sorted=False)
    outputs, final = lstm(packed, state)
    return pad_packed_sequence(outputs, batch_first=True, total_length=inputs.size(1))[0], final
