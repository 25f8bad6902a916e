#!/usr/bin/env bash
# The GPU checks and figures (issue 16), in steps that each fit in one 10-minute command on an
# H100/H200 with no package index. Results go to benchmarks/results/gpu/ and, where the
# variable is set, to $OUT (what a device call brings back).
#
#   bash benchmarks/gpu/run.sh install tests speed     # any subset, in this order
#
# install: scripts/install.sh --wheelhouse .whl (a small wheelhouse: everything the image
#          lacks, made beside the repo with
#          bash scripts/make_wheelhouse.sh --python-version 3.12 --dest .whl --have "$(cat benchmarks/gpu/image_has.txt)")
# tests:   the model-level tests on CUDA (pytest -m cuda: causality, incremental == full,
#          eval-lm == hand computation), then the model tests as a whole
# speed:   training throughput at 2 x 650, batch 32 x 35, fp32 / bf16 / fp16, against a bare
#          cuDNN nn.LSTM LM (the step alone), and through fairseq-train against lstm_lm
#          (needs data-bin/ptb: carry it)
# char:    char_cache_lm against hclm at the paper's 600-d, chars/s (training and eval-lm)
set -euo pipefail
cd "$(dirname "$0")/../.."
RESULTS=benchmarks/results/gpu
mkdir -p "$RESULTS"
export PYTHONUNBUFFERED=1
keep() { if [[ -n ${OUT:-} ]]; then cp "$@" "$OUT"/ 2>/dev/null || true; fi; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true

status=0  # a failing step is reported at the end; the later steps still run and their files come back
for step in "$@"; do
  echo "=== $step ($(date +%H:%M:%S))"
  case $step in
    install)
      bash scripts/install.sh --wheelhouse .whl 2>&1 | tail -3 || exit 1 ;;
    tests)
      python3 -m pytest -q -m cuda tests 2>&1 | tee "$RESULTS/cuda_tests.log" | tail -15 || status=1
      python3 -m pytest -q tests/test_history_models.py tests/test_char_models.py \
        tests/test_translation_models.py 2>&1 | tail -3 || status=1
      keep "$RESULTS/cuda_tests.log" ;;
    speed)
      python3 benchmarks/train_speed.py --mode model --data data-bin/ptb --device cuda --updates 60 --repeats 3 \
        --precision fp32,bf16,fp16 --json "$RESULTS/train_speed_model.json" || status=1
      python3 benchmarks/train_speed.py --mode fairseq --data data-bin/ptb --device cuda --updates 300 \
        --repeats 1 --precision fp32,bf16 --json "$RESULTS/train_speed_fairseq.json" || status=1
      keep "$RESULTS"/train_speed_*.json ;;
    char)
      python3 benchmarks/char_speed.py --device cuda --updates 100 --repeats 2 --json "$RESULTS/char_speed.json" || status=1
      keep "$RESULTS/char_speed.json" ;;
    *) echo "unknown step $step: install, tests, speed or char" >&2; exit 2 ;;
  esac
done
exit $status
