#!/usr/bin/env bash
# Salton et al. (2017), Tables 1-2: train and test the Attentive LM with the paper's recipe.
#
#   bash examples/language_model/reproduce_attentive_lm.sh ptb single          # paper: 71.7 / 70.1
#   bash examples/language_model/reproduce_attentive_lm.sh ptb combined        # paper: 72.6 / 70.7
#   bash examples/language_model/reproduce_attentive_lm.sh wikitext-2 single   # paper: 73.7 / 69.7
#
# Scaled down for a CPU (a few epochs of a small model):
#   ARCH=attentive_lm_small EPOCHS=3 ANNEAL=3 bash examples/language_model/reproduce_attentive_lm.sh ptb single
#
# Prints the standard test perplexity (fairseq-eval-lm) and the paper-compatible figure
# (fairseq-validate's paper_ppl): compare paper_ppl with the paper's numbers, report ppl.
# The loss is the NLL summed over each sentence (--sentence-avg), as in the paper and its code.
set -euo pipefail
cd "$(dirname "$0")/../.."
CORPUS=${1:-ptb}
SCORE=${2:-single}
case "$CORPUS" in
  ptb)        ARCH=${ARCH:-attentive_lm_ptb};       ANNEAL=${ANNEAL:-13}; SHRINK=${SHRINK:-0.5} ;;
  wikitext-2) ARCH=${ARCH:-attentive_lm_wikitext2}; ANNEAL=${ANNEAL:-15}; SHRINK=${SHRINK:-0.869565} ;;
  *) echo "corpus must be ptb or wikitext-2" >&2; exit 2 ;;
esac
EPOCHS=${EPOCHS:-60}
SAVE=${SAVE_DIR:-checkpoints/${CORPUS}_${ARCH}_${SCORE}}
DEVICE=$(python3 -c "import torch; print('' if torch.cuda.is_available() else '--cpu')")

[ -f "data-bin/$CORPUS/train.bin" ] || python3 examples/language_model/prepare_lm_data.py --corpus "$CORPUS" --force

fairseq-train "data-bin/$CORPUS" --user-dir alm_plugin --task sentence_language_modeling \
  --arch "$ARCH" --attention-score "$SCORE" --criterion attention_cross_entropy \
  --optimizer sgd --lr 1.0 --lr-scheduler fixed --force-anneal "$ANNEAL" --lr-shrink "$SHRINK" \
  --clip-norm 5 --batch-size 32 --sentence-avg --max-epoch "$EPOCHS" --patience 10 \
  --best-checkpoint-metric nll_loss \
  --no-epoch-checkpoints --save-dir "$SAVE" --log-format simple --log-interval 200 $DEVICE ${EXTRA_ARGS:-}

for split in valid test; do
  fairseq-eval-lm "data-bin/$CORPUS" --user-dir alm_plugin --task sentence_language_modeling \
    --path "$SAVE/checkpoint_best.pt" --gen-subset "$split" --batch-size 64 $DEVICE 2>&1 \
    | grep -E "Perplexity" | sed "s/^/$split: /"
  fairseq-validate "data-bin/$CORPUS" --user-dir alm_plugin --task sentence_language_modeling \
    --path "$SAVE/checkpoint_best.pt" --valid-subset "$split" --criterion attention_cross_entropy \
    --batch-size 64 $DEVICE 2>&1 | grep -oE "ppl [0-9.]+ \| paper_ppl [0-9.]+" | sed "s/^/$split: /"
done
