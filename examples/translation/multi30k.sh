#!/usr/bin/env bash
# Multi30k German->English with an attentive (or AMSRN) decoder, then n-best rescoring with
# a target-side language model. Run from anywhere; each step is skipped when its output exists,
# and a training that was stopped resumes from its checkpoint_last.pt.
#
#   bash examples/translation/multi30k.sh                       # attentive_nmt_small
#   ARCH=amsrn_nmt_small bash examples/translation/multi30k.sh
#   RAW_DIR=path/to/multi30k bash examples/translation/multi30k.sh   (without ../shared/data)
#   PAIRS=2000 CHANNEL=1 bash examples/translation/multi30k.sh   # 2,000 pairs, the LM on all 29k English
#                                                                 # sentences, and a channel model
#
# Its minutes on a CPU, with the figures it gives: docs/benchmarks.md, "Translation (Multi30k)".
set -euo pipefail
cd "$(dirname "$0")/../.."
ARCH=${ARCH:-attentive_nmt_small}
LM_ARCH=${LM_ARCH:-amsrn_small}
EPOCHS=${EPOCHS:-15}
LM_EPOCHS=${LM_EPOCHS:-6}
NBEST=${NBEST:-10}
PAIRS=${PAIRS:-}    # the parallel pairs the translation models see (empty: all 29,000)
CHANNEL=${CHANNEL:-}  # 1: train a channel model en->de and rerank with it beside the LM
DATA=data-bin/multi30k-de-en
LM_DATA=data-bin/multi30k-en-lm
SAVE=checkpoints/multi30k-$ARCH
LM_SAVE=checkpoints/multi30k-en-$LM_ARCH
# the first PAIRS pairs: one BPE per language, the English one (and the LM) on all English text
PREPARE=() STOP=(--max-epoch "$EPOCHS") BPE=(--bpe-codes "$DATA/bpe.codes")
if [ -n "$PAIRS" ]; then
  DATA=data-bin/multi30k-de-en-$PAIRS LM_DATA=data-bin/multi30k-en-mono
  SAVE=checkpoints/multi30k-$PAIRS-$ARCH LM_SAVE=checkpoints/multi30k-en-mono-$LM_ARCH
  PREPARE=(--parallel-pairs "$PAIRS") BPE=(--bpe-codes "$DATA/bpe.codes.en")
  # every size gets the same updates at most; the smaller stop when valid stops improving
  STOP=(--max-update "${MAX_UPDATE:-1800}" --patience "${PATIENCE:-5}")
fi
CHANNEL_SAVE=$SAVE-channel
OUT=${OUT:-runs/multi30k-$ARCH${PAIRS:+-$PAIRS}}
mkdir -p "$OUT"
COMMON=(--user-dir alm_plugin --cpu)
TRANSLATION=(--task translation --source-lang de --target-lang en)
TRAIN=(--arch "$ARCH" --criterion label_smoothed_cross_entropy --label-smoothing 0.1 --optimizer adam --lr 0.002
  --clip-norm 1 --max-tokens 4000 "${STOP[@]}" --no-epoch-checkpoints --log-format simple --log-interval 50)

[ -f "$DATA/test.raw.en" ] || python examples/translation/prepare_multi30k.py ${RAW_DIR:+--raw-dir "$RAW_DIR"} \
  "${PREPARE[@]}"

# fairseq-train into a folder, skipped once it has finished there: the marker "unfinished" stays
# while it runs, so a stopped training resumes from checkpoint_last.pt instead of being taken as done
train() {
  local save=$1
  shift
  [ -f "$save/checkpoint_best.pt" ] && [ ! -f "$save/unfinished" ] && return
  mkdir -p "$save" && touch "$save/unfinished"
  fairseq-train "$@" --save-dir "$save"
  rm "$save/unfinished"
}

# 1. the translation model (and with CHANNEL=1 the channel model, the other way round)
train "$SAVE" "$DATA" "${COMMON[@]}" "${TRANSLATION[@]}" "${TRAIN[@]}"
[ -z "$CHANNEL" ] || train "$CHANNEL_SAVE" "$DATA" "${COMMON[@]}" --task translation --source-lang en \
  --target-lang de "${TRAIN[@]}"

# 2. beam search on the test set, BLEU of the detokenised output (D- lines) with sacrebleu
fairseq-generate "$DATA" "${COMMON[@]}" "${TRANSLATION[@]}" --path "$SAVE/checkpoint_best.pt" \
  --gen-subset test --beam 5 --batch-size 64 --required-batch-size-multiple 1 --remove-bpe --tokenizer moses \
  > "$OUT/test.beam5.txt"
grep '^D-' "$OUT/test.beam5.txt" | sort -t- -k2 -n | cut -f3 > "$OUT/test.beam5.detok.en"
echo "BLEU, beam 5:"; sacrebleu "$DATA/test.raw.en" -i "$OUT/test.beam5.detok.en" -m bleu -b -w 2

# 3. a target-side language model on the same BPE text and dictionary
train "$LM_SAVE" "$LM_DATA" "${COMMON[@]}" --task sentence_language_modeling --arch "$LM_ARCH" \
  --criterion attention_cross_entropy --optimizer adam --lr 0.003 --clip-norm 5 --max-tokens 4000 \
  --max-epoch "$LM_EPOCHS" --no-epoch-checkpoints --log-format simple --log-interval 100

# 4. n-best lists in BPE form (no --remove-bpe: the form both models read). fairseq drops a
#    last batch whose size is not a multiple of --required-batch-size-multiple (8): set it to 1
for split in valid test; do
  [ -s "$OUT/$split.nbest$NBEST.txt" ] && continue
  fairseq-generate "$DATA" "${COMMON[@]}" "${TRANSLATION[@]}" --path "$SAVE/checkpoint_best.pt" \
    --gen-subset "$split" --beam "$NBEST" --nbest "$NBEST" --batch-size 32 --required-batch-size-multiple 1 \
    > "$OUT/$split.nbest$NBEST.partial"
  mv "$OUT/$split.nbest$NBEST.partial" "$OUT/$split.nbest$NBEST.txt"  # a stopped run leaves no list to reuse
done

# 5. rescoring: weights tuned on valid for BLEU, applied to test; with the channel model, the
#    noisy channel of Yee et al.: its score of the source given each hypothesis is a feature too
NOISY=()
[ -z "$CHANNEL" ] || NOISY=(--channel "$CHANNEL_SAVE/checkpoint_best.pt" --source "$DATA/test.bpe.de"
  --tune-source "$DATA/valid.bpe.de" --source-form bpe --tuner random --output-trials "$OUT/trials.json")
alm-rescore --nbest "$OUT/test.nbest$NBEST.txt" --lm "$LM_SAVE/checkpoint_best.pt" --lm-data "$LM_DATA" \
  --lang en --hyp-form bpe --lm-form bpe "${BPE[@]}" "${NOISY[@]}" \
  --tune-nbest "$OUT/valid.nbest$NBEST.txt" --tune-ref "$DATA/valid.raw.en" --ref "$DATA/test.raw.en" \
  --output-1best "$OUT/test.rescored.en" --output-nbest "$OUT/test.rescored.nbest" --cpu
