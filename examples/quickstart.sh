#!/usr/bin/env bash
# Install, train a small Attentive LM on the shipped WikiText-2 sample for a few minutes,
# evaluate it with fairseq-eval-lm, and say what to try next. Run from the repository root:
#     bash examples/quickstart.sh            (SKIP_INSTALL=1 skips the install step, REINSTALL=1 repeats it)
# The real commands run as they are; their full output goes to $SAVE/*.log, and this script
# shows one line per epoch and a summary.
set -euo pipefail
cd "$(dirname "$0")/.."
SAVE=${SAVE_DIR:-checkpoints/quickstart}
EPOCHS=${EPOCHS:-8}
[[ $EPOCHS =~ ^[1-9][0-9]*$ ]] \
  || { echo "quickstart.sh: EPOCHS=$EPOCHS: give a whole number of epochs (e.g. 8)" >&2; exit 2; }
mkdir -p "$SAVE"

fail() { echo "failed: see $1 (last lines below)" >&2; tail -n 20 "$1" >&2; exit 1; }
# a log is written as a new file of its own: a link planted in its place is removed, never written through
fresh() {
  rm -f -- "$1" || { echo "quickstart.sh: cannot replace $1: remove it, or set SAVE_DIR elsewhere" >&2; exit 1; }
}

# what an install is made from: a finished install records it, and a later run with the same skips the install
made_from=$( (command -v python3; cat scripts/install.sh scripts/requirements.txt setup.py) | sha256sum | cut -c1-16)
installed=$SAVE/install.done
if [ "${SKIP_INSTALL:-0}" = 1 ]; then
  :
elif [ "${REINSTALL:-0}" != 1 ] && [ "$(cat "$installed" 2>/dev/null)" = "$made_from" ] \
    && command -v fairseq-train > /dev/null && command -v alm-score > /dev/null; then
  echo "Install found (this Python, this install script): skipped (REINSTALL=1 installs again)."
else
  log=$SAVE/install.log
  [ -e "$log" ] && log=$SAVE/install-$(date +%Y%m%d-%H%M%S).log  # an earlier install's log is kept
  echo "Installing fairseq and alm_plugin (log: $log) ..."
  fresh "$log"
  bash scripts/install.sh > "$log" 2>&1 &
  installer=$!
  start=$(date +%s)
  shown=$start
  while kill -0 "$installer" 2>/dev/null; do  # a line every 20 s: the step install.sh is on, and the time so far
    sleep 1
    if (( $(date +%s) - shown >= 20 )); then
      shown=$(date +%s)
      doing=$(grep "^install.sh: " "$log" | tail -n 1 | sed 's/^install.sh: //')
      echo "  ${doing:-starting} ($(( shown - start )) s so far)"
    fi
  done
  wait "$installer" || fail "$log"
  tail -n 1 "$log"
  fresh "$installed"
  echo "$made_from" > "$installed"
fi

