#!/usr/bin/env bash
# Install alm_plugin and fairseq into this Python (PYTHON=..., default python3).
#
#   bash scripts/install.sh                         # from the package index
#   bash scripts/install.sh --wheelhouse DIR        # offline: only the files in DIR (or WHEELHOUSE=DIR)
#
# DIR is made by scripts/make_wheelhouse.sh on a machine with an index, for the target's Python.
#
# - torch: an installed torch (e.g. a cluster's CUDA build) is kept; otherwise torch==2.13.0
#   (the CPU wheel where the machine provides one; from DIR when offline).
# - fairseq: the official 0.12.2 does not import on Python >= 3.11; `fairseq-fixed` (same import
#   name) does. It is built without build isolation (else pip pulls a CUDA torch into the
#   throw-away build environment, or, offline, fails to fetch the build tools) and without its
#   declared deps (torchaudio is unused).
# - numpy: an installed numpy is kept at its version, 1.x or 2.x (never downgraded nor upgraded):
#   an image's scipy and scikit-learn are built against it (scipy >= 1.18 needs numpy 2: under
#   numpy<2, `import sklearn`, which fairseq runs at start-up, fails), and so is a fairseq-fixed
#   already built here. A fresh install gets the newest numpy, numpy 2:
#   fairseq-fixed's Cython extensions, built here against the installed numpy, then load under
#   numpy 1.x and 2.x alike, where ones built against numpy 1.26 fail to load under 2.x; numpy<2
#   has no wheel for Python >= 3.13 and caps scipy at 1.17; and the tests pass on numpy 2.4.6 as
#   on 1.26.4. fairseq's data code still reads what numpy 2 removed (np.compat, percentile's
#   interpolation=): alm_plugin/mends/numpy_compat.py gives it back (--user-dir alm_plugin).
# - the rest: scripts/requirements.txt.
set -euo pipefail
PY=${PYTHON:-python3}
WHEELHOUSE=${WHEELHOUSE:-}
while [[ $# -gt 0 ]]; do
  case $1 in
    --wheelhouse|--wheelhouse=*)
      # --wheelhouse DIR or --wheelhouse=DIR; an empty DIR is refused (it would install from the index)
      if [[ $1 == *=* ]]; then WHEELHOUSE=${1#*=}; shift; else WHEELHOUSE=${2:-}; shift $(( $# > 1 ? 2 : 1 )); fi
      [[ -n $WHEELHOUSE ]] || { echo "install.sh: --wheelhouse needs a directory (one made by" \
        "scripts/make_wheelhouse.sh); to install from the package index, leave the option out" >&2; exit 2; } ;;
    -h|--help) awk 'NR > 1 && /^#/ { print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "install.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
# a relative wheelhouse is the caller's, not the repository's
[[ -n $WHEELHOUSE ]] && WHEELHOUSE=$(realpath -m -- "$WHEELHOUSE")
cd "$(dirname "$0")/.."

PIP=("$PY" -m pip install -q)
if [[ -n $WHEELHOUSE ]]; then
  if [[ ! -d $WHEELHOUSE ]] || ! compgen -G "$WHEELHOUSE/fairseq[-_]fixed-*" >/dev/null; then
    echo "install.sh: $WHEELHOUSE is not a wheelhouse (no fairseq-fixed in it): make one on a machine" \
         "with a package index: bash scripts/make_wheelhouse.sh --python-version X.Y --dest $WHEELHOUSE" >&2
    exit 2
  fi
  # nothing from an index, sdists built with what is installed
  PIP+=(--no-index --find-links "$WHEELHOUSE" --no-build-isolation)
fi
"$PY" -c "import sys" 2>/dev/null || { echo "install.sh: PYTHON=$PY does not run Python: give a Python 3.11," \
  "3.12 or 3.13 (e.g. PYTHON=python3, or activate a venv first)" >&2; exit 2; }
# an installed numpy is held at its version (see above); otherwise pip takes the newest
KEEP_NUMPY=()
if NUMPY=$("$PY" -c "import numpy; print(numpy.__version__)" 2>/dev/null); then
  KEEP_NUMPY=("numpy==$NUMPY")
fi
if [[ -n $WHEELHOUSE ]]; then
  "${PIP[@]}" setuptools wheel cython numpy "${KEEP_NUMPY[@]}"
fi

# each step's line, "install.sh: ...", is what examples/quickstart.sh shows while it waits
step() { echo "install.sh: $*"; }
if ! "$PY" -c "import torch" 2>/dev/null; then
  # what pip would take, said before the download starts: PyPI's Linux torch is the CUDA build, which pulls
  # CUDA's nvidia packages (gigabytes); a CPU wheel is taken only where this machine's index has one
  count="import json, sys; r = json.load(sys.stdin)
print(sum(i['metadata']['name'].startswith('nvidia') for i in r['install']))"
  cuda=$("${PIP[@]}" --dry-run --report - "torch==2.13.0" 2>/dev/null | "$PY" -c "$count" 2>/dev/null) || cuda=
  if [[ -z $cuda ]]; then
    step "torch 2.13.0 (pip could not say beforehand which build it takes)"
  elif (( cuda > 0 )); then
    step "torch 2.13.0, the CUDA build with $cuda nvidia packages: several GB to download (about 5 GB" \
      "installed); on a machine without a GPU, stop (Ctrl-C) and install the CPU build first" \
      "(docs/tools.md#torch-the-cpu-build): an installed torch is kept"
  else
    step "torch 2.13.0, the CPU build (about 200 MB)"
  fi
  "${PIP[@]}" "torch==2.13.0" || {
    echo "install.sh: no torch installed and none could be installed${WHEELHOUSE:+ from $WHEELHOUSE}:" \
         "install your torch build first (it is kept), or put its wheel in the wheelhouse" >&2; exit 1; }
fi
step "the requirements (scripts/requirements.txt)"
"${PIP[@]}" -r scripts/requirements.txt "${KEEP_NUMPY[@]}"
# its Cython extensions must load too: one built against numpy 1.x does not under numpy 2
if ! "$PY" -c "import fairseq.data.data_utils_fast, fairseq.data.token_block_utils_fast" 2>/dev/null; then
  # without CUDA_HOME: its optional CUDA kernels (non-autoregressive MT, n-gram blocking, which
  # has a Python fallback) are not used here, and nvcc builds are slow and version-fragile
  # --no-cache-dir: built here against this numpy, not a wheel pip cached from a build against
  # another (one built against numpy 1.x fails to load under numpy 2)
  step "fairseq-fixed 0.12.3.1 (its wheel where the index has one for this Python, else built from its source:" \
    "a few minutes on 2 cores)"
  piplog=$(mktemp)  # pip's verbose log, to say which it did
  env -u CUDA_HOME "${PIP[@]}" --log "$piplog" --no-build-isolation --no-deps --no-cache-dir --force-reinstall \
    "fairseq-fixed==0.12.3.1" || { rm -f "$piplog"; exit 1; }
  if grep -q "Building wheel for fairseq-fixed" "$piplog"; then
    step "fairseq-fixed: built from its source"
  else
    step "fairseq-fixed: its prebuilt wheel taken"
  fi
  rm -f "$piplog"
fi
# this package, editable, built by the setuptools installed here (offline too): pyproject.toml
# names the build backend, so pip builds the editable wheel itself; without it, a pip that finds
# `wheel` installed runs `setup.py develop`, which setuptools >= 80 hands to a pip of its own that
# looks for setuptools on an index
step "alm_plugin (editable)"
"${PIP[@]}" --no-deps --no-build-isolation -e . || {
  echo "install.sh: installing alm_plugin itself (pip install -e .) failed, pip's error above: it needs this" \
       "checkout's pyproject.toml and setuptools>=64 with wheel in $PY" \
       "($PY -m pip install setuptools wheel)" >&2; exit 1; }
"$PY" -c "import fairseq, torch, alm_plugin; print(f'alm_plugin ready: fairseq {fairseq.__version__}, '
  f'torch {torch.__version__}, CUDA {torch.cuda.is_available()}')"
