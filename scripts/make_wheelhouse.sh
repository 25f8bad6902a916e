#!/usr/bin/env bash
# Download, on a machine with a package index, everything scripts/install.sh needs besides
# torch, for a target Python on x86-64 Linux, so that `install.sh --wheelhouse DIR` works
# where there is no index (a GPU cluster node, a firewalled machine).
#
#   bash scripts/make_wheelhouse.sh --python-version 3.12 --dest wheelhouse
#   scp -r wheelhouse gpu-node: ; ssh gpu-node 'bash alm_plugin/scripts/install.sh --wheelhouse ~/wheelhouse'
#
# Options: --python-version X.Y (default: this Python's), --dest DIR (default: wheelhouse),
# --with-torch (also torch==2.13.0 from the index; a cluster usually has its own CUDA torch),
# --have NAME,NAME,... (packages the target already has in a version that will do: their
# files are left out, e.g. to carry a small wheelhouse to a machine with a rich image; numpy
# too: install.sh keeps the target's numpy, 1.x or 2.x).
# pip evaluates dependency markers (e.g. pytest's tomli on Python < 3.11) for the Python that
# runs it, not for --python-version: the wheels are resolved by python3.X when there is one.
# Binary wheels for the target; sdists for what has no wheel for it: antlr4-python3-runtime
# (hydra's parser runtime) and fairseq-fixed where the index has no wheel for the target's
# Python (it has one for 3.12, none for 3.11), built on the target against its numpy.
# This Python prepares the sdists without build isolation: it needs setuptools and `wheel` (or
# setuptools >= 70.1), and torch where fairseq-fixed is an sdist; both checked before downloading.
set -euo pipefail
PY=${PYTHON:-python3}
TARGET=""
DEST=wheelhouse
WITH_TORCH=0
HAVE=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --python-version) TARGET=${2:?--python-version needs X.Y}; shift 2 ;;
    --dest) DEST=${2:?--dest needs a directory}; shift 2 ;;
    --with-torch) WITH_TORCH=1; shift ;;
    --have) HAVE=${2:?--have needs NAME,NAME,...}; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "make_wheelhouse.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
DEST=$(realpath -m -- "$DEST")  # a relative --dest is the caller's, not the repository's
cd "$(dirname "$0")/.."
TARGET=${TARGET:-$("$PY" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')}
if [[ ! $TARGET =~ ^3\.[0-9]+$ ]]; then
  echo "make_wheelhouse.sh: --python-version $TARGET: give X.Y, e.g. 3.12" >&2; exit 2
fi
# the sdists are prepared (pip download runs their setup.py) by this Python, without build
# isolation: it needs setuptools, and the wheel package where its setuptools (< 70.1) has no
# bdist_wheel of its own; checked here, before minutes of downloads
if ! WHY=$("$PY" - "$PY" 2>/dev/null <<'PYEOF'
import sys
py = sys.argv[1]
try:
    import setuptools
    from setuptools.dist import Distribution
except ImportError:
    print(f"it has no setuptools: run {py} -m pip install setuptools wheel, then again")
    sys.exit(1)
try:
    Distribution().get_command_class("bdist_wheel")
except Exception:
    print(f"its setuptools {setuptools.__version__} has no bdist_wheel without the wheel package: "
          f"run {py} -m pip install wheel, then again")
    sys.exit(1)
PYEOF
); then
  echo "make_wheelhouse.sh: $PY cannot build wheels from sdists (antlr4-python3-runtime has only an sdist):" \
       "${WHY:-it does not run: set PYTHON to a python3 with pip}" >&2
  exit 2
fi
mkdir -p "$DEST"
HOST=$("$PY" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
RESOLVER=$PY
if [[ $TARGET != "$HOST" ]]; then
  if command -v "python$TARGET" >/dev/null && "python$TARGET" -m pip --version >/dev/null 2>&1; then
    RESOLVER=python$TARGET
  else
    echo "make_wheelhouse.sh: WARNING: no python$TARGET here; dependencies are chosen by Python $HOST's" \
         "markers, and a package needed only on $TARGET may be missing (add it by name)" >&2
  fi
fi
# every manylinux tag pip may pick for a recent x86-64 Linux (pip matches them exactly)
PLATFORMS=()
for tag in manylinux_2_28 manylinux_2_27 manylinux_2_24 manylinux_2_17 manylinux2014 manylinux1; do
  PLATFORMS+=(--platform "${tag}_x86_64")
done
BINARY=("$RESOLVER" -m pip download -q --dest "$DEST" --only-binary=:all: --python-version "$TARGET"
        --implementation cp "${PLATFORMS[@]}")
# fairseq-fixed's binary wheel where the index has one for the target (cp312's extensions are
# built against numpy 2's headers and load under numpy 1.x and 2.x), else its sdist
SDISTS=("antlr4-python3-runtime==4.9.3")
if ! "${BINARY[@]}" --no-deps "fairseq-fixed==0.12.3.1" 2>/dev/null; then
  SDISTS+=("fairseq-fixed==0.12.3.1")
fi
# preparing fairseq-fixed's sdist runs its setup.py, which imports torch: checked before the rest
if [[ ${SDISTS[*]} == *fairseq-fixed* ]] && ! "$PY" -c "import torch" 2>/dev/null; then
  echo "make_wheelhouse.sh: the index has no fairseq-fixed wheel for Python $TARGET, and preparing its" \
       "sdist needs torch, which $PY lacks: run where scripts/install.sh has run," \
       "or set PYTHON to a python3 with torch" >&2
  exit 2
fi
# hydra-core and omegaconf need the antlr runtime, which has no wheel: their deps are named here
NO_DEPS=$(grep -E '^(hydra-core|omegaconf)' scripts/requirements.txt)
mapfile -t WITH_DEPS < <(grep -vE '^(#|$|hydra-core|omegaconf)' scripts/requirements.txt)
"${BINARY[@]}" "${WITH_DEPS[@]}" PyYAML
"${BINARY[@]}" --no-deps $NO_DEPS
# sdists are the same for every Python; preparing fairseq-fixed's needs torch (this Python's)
"$PY" -m pip download -q --dest "$DEST" --no-deps --no-binary=:all: --no-build-isolation "${SDISTS[@]}"
if [[ $WITH_TORCH == 1 ]]; then
  "${BINARY[@]}" "torch==2.13.0"
fi
# a file's project name, normalised as pip does (lower case, runs of - _ . as -)
normalise() { echo "$1" | tr 'A-Z' 'a-z' | sed -E 's/[-_.]+/-/g'; }
for name in ${HAVE//,/ }; do
  wanted=$(normalise "$name")
  for file in "$DEST"/*; do
    project=$(basename "$file" | sed -E 's/-[0-9].*//')
    [[ $(normalise "$project") == "$wanted" ]] && rm -f "$file"
  done
done
echo "wheelhouse for Python $TARGET: $DEST ($(ls "$DEST" | wc -l) files, $(du -sh "$DEST" | cut -f1));" \
     "install with: bash scripts/install.sh --wheelhouse $DEST"
