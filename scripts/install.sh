#!/usr/bin/env bash
# Install alm_plugin and fairseq on a CPU machine (Python 3.11): no CUDA download.
#
# - torch: kept if already installed; otherwise torch==2.13.0 (the CPU wheel where the
#   machine provides one).
# - fairseq: the official 0.12.2 does not import on Python 3.11; `fairseq-fixed` (same import
#   name) does. It is built without build isolation (else pip pulls a CUDA torch into the
#   throw-away build environment) and without its declared deps (torchaudio is unused).
# - numpy<2: fairseq's data code uses np.compat, gone in numpy 2.
set -euo pipefail
PY=${PYTHON:-python3}
cd "$(dirname "$0")/.."

if ! $PY -c "import torch" 2>/dev/null; then
  $PY -m pip install -q "torch==2.13.0"
fi
$PY -m pip install -q "numpy<2" cython setuptools wheel cffi "hydra-core==1.3.2" "omegaconf==2.3.0" \
  regex sacrebleu tqdm bitarray packaging scikit-learn sacremoses subword-nmt pytest matplotlib
if ! $PY -c "import fairseq" 2>/dev/null; then
  $PY -m pip install -q --no-build-isolation --no-deps "fairseq-fixed==0.12.3.1"
fi
$PY -m pip install -q --no-deps --no-build-isolation -e .
$PY -c "import fairseq, torch, alm_plugin; print(f'alm_plugin ready: fairseq {fairseq.__version__}, torch {torch.__version__}')"
