#!/usr/bin/env bash
# Liu et al. (2016), the PTB rows (a)-(d): train one row and print its valid and test perplexity.
#
#   bash examples/language_model/reproduce_amsrn.sh a   # (a) LSTM (fairseq's lstm_lm, same size)
#   bash examples/language_model/reproduce_amsrn.sh b   # (b) LSTM + att (--memory-selection none)
#   bash examples/language_model/reproduce_amsrn.sh c   # (c) LSTM + att + select (tied)
#   bash examples/language_model/reproduce_amsrn.sh d   # (d) (c) + entropy regulariser (LAMBDA=1.0)
#
# The paper's table did not survive its text extraction; its words: (c) beats (a), and the
# entropy regulariser helps on PTB. It gives no model size: 2 x 650, dropout 0.5 (the medium
# PTB setting, as for the Attentive LM). Adam 0.002, clip 5, 32 sentences a batch, early stop.
# Scaled down for a CPU: SIZE=256 DROPOUT=0.3 EPOCHS=3 (or python -m benchmarks.table --corpus ptb-slice).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROW=${1:-c}
SIZE=${SIZE:-650}
DROPOUT=${DROPOUT:-0.5}
EPOCHS=${EPOCHS:-40}
LAMBDA=${LAMBDA:-1.0}
OURS=(--arch amsrn --embed-dim "$SIZE" --hidden-size "$SIZE" --dropout "$DROPOUT")
case "$ROW" in
  a) MODEL=(--arch lstm_lm --decoder-embed-dim "$SIZE" --decoder-hidden-size "$SIZE" --decoder-out-embed-dim "$SIZE"
            --decoder-layers 2 --share-decoder-input-output-embed --decoder-dropout-in "$DROPOUT"
            --decoder-dropout-out "$DROPOUT") ;;
  b) MODEL=("${OURS[@]}" --memory-selection none) ;;
  c) MODEL=("${OURS[@]}" --memory-selection tied) ;;
  d) MODEL=("${OURS[@]}" --memory-selection tied --attention-entropy-weight "$LAMBDA") ;;
  *) echo "the row must be a, b, c or d" >&2; exit 2 ;;
esac
SAVE=${SAVE_DIR:-checkpoints/ptb_amsrn_row_$ROW}
DEVICE=$(python3 -c "import torch; print('' if torch.cuda.is_available() else '--cpu')")

[ -f data-bin/ptb/train.bin ] || python3 examples/language_model/prepare_lm_data.py --corpus ptb --force

fairseq-train data-bin/ptb --user-dir alm_plugin --task sentence_language_modeling "${MODEL[@]}" \
  --criterion attention_cross_entropy --optimizer adam --lr 0.002 --clip-norm 5 --batch-size 32 \
  --best-checkpoint-metric nll_loss \
  --max-epoch "$EPOCHS" --patience 5 --no-epoch-checkpoints --save-dir "$SAVE" \
  --log-format simple --log-interval 200 $DEVICE ${EXTRA_ARGS:-}

for split in valid test; do
  fairseq-validate data-bin/ptb --user-dir alm_plugin --task sentence_language_modeling \
    --path "$SAVE/checkpoint_best.pt" --valid-subset "$split" --criterion attention_cross_entropy \
    --batch-size 64 $DEVICE 2>&1 | grep -oE "ppl [0-9.]+ \| paper_ppl [0-9.]+" | sed "s/^/row ($ROW) $split: /"
done