train() {  # fairseq-train in the background: a line per finished epoch, and fairseq's progress every 30 s
  echo "Training attentive_lm_small (2 x 256 LSTM, single score) on data-bin/wikitext-2-sample," \
       "$EPOCHS epochs on the CPU, $1 (log: $SAVE/train.log) ..."
  local trainer shown=0 lines said progress
  start=$(date +%s)
  said=$start
  fresh "$SAVE/train.log"
  fairseq-train data-bin/wikitext-2-sample --user-dir alm_plugin \
    --task sentence_language_modeling --arch attentive_lm_small --attention-score single \
    --criterion attention_cross_entropy --optimizer adam --lr 0.003 --clip-norm 5 \
    --batch-size 32 --max-epoch "$EPOCHS" --patience 3 --no-epoch-checkpoints \
    --save-dir "$SAVE" --cpu --log-format simple --log-interval 10 > "$SAVE/train.log" 2>&1 &
  trainer=$!
  while kill -0 "$trainer" 2>/dev/null; do
    sleep 2
    lines=$(grep -c "valid on 'valid' subset" "$SAVE/train.log" || true)
    if [ "$lines" -gt "$shown" ]; then
      grep "valid on 'valid' subset" "$SAVE/train.log" | tail -n +"$((shown + 1))" \
        | sed -E "s/.*epoch 0*([0-9]+) \| valid on 'valid' subset.* ppl ([0-9.]+) .*/  epoch \1: valid perplexity \2/"
      shown=$lines
      said=$(date +%s)
    elif (( $(date +%s) - said >= 30 )); then  # within an epoch: fairseq's last record of it (every 10 updates)
      said=$(date +%s)
      progress=$(grep "| train_inner | epoch" "$SAVE/train.log" | tail -n 1 | sed -E \
        's/.*epoch 0*([0-9]+): +([0-9]+) \/ ([0-9]+) loss=([0-9.]+),.*/epoch \1: \2 of \3 updates, loss \4 (base 2)/')
      echo "  ${progress:-starting} ($(( said - start )) s so far)"
    fi
  done
  wait "$trainer" || fail "$SAVE/train.log"
  seconds=$(( $(date +%s) - start ))
  echo "  trained in $seconds s"
}

# a checkpoint in $SAVE is used only if it is the quickstart's own (read as data, never unpickled): else it is
# set aside, and the model trained from the start
fresh "$SAVE/check.log"
found=$(python3 examples/quickstart_checkpoint.py "$SAVE" "$EPOCHS" 2> "$SAVE/check.log") || fail "$SAVE/check.log"
started=from-the-start seconds=
case $found in
  done\ *)
    started=skipped
    echo "Found a model trained for ${found#done } epochs in $SAVE: training skipped (to train again: rm -r $SAVE)." ;;
  resume\ *)
    started=resumed
    echo "Found the quickstart's model trained for ${found#resume } of $EPOCHS epochs in $SAVE."
    train "resuming its checkpoint" ;;
  other\ *)
    aside=$SAVE/set-aside-$(date +%Y%m%d-%H%M%S)
    { mkdir "$aside" && mv "$SAVE"/checkpoint*.pt "$aside"/; } || {
      echo "quickstart.sh: could not set the checkpoints in $SAVE aside into $aside: move them yourself" \
           "(or set SAVE_DIR to a new folder), then run again" >&2; exit 1; }
    echo "Not the quickstart's model: ${found#other }: training from the start (it is kept in $aside)."
    train "from the start" ;;
  *) train "from the start" ;;
esac

fresh "$SAVE/eval.log"
fairseq-eval-lm data-bin/wikitext-2-sample --user-dir alm_plugin --task sentence_language_modeling \
  --path "$SAVE/checkpoint_best.pt" --gen-subset test --batch-size 32 --cpu > "$SAVE/eval.log" 2>&1 \
  || fail "$SAVE/eval.log"
test_ppl=$(grep -oE "Perplexity: [0-9.]+" "$SAVE/eval.log" | grep -oE "[0-9.]+$")
# what it printed, as data: the README's sample output is generated from a committed one
python3 examples/quickstart_record.py "$SAVE" "$started" "$EPOCHS" "$test_ppl" "$seconds" \
  || { echo "quickstart.sh: could not write $SAVE/quickstart.json (above)" >&2; exit 1; }

cat <<EOF

Done. The model is $SAVE/checkpoint_best.pt (the best epoch on valid).
Test perplexity (fairseq-eval-lm, every word and </s> counted): $test_ppl

Next, try:
  echo "The game was released in Japan ." | alm-score --path $SAVE/checkpoint_best.pt
  alm-plot-attention --path $SAVE/checkpoint_best.pt --out $SAVE/attention.png "The game was released in Japan ."
  fairseq-eval-lm data-bin/wikitext-2-sample --user-dir alm_plugin --task sentence_language_modeling \\
    --path $SAVE/checkpoint_best.pt --gen-subset valid --cpu
EOF
