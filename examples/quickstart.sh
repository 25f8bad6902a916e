#!/usr/bin/env bash
# Install, train a small Attentive LM on the shipped WikiText-2 sample for a few minutes,
# and evaluate it with fairseq-eval-lm. Run from the repository root:
#     bash examples/quickstart.sh            (SKIP_INSTALL=1 to skip the install step)
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${SKIP_INSTALL:-0}" = 1 ] || bash scripts/install.sh
SAVE=${SAVE_DIR:-checkpoints/quickstart}
EPOCHS=${EPOCHS:-8}

fairseq-train data-bin/wikitext-2-sample --user-dir alm_plugin \
  --task sentence_language_modeling --arch attentive_lm_small --attention-score single \
  --criterion attention_cross_entropy --optimizer adam --lr 0.003 --clip-norm 5 \
  --batch-size 32 --max-epoch "$EPOCHS" --patience 3 --no-epoch-checkpoints \
  --save-dir "$SAVE" --cpu --log-format simple --log-interval 50

fairseq-eval-lm data-bin/wikitext-2-sample --user-dir alm_plugin --task sentence_language_modeling \
  --path "$SAVE/checkpoint_best.pt" --gen-subset test --batch-size 32 --cpu
