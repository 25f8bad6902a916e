#!/usr/bin/env bash
# Kawakami et al. (2017), Tables 4-5: train and test the character-level LSTM, HCLM and
# HCLM + cache with the paper's setup (600-d, Adam 0.002, clip 10, dropout 0.5, 35 words
# per chunk, cache of 100; batches of 10 streams for WikiText-2, 25 for PTB).
#
#   bash examples/language_model/reproduce_hclm.sh wikitext-2 char_cache_lm   # paper: 1.480 / 1.500
#   bash examples/language_model/reproduce_hclm.sh wikitext-2 hclm            # paper: 1.625 / 1.670
#   bash examples/language_model/reproduce_hclm.sh wikitext-2 char_lstm_lm    # paper: 1.758 / 1.803
#   bash examples/language_model/reproduce_hclm.sh ptb char_cache_lm          # paper: 1.266 / 1.247
#
# Scaled down for a CPU: ARCH_ARGS="--hidden-size 256 --char-embed-dim 128" EPOCHS=2 ...
# Prints bits per character and word perplexity of valid and test, each scored as one stream.
set -euo pipefail
cd "$(dirname "$0")/../.."
CORPUS=${1:-wikitext-2}
ARCH=${2:-char_cache_lm}
case "$CORPUS" in
  ptb)        STREAMS=${STREAMS:-25} ;;
  wikitext-2) STREAMS=${STREAMS:-10} ;;
  *) echo "corpus must be ptb or wikitext-2" >&2; exit 2 ;;
esac
EPOCHS=${EPOCHS:-30}
DATA=data-bin/${CORPUS}-open
SAVE=${SAVE_DIR:-checkpoints/${CORPUS}_${ARCH}}
DEVICE=$(python3 -c "import torch; print('' if torch.cuda.is_available() else '--cpu')")

[ -f "$DATA/train.bin" ] || python3 examples/language_model/prepare_lm_data.py --corpus "$CORPUS" \
  --open-vocabulary --name "${CORPUS}-open" --force

fairseq-train "$DATA" --user-dir alm_plugin --task open_vocabulary_language_modeling \
  --arch "$ARCH" --criterion open_vocabulary_cross_entropy --optimizer adam --lr 0.002 \
  --clip-norm 10 --batch-size "$STREAMS" --tokens-per-sample 35 --max-epoch "$EPOCHS" --patience 5 \
  --no-epoch-checkpoints --save-dir "$SAVE" --log-format simple --log-interval 200 $DEVICE ${ARCH_ARGS:-}

for split in valid test; do
  fairseq-validate "$DATA" --user-dir alm_plugin --task open_vocabulary_language_modeling \
    --path "$SAVE/checkpoint_best.pt" --valid-subset "$split" --batch-size 1 $DEVICE 2>&1 \
    | grep -oE "bpc [0-9.]+.*ppl [0-9.]+" | sed "s/^/$split: /"
done
