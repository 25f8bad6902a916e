#!/usr/bin/env bash
# Shallow fusion: fairseq-generate --lm-path adds lm_weight * log p_LM(y_t | y_<t) to every beam
# step. The LM weight is chosen on valid (weight 0: no LM, plain beam search), then used on
# test. Needs the checkpoints of examples/translation/multi30k.sh (same ARCH / LM_ARCH / PAIRS).
set -euo pipefail
cd "$(dirname "$0")/../.."
ARCH=${ARCH:-attentive_nmt_small}
LM_ARCH=${LM_ARCH:-amsrn_small}
PAIRS=${PAIRS:-}
DATA=data-bin/multi30k-de-en          # holds dict.txt = dict.en.txt, where --lm-path looks for it
SAVE=checkpoints/multi30k-$ARCH LM_SAVE=checkpoints/multi30k-en-$LM_ARCH
if [ -n "$PAIRS" ]; then
  DATA=data-bin/multi30k-de-en-$PAIRS SAVE=checkpoints/multi30k-$PAIRS-$ARCH
  LM_SAVE=checkpoints/multi30k-en-mono-$LM_ARCH
fi
OUT=${OUT:-runs/multi30k-$ARCH${PAIRS:+-$PAIRS}}
mkdir -p "$OUT"

translate() {  # split lm_weight -> BLEU of the detokenised output
  local lm=()
  [ "$2" = 0 ] || lm=(--lm-path "$LM_SAVE/checkpoint_best.pt" --lm-weight "$2")
  fairseq-generate "$DATA" --user-dir alm_plugin --cpu --task translation --source-lang de --target-lang en \
    --path "$SAVE/checkpoint_best.pt" --gen-subset "$1" --beam 5 --batch-size 64 \
    --required-batch-size-multiple 1 --remove-bpe --tokenizer moses "${lm[@]}" \
    > "$OUT/$1.fusion-$LM_ARCH-$2.txt" 2> "$OUT/$1.fusion-$LM_ARCH-$2.log"
  grep '^D-' "$OUT/$1.fusion-$LM_ARCH-$2.txt" | sort -t- -k2 -n | cut -f3 > "$OUT/$1.fusion-$LM_ARCH-$2.detok.en"
  sacrebleu "$DATA/$1.raw.en" -i "$OUT/$1.fusion-$LM_ARCH-$2.detok.en" -m bleu -b -w 2
}

best_weight=0 best_bleu=-1
for weight in ${WEIGHTS:-0 0.05 0.1 0.2 0.3}; do
  bleu=$(translate valid "$weight")
  echo "valid, lm-weight $weight: BLEU $bleu"
  if awk "BEGIN {exit !($bleu > $best_bleu)}"; then best_weight=$weight best_bleu=$bleu; fi
done
echo "test, lm-weight $best_weight: BLEU $(translate test "$best_weight")"
