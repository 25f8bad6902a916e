#!/usr/bin/env bash
# Multi30k German->English with an attentive (or AMSRN) decoder, then n-best rescoring with
# a target-side language model. Run from anywhere; each step is skipped when its output exists.
#
#   bash examples/translation/multi30k.sh                       # attentive_nmt_small
#   ARCH=amsrn_nmt_small bash examples/translation/multi30k.sh
#   RAW_DIR=path/to/multi30k bash examples/translation/multi30k.sh   (without ../shared/data)
#
# Its minutes on a CPU, with the figures it gives: docs/benchmarks.md, "Translation (Multi30k)".
set -euo pipefail
cd "$(dirname "$0")/../.."
ARCH=${ARCH:-attentive_nmt_small}
LM_ARCH=${LM_ARCH:-amsrn_small}
EPOCHS=${EPOCHS:-15}
LM_EPOCHS=${LM_EPOCHS:-6}
DATA=data-bin/multi30k-de-en
LM_DATA=data-bin/multi30k-en-lm
SAVE=checkpoints/multi30k-$ARCH
LM_SAVE=checkpoints/multi30k-en-$LM_ARCH
OUT=${OUT:-runs/multi30k-$ARCH}
mkdir -p "$OUT"
COMMON=(--user-dir alm_plugin --cpu)
TRANSLATION=(--task translation --source-lang de --target-lang en)

[ -f "$DATA/test.raw.en" ] || python examples/translation/prepare_multi30k.py ${RAW_DIR:+--raw-dir "$RAW_DIR"}

# 1. the translation model
[ -f "$SAVE/checkpoint_best.pt" ] || fairseq-train "$DATA" "${COMMON[@]}" "${TRANSLATION[@]}" \
  --arch "$ARCH" --criterion label_smoothed_cross_entropy --label-smoothing 0.1 \
  --optimizer adam --lr 0.002 --clip-norm 1 --max-tokens 4000 --max-epoch "$EPOCHS" \
  --save-dir "$SAVE" --no-epoch-checkpoints --log-format simple --log-interval 50

# 2. beam search on the test set, BLEU of the detokenised output (D- lines) with sacrebleu
fairseq-generate "$DATA" "${COMMON[@]}" "${TRANSLATION[@]}" --path "$SAVE/checkpoint_best.pt" \
  --gen-subset test --beam 5 --batch-size 64 --required-batch-size-multiple 1 --remove-bpe --tokenizer moses \
  > "$OUT/test.beam5.txt"
grep '^D-' "$OUT/test.beam5.txt" | sort -t- -k2 -n | cut -f3 > "$OUT/test.beam5.detok.en"
echo "BLEU, beam 5:"; sacrebleu "$DATA/test.raw.en" -i "$OUT/test.beam5.detok.en" -m bleu -b -w 2

# 3. a target-side language model on the same BPE text and dictionary
[ -f "$LM_SAVE/checkpoint_best.pt" ] || fairseq-train "$LM_DATA" "${COMMON[@]}" \
  --task sentence_language_modeling --arch "$LM_ARCH" --criterion attention_cross_entropy \
  --optimizer adam --lr 0.003 --clip-norm 5 --max-tokens 4000 --max-epoch "$LM_EPOCHS" \
  --save-dir "$LM_SAVE" --no-epoch-checkpoints --log-format simple --log-interval 100

# 4. 10-best lists in BPE form (no --remove-bpe: the form both models read). fairseq drops a
#    last batch whose size is not a multiple of --required-batch-size-multiple (8): set it to 1
for split in valid test; do
  [ -s "$OUT/$split.nbest10.txt" ] || fairseq-generate "$DATA" "${COMMON[@]}" "${TRANSLATION[@]}" \
    --path "$SAVE/checkpoint_best.pt" --gen-subset "$split" --beam 10 --nbest 10 --batch-size 32 \
    --required-batch-size-multiple 1 \
    > "$OUT/$split.nbest10.txt"
done

# 5. rescoring: weights tuned on valid for BLEU, applied to test
alm-rescore --nbest "$OUT/test.nbest10.txt" --lm "$LM_SAVE/checkpoint_best.pt" --lm-data "$LM_DATA" \
  --lang en --hyp-form bpe --lm-form bpe --bpe-codes "$DATA/bpe.codes" \
  --tune-nbest "$OUT/valid.nbest10.txt" --tune-ref "$DATA/valid.raw.en" --ref "$DATA/test.raw.en" \
  --output-1best "$OUT/test.rescored.en" --output-nbest "$OUT/test.rescored.nbest" --cpu
