#!/usr/bin/env bash
# The GPU checks and figures as ONE prepared command for a lent GPU machine (Python 3.12, numpy 2, no
# package index). Each step, its budget and what it writes: docs/tools.md, "The GPU checks in one command".
#
# 1. Here, once (needs the package index and ../shared/data/ptb): bash benchmarks/gpu/run.sh --prepare
#    makes the git-ignored .whl/ (what the image lacks, fairseq-fixed slimmed), .gpu-data/ptb/ (raw
#    PTB) and .gpu-data/data-bin/ptb/ (binarised), and .gpu-plugins/ (the older plugins the timing step
#    measures); it prints what they weigh against the carry limit.
# 2. On the GPU machine, the device tool's `run` with carry [".whl", ".gpu-data", ".gpu-plugins"], timeout_s 600:
#      bash benchmarks/gpu/run.sh install tests cli speed
#    paper [ROW...] is a command of its own (rows: benchmarks/rows.py's PAPER_QUEUE; none named: the
#    queue's next PAPER_ROWS_PER_COMMAND rows without their JSON, in that order);
#    it exits 3 while rows still train: run the same command again at once, GPU_RUN_BUDGET set to the
#    device time left; --cut on the session's last command scores a row's epochs so far.
# 3. Here, without a GPU: bash benchmarks/gpu/run.sh --dry-run STEP... (tiny budgets, all on the CPU).
#
# Steps, in this order: install tests cli speed char fairseq-speed timing paper, each within its budget
# (BUDGET_<STEP>), all by GPU_RUN_BUDGET (560 s; paper's 570 s); results in benchmarks/results/gpu/.
# Exit status: 0 all passed; 1 a step failed (the later ones still run); 2 a bad argument, or a GPU step
# without --dry-run where there is no GPU; 3 paper's rows still run; 143 / 130 on SIGTERM / SIGINT.
set -uo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python3}
STEPS_KNOWN=(install tests cli speed char fairseq-speed timing paper)
# the paper step's rows in its queue's order, read from benchmarks/rows.py (PAPER_QUEUE) with the plain
# Python here, before anything installs (rows.py imports no package); read only where paper is named
PAPER_ROWS_KNOWN=()
for arg in "$@"; do
  [[ $arg == paper ]] || continue
  # a row name a line, nothing else; else the reason in one line (the command again, its last stderr line)
  if ! queue=$(python3 -m benchmarks.rows --paper-queue 2>/dev/null) || [[ -z $queue ]] \
     || grep -qvE '^[a-z0-9-]+$' <<< "$queue"; then
    why=$(python3 -m benchmarks.rows --paper-queue 2>&1 > /dev/null | tail -n 1)
    echo "run.sh: paper: its rows could not be read from benchmarks/rows.py (python3 -m benchmarks.rows" \
         "--paper-queue${why:+: $why}): run it with a python3 on PATH from an intact checkout" >&2
    exit 2
  fi
  mapfile -t PAPER_ROWS_KNOWN <<< "$queue"
  break
done
# rows side by side in one command: two fit 600 s on an H200 (fde92ca, 469 s); the step's record
# (paper_step.json) gives each command's epoch seconds, from which a larger figure is chosen
PAPER_ROWS_PER_COMMAND=${PAPER_ROWS_PER_COMMAND:-2}
[[ $PAPER_ROWS_PER_COMMAND =~ ^[1-9][0-9]*$ ]] || {
  echo "run.sh: PAPER_ROWS_PER_COMMAND=$PAPER_ROWS_PER_COMMAND is not a whole number of rows (1 or more)" >&2; exit 2; }
# the timing step's plugins with the host levers off: before the syncs were taken out, and before the mends
declare -A TIMING_PLUGINS=([before]=b6545b6 [no-syncs]=adb44ed)
DRY=0; PREPARE=0; CUT=0; WANT=(); PAPER_ROWS=()
one_of() { local word=$1 known; shift; for known in "$@"; do [[ $word == "$known" ]] && return 0; done; return 1; }
for arg in "$@"; do
  case $arg in
    --dry-run) DRY=1 ;;
    --prepare) PREPARE=1 ;;
    --cut) CUT=1 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    -*) echo "run.sh: unknown option $arg (--dry-run, --prepare, --cut, --help)" >&2; exit 2 ;;
    *) if one_of "$arg" "${STEPS_KNOWN[@]}"; then WANT+=("$arg")
       elif one_of paper "${WANT[@]}" && one_of "$arg" "${PAPER_ROWS_KNOWN[@]}"; then
         if one_of "$arg" "${PAPER_ROWS[@]}"; then
           echo "run.sh: paper: $arg named twice: name each row once" >&2; exit 2; fi
         PAPER_ROWS+=("$arg")
       else echo "run.sh: unknown step $arg: ${STEPS_KNOWN[*]}" \
              "$( (( ${#PAPER_ROWS_KNOWN[@]} )) && echo "(paper's rows: ${PAPER_ROWS_KNOWN[*]})" \
                  || echo "(a paper row: name it after paper)")" >&2; exit 2; fi ;;
  esac
done
if (( CUT )) && [[ " ${WANT[*]:-} " != *" paper "* ]]; then
  echo "run.sh: --cut stops paper's rows that cannot finish in the budget: it applies to the paper step only" \
       "(add paper, or drop --cut)" >&2
  exit 2
fi
if (( ${#WANT[@]} == 0 && PREPARE == 0 )); then
  echo "usage: bash benchmarks/gpu/run.sh [--dry-run] [--prepare] STEP... (${STEPS_KNOWN[*]}; see --help)" >&2
  exit 2
fi
T0=$(date +%s)
now() { echo $(( $(date +%s) - T0 )); }
if (( DRY )); then
  RESULTS=${ALM_GPU_RESULTS:-}   # none given: the work folder's results/
  declare -A BUDGET=([install]=30 [tests]=200 [cli]=330 [speed]=300 [char]=300 [fairseq-speed]=300
                     [timing]=240 [paper]=280)
  TOTAL=${GPU_RUN_BUDGET:-900}
else
  RESULTS=${ALM_GPU_RESULTS:-benchmarks/results/gpu}
  declare -A BUDGET=([install]=60 [tests]=100 [cli]=240 [speed]=130 [char]=300 [fairseq-speed]=300
                     [timing]=360 [paper]=565)
  # paper is a command of its own (a device command may take 600 s)
  [[ " ${WANT[*]:-} " == *" paper "* ]] && TOTAL=${GPU_RUN_BUDGET:-570} || TOTAL=${GPU_RUN_BUDGET:-560}
fi
# every budget whole seconds above 0, checked before anything runs (a bad one is the caller's argument)
# at most 9 digits: bash's arithmetic wraps past 2^63 (a budget of 2^64 + 1 would read as 1 s)
seconds() { [[ $2 =~ ^[0-9]{1,9}$ ]] && (( 10#$2 > 0 )) && return 0
  echo "run.sh: $1=$2: give whole seconds above 0, under 10^9 (e.g. $3)" >&2; exit 2; }
seconds GPU_RUN_BUDGET "$TOTAL" 560
for s in "${STEPS_KNOWN[@]}"; do
  var=BUDGET_$(echo "$s" | tr 'a-z-' 'A-Z_')
  if [[ -n ${!var:-} ]]; then seconds "$var" "${!var}" "${BUDGET[$s]}"; BUDGET[$s]=$(( 10#${!var} )); fi
done
TOTAL=$(( 10#$TOTAL ))

# The work folder outlives a command (paper's rows train on, the next command reads them; an install's
# fallback site): the caller's (ALM_GPU_WORK), else the one this user's earlier command made (mktemp -d)
# and recorded in $RECORD. A folder read from is this user's own, not a link, and writable by no one else
# (a file planted there would be read as the run's own); a file read back is parsed as data (digits).
own_folder() {  # PATH
  local mode
  [[ -d $1 && ! -L $1 && -O $1 ]] && mode=$(stat -c %a "$1") && [[ $mode =~ ^[0-7]+$ ]] && (( (8#$mode & 8#022) == 0 ))
}
count_in() {  # FILE DEFAULT: the whole number FILE holds (its first line, digits only), else DEFAULT
  local line=""
  [[ -f $1 ]] || { echo "$2"; return; }
  IFS= read -r line < "$1" 2>/dev/null
  [[ $line =~ ^[0-9]{1,9}$ ]] && echo $(( 10#$line )) || echo "$2"
}
STATE=${XDG_STATE_HOME:-${HOME:-/nonexistent}/.local/state}/alm_gpu
RECORD=$STATE/work$( (( DRY )) && echo -dry)
if [[ -n ${ALM_GPU_WORK:-} ]]; then
  WORK=$ALM_GPU_WORK
  if [[ -e $WORK || -L $WORK ]] && ! own_folder "$WORK"; then
    echo "run.sh: ALM_GPU_WORK=$WORK is not a folder of yours that only you can write to (a file planted" \
         "there would be read as the run's own): give another folder, or chmod go-w it" >&2
    exit 2
  fi
else
  WORK=""   # made by the run (mktemp -d) and recorded
  if [[ -f $RECORD && ! -L $RECORD && -O $RECORD ]] && own_folder "$STATE" && own_folder "$(dirname "$STATE")" \
     && [[ $(stat -c %a "$RECORD") =~ ^[0-7]*[0145][0145]$ ]]; then
    IFS= read -r WORK < "$RECORD"
    [[ $WORK == /* ]] && own_folder "$WORK" || WORK=""
  fi
fi
# the results folder: a folder that takes files (made if missing); a dry run's never the committed results
if [[ -n $RESULTS ]]; then
  if [[ -e $RESULTS && ! -d $RESULTS ]]; then
    echo "run.sh: ALM_GPU_RESULTS=$RESULTS is not a folder: give a folder (made if missing)" >&2; exit 2
  fi
  if (( DRY )) && [[ $(realpath -m "$RESULTS")/ == "$(realpath -m benchmarks/results)"/* ]]; then
    echo "run.sh: ALM_GPU_RESULTS=$RESULTS is inside benchmarks/results, the committed results: a dry run's" \
         "figures would replace them; give a folder outside it" >&2
    exit 2
  fi
  if [[ -d $RESULTS ]] && ! { trial=$(mktemp -p "$RESULTS" .run.XXXXXX 2>/dev/null) && rm -f "$trial"; }; then
    echo "run.sh: ALM_GPU_RESULTS=$RESULTS takes no new file (read-only?): give a folder you can write to" >&2
    exit 2
  fi
fi
# a row's JSON counts as done only if it holds its figures (an empty or cut file is no finished row)
finished() { [[ -s $1 ]] && grep -q '"test_ppl"' "$1"; }
# paper with no rows named: the queue's first rows with no JSON (committed, or made by an earlier command
# here), a row that stopped twice without one left out; none left: nothing for paper to do
if [[ " ${WANT[*]:-} " == *" paper "* ]] && (( ! ${#PAPER_ROWS[@]} )); then
  made=$WORK/paper/results/ptb-paper$( (( DRY )) && echo -dry)
  for row in "${PAPER_ROWS_KNOWN[@]}"; do
    (( ${#PAPER_ROWS[@]} < PAPER_ROWS_PER_COMMAND )) || break
    finished "benchmarks/results/ptb-paper/$row.json" || { [[ -n $WORK ]] && finished "$made/$row.json"; } && continue
    if [[ -n $WORK ]] && (( $(count_in "$WORK/paper/$row.restarts" 0) >= 2 )); then
      echo "run.sh: paper: $row stopped twice without its JSON (its log: $WORK/logs/paper_$row.log): left out"
      continue
    fi
    PAPER_ROWS+=("$row")
  done
  if (( ${#PAPER_ROWS[@]} )); then
    echo "run.sh: paper: no rows named: the queue's next ${#PAPER_ROWS[@]} (PAPER_ROWS_PER_COMMAND): ${PAPER_ROWS[*]}"
  else
    echo "run.sh: paper: every row of the queue has its JSON: nothing to train"
    WANT=($(printf '%s\n' "${WANT[@]}" | grep -vx paper))
    (( ${#WANT[@]} )) || exit 0
  fi
fi
# paper's first command on a fresh machine installs first
if [[ " ${WANT[*]:-} " == *" paper "* && " ${WANT[*]} " != *" install "* ]] && (( ! DRY )) \
   && ! $PY -c "import fairseq, alm_plugin" 2>/dev/null \
   && [[ -z $WORK || ! -f $WORK/site/.alm_fallback ]]; then
  WANT+=(install)
fi
STEPS=()  # the canonical order
for s in "${STEPS_KNOWN[@]}"; do [[ " ${WANT[*]:-} " == *" $s "* ]] && STEPS+=("$s"); done
# the steps that run on CUDA: on a machine without a GPU, say so now, before anything runs or is written
# (each would fail in its log, the reason out of sight); --dry-run runs them on the CPU
ON_GPU=()
for s in tests cli speed char fairseq-speed timing; do [[ " ${STEPS[*]:-} " == *" $s "* ]] && ON_GPU+=("$s"); done
if (( ! DRY && ${#ON_GPU[@]} )) && ! nvidia-smi -L 2>/dev/null | grep -q '^GPU' \
   && ! $PY -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  echo "run.sh: ${ON_GPU[*]} run on a GPU and this machine has none (nvidia-smi lists no GPU, torch sees no CUDA):" \
       "run them on the lent GPU machine, or here with --dry-run" \
       "(bash benchmarks/gpu/run.sh --dry-run ${ON_GPU[*]})" >&2
  exit 2
fi

SUMMARY=/dev/null   # until a step runs (--prepare alone writes no results)
SITE=""   # $WORK/site, once the work folder is settled
PRODUCED=()   # this run's result files, for $OUT
export PYTHONUNBUFFERED=1
say() { echo "[$(now)s] $*" | tee -a "$SUMMARY"; }

finish() {
  [[ -d $LOGS ]] || return 0
  tar -czf "$WORK/logs.tgz" -C "$WORK" logs -C "$RESULTS" . 2>/dev/null
  if [[ -n ${OUT:-} ]]; then
    cp "$SUMMARY" "$WORK/logs.tgz" "$OUT"/ 2>/dev/null
    local n=0 f
    for f in "${PRODUCED[@]:-}"; do [[ -f $f ]] && (( n < 6 )) && cp "$f" "$OUT"/ && n=$((n + 1)); done
  fi
}
LOGS=""
trap finish EXIT

# What this run waits on (each step's timeout, pytest, cli_check.py and the fairseq processes under
# them; the PTB binarisation) ends with it: on SIGTERM (as `timeout` sends) or SIGINT, each is sent
# SIGTERM (a coreutils timeout passes it on to its command's process group). Bash runs a trap only
# between commands, so these run in the background and are waited on (`fg`): a wait is cut by the
# signal. paper's rows, started detached (setsid), are not among them: they train on, as designed.
declare -A FG_PIDS=()   # pid: 1, for each process this run waits on
forget() { unset "FG_PIDS[$1]"; }  # PID: waited for, no longer this run's to end
fg() {  # COMMAND...: run it as a foreground command would run, ended with this run
  "$@" &
  local pid=$! rc
  FG_PIDS[$pid]=1; wait "$pid"; rc=$?; forget "$pid"
  return $rc
}
stop() {  # SIGNAL
  trap - TERM INT
  local pid
  for pid in "${!FG_PIDS[@]}" ${PREP_PID:-}; do kill -TERM "$pid" 2>/dev/null; done
  for pid in "${!FG_PIDS[@]}" ${PREP_PID:-}; do wait "$pid" 2>/dev/null; done  # not the rows
  echo "run.sh: stopped by SIG$1: the processes it ran ended" \
       "(paper's detached rows, if any, still train)" >&"$RUN_STDERR"
  [[ $1 == INT ]] && exit 130 || exit 143
}
# run.sh's own stderr (a trap runs inside the redirections of the step it cuts); closed for what is
# started detached, which would otherwise hold run.sh's stderr open after it ends
exec {RUN_STDERR}>&2
trap 'stop TERM' TERM
trap 'stop INT' INT

# a step's timeout: its budget, cut to what is left of GPU_RUN_BUDGET
step_limit() {
  local left=$(( TOTAL - $(now) - 5 ))
  (( left < ${BUDGET[$1]} )) && echo "$left" || echo "${BUDGET[$1]}"
}
left_of() { echo $(( $1 - $(date +%s) )); }   # seconds to an epoch deadline

# ---- --prepare: what the GPU machine needs carried (here, with the package index) ----------------
prepare() {
  local shared=${SHARED_DATA:-../shared/data}
  if [[ ! -s .gpu-data/ptb/train.txt ]]; then
    [[ -s $shared/ptb/train.txt ]] || { say "prepare: no $shared/ptb/train.txt (set SHARED_DATA)"; return 1; }
    mkdir -p .gpu-data/ptb && cp "$shared"/ptb/{train,valid,test}.txt .gpu-data/ptb/ || return 1
  fi
  if [[ ! -s .gpu-data/data-bin/ptb/dict.txt ]]; then  # binarised here, so that no GPU command waits for it
    local text; text=$(mktemp -d) || return 1
    $PY examples/language_model/prepare_lm_data.py --corpus ptb --shared-data .gpu-data --destdir .gpu-data/data-bin \
      --text-dir "$text" --force > "$text/prepare.log" 2>&1 \
      || { say "prepare: PTB's binarisation failed: $(tail -1 "$text/prepare.log")"; rm -rf "$text"; return 1; }
    rm -rf "$text"
  fi
  if ! compgen -G ".whl/fairseq[-_]fixed-*" > /dev/null; then
    bash scripts/make_wheelhouse.sh --python-version 3.12 --dest .whl \
      --have "$(cat benchmarks/gpu/image_has.txt)" || return 1
  fi
  local label w kb
  for label in "${!TIMING_PLUGINS[@]}"; do  # the older plugins that the timing step measures
    [[ -d .gpu-plugins/$label/alm_plugin ]] && continue
    mkdir -p ".gpu-plugins/$label" \
      && git archive "${TIMING_PLUGINS[$label]}" alm_plugin | tar -x -C ".gpu-plugins/$label" || return 1
  done
  for w in .whl/fairseq_fixed-*-cp3*.whl; do [[ -f $w ]] && { $PY -m benchmarks.gpu.slim_wheel "$w" || return 1; }; done
  kb=$(du -sk .whl .gpu-data .gpu-plugins | awk '{ s += $1 } END { print s }')
  say "prepare: .whl $(du -sh .whl | cut -f1), .gpu-data $(du -sh .gpu-data | cut -f1)," \
      ".gpu-plugins $(du -sh .gpu-plugins | cut -f1): $(( kb / 1024 )) MiB to carry (limit 64)"
  (( kb < 48 * 1024 )) || { say "prepare: over 48 MiB: too close to the 64 MiB carry limit"; return 1; }
  say "prepare: carry [\".whl\", \".gpu-data\", \".gpu-plugins\"] and run:" \
      "bash benchmarks/gpu/run.sh install tests cli speed"
}

# ---- PTB for the speed steps and paper: binarised by --prepare (.gpu-data/data-bin/ptb) and copied, else
# the raw text carried in .gpu-data/ptb binarised here in the background ----------------------------------
PREP_PID=""
start_ptb() {
  [[ -s data-bin/ptb/dict.txt || -n $PREP_PID ]] && return 0
  if [[ -s .gpu-data/data-bin/ptb/dict.txt ]]; then
    rm -rf data-bin/ptb.copy && mkdir -p data-bin && cp -r .gpu-data/data-bin/ptb data-bin/ptb.copy \
      && rm -rf data-bin/ptb && mv data-bin/ptb.copy data-bin/ptb && say "PTB: binarised by --prepare, copied" \
      && return 0
    rm -rf data-bin/ptb.copy; say "PTB: the copy of .gpu-data/data-bin/ptb failed: binarising the raw text"
  fi
  local raw=""
  if [[ -s .gpu-data/ptb/train.txt ]]; then raw=.gpu-data
  elif [[ -s ../shared/data/ptb/train.txt ]]; then raw=../shared/data; fi
  [[ -n $raw ]] \
    || { say "PTB: neither .gpu-data/ptb nor ../shared/data/ptb: speed falls back to the sample"; return 0; }
  $PY examples/language_model/prepare_lm_data.py --corpus ptb --shared-data "$raw" --force --workers 4 \
    > "$LOGS/prep_ptb.log" 2>&1 &
  PREP_PID=$!
}
ptb_data() {  # wait for the background binarisation (in this shell: a $(...) cannot wait for it); sets DATA
  if [[ -n $PREP_PID ]]; then
    local t; t=$(date +%s)
    wait "$PREP_PID" || say "PTB preparation failed: $(tail -1 "$LOGS/prep_ptb.log")"
    PREP_PID=""; say "PTB binarised (waited $(( $(date +%s) - t )) s for it)"
  fi
  if [[ -s data-bin/ptb/dict.txt ]]; then DATA=data-bin/ptb; else DATA=data-bin/wikitext-2-sample; fi
}

# ---- install ------------------------------------------------------------------------------------
# the console scripts (fairseq-train, alm-score) pip puts beside this Python, also where it is not on PATH
PYBIN=$($PY -c 'import os, sys; print(os.path.dirname(sys.executable))' 2>/dev/null) && export PATH=$PYBIN:$PATH
use_site() { export PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH} PATH=$SITE/bin:$PATH; }

step_install() {
  local limit=$1
  if (( DRY )); then  # here nothing is installed: is the wheelhouse complete for the image?
    compgen -G ".whl/fairseq[-_]fixed-*" > /dev/null \
      || { say "no .whl/fairseq-fixed: run: bash benchmarks/gpu/run.sh --prepare"; return 1; }
    norm() { tr 'A-Z' 'a-z' | sed -E 's/[-_.]+/-/g'; }  # a project's name as pip compares it
    local have want missing=()
    have=" $(ls .whl | sed -E 's/-[0-9].*//' | norm | tr '\n' ' ')"
    have+=" $(tr ',' '\n' < benchmarks/gpu/image_has.txt | norm | tr '\n' ' ') "
    for want in $(grep -vE '^(#|$)' scripts/requirements.txt | sed -E 's/^[[:space:]]+//; s/[<>=!; \r].*//') \
        fairseq-fixed antlr4-python3-runtime; do
      [[ $have == *" $(echo "$want" | norm) "* ]] || missing+=("$want")
    done
    say "install (dry run): .whl has $(ls .whl | wc -l) files, $(du -sh .whl | cut -f1);" \
        "would run: bash scripts/install.sh" \
        "--wheelhouse .whl; $( (( ${#missing[@]} )) && echo "MISSING from .whl and the image: ${missing[*]}" \
        || echo "every requirement is in .whl or the image")"
    return $(( ${#missing[@]} > 0 ))
  fi
  if fg timeout "$limit" bash scripts/install.sh --wheelhouse .whl > "$LOGS/install.log" 2>&1; then
    say "install.sh: $(tail -1 "$LOGS/install.log")"
  else
    say "install.sh failed ($(grep -iE 'error' "$LOGS/install.log" | tail -1)): pip --target $SITE instead"
    mkdir -p "$SITE"
    fg timeout $(( limit > 40 ? limit : 40 )) $PY -m pip install -q --no-index --no-deps --no-build-isolation \
      --no-compile --target "$SITE" .whl/*.whl .whl/*.tar.gz . >> "$LOGS/install.log" 2>&1 \
      || { say "pip --target failed: $(tail -2 "$LOGS/install.log")"; return 1; }
    touch "$SITE/.alm_fallback"
    use_site
  fi
  $PY -c "import torch, numpy, fairseq, alm_plugin; print('torch', torch.__version__, 'numpy', numpy.__version__,
    'fairseq', fairseq.__version__, 'cuda', torch.cuda.is_available(),
    torch.cuda.get_device_name(0) if torch.cuda.is_available() else '')" \
    2>&1 | tail -1 | tee -a "$SUMMARY"
  return "${PIPESTATUS[0]}"
}

# ---- tests --------------------------------------------------------------------------------------
step_tests() {  # pytest -m cuda beside the model tests on the CPU
  local limit=$1 rc=0 name
  declare -A runs=()  # name: pid
  if (( DRY )); then say "tests (dry run): pytest -m cuda left out (no GPU here)"
  else timeout "$limit" $PY -m pytest -q -p no:cacheprovider -m cuda tests > "$LOGS/pytest_cuda.log" 2>&1 &
       runs[cuda]=$!; FG_PIDS[$!]=1; fi
  OMP_NUM_THREADS=4 timeout "$limit" $PY -m pytest -q -p no:cacheprovider -m "not cuda" tests/test_history_models.py \
    tests/test_char_models.py tests/test_translation_models.py > "$LOGS/pytest_models.log" 2>&1 &
  runs[models]=$!; FG_PIDS[$!]=1
  for name in cuda models; do
    [[ -n ${runs[$name]:-} ]] || continue
    wait "${runs[$name]}"; local r=$?; forget "${runs[$name]}"
    say "pytest $name: rc=$r $(tail -1 "$LOGS/pytest_$name.log")"; (( r == 0 )) || rc=1
  done
  return $rc
}

# ---- cli ----------------------------------------------------------------------------------------
step_cli() {
  local flags=() rc
  (( DRY )) && flags+=(--dry-run)
  measured $(( $(date +%s) + $1 )) cli_check "$RESULTS/cli.json" '/^arch /,$p' \
    $PY -m benchmarks.gpu.cli_check "${flags[@]}" --budget $(( $1 - 20 )) --work "$WORK/cli"; rc=$?
  cp -r "$WORK/cli/logs" "$LOGS/cli" 2>/dev/null
  return $rc
}

# ---- speed --------------------------------------------------------------------------------------
# END NAME JSON SED COMMAND...: one benchmark within what is left to END (epoch seconds), logged to
# $LOGS/NAME.log; its JSON among the files that come back, the lines the sed script SED prints to the summary
measured() {
  local end=$1 name=$2 json=$3 lines=$4 left r; shift 4; left=$(left_of "$end")
  (( left > 5 )) || { say "$name: not run (the step's budget is spent)"; return 1; }
  fg timeout "$left" "$@" --json "$json" > "$LOGS/$name.log" 2>&1; r=$?
  [[ -f $json && " ${PRODUCED[*]:-} " != *" $json "* ]] && PRODUCED+=("$json")
  say "$name: rc=$r"; sed -nE "$lines" "$LOGS/$name.log" | tee -a "$SUMMARY"
  (( r )) && tail -3 "$LOGS/$name.log" | tee -a "$SUMMARY"; return $r  # a failure: why
}
TABLE='/^model /,$p'  # a speed script's closing table

step_speed() {
  local end=$(( $(date +%s) + $1 )) rc=0 data
  ptb_data; data=$DATA
  say "speed on $data"
  local dev=(--device cuda) ts=(--updates 60 --repeats 2 --precision fp32,bf16,fp16) big=(--updates 30)
  local prof=(--device cuda) dyn=(--device cuda --threads 1 --repeats 2)
  if (( DRY )); then
    dev=(--device cpu --size 64 --threads 2); ts=(--updates 3 --repeats 1); big=(--updates 3)
    prof=(--device cpu --size 32 --batch-sizes 4); dyn=(--device cpu --threads 1 --eval-batches 20 --repeats 1)
  fi
  local lines='/^(model|bare|alm_lstm|attentive|amsrn|eval,|training step|eval tokens|operations)/p'
  measured "$end" train_speed_b32 "$RESULTS/train_speed_model_b32.json" "$lines" $PY -m benchmarks.train_speed \
    --mode model --data "$data" "${dev[@]}" "${ts[@]}" --batch-size 32 || rc=1
  measured "$end" train_speed_b128 "$RESULTS/train_speed_model_b128.json" "$lines" $PY -m benchmarks.train_speed \
    --mode model --data "$data" "${dev[@]}" "${ts[@]}" "${big[@]}" --batch-size 128 || rc=1
  measured "$end" stream_speed "$RESULTS/stream_speed.json" "$lines" $PY -m benchmarks.stream_speed --kinds eval \
    --data "$data" "${dyn[@]}" || rc=1
  measured "$end" step_profile "$RESULTS/step_profile.json" "$lines" $PY -m benchmarks.gpu.step_profile \
    "${prof[@]}" || rc=1
  return $rc
}

step_char() {
  local dev=(--device cuda --updates 100 --repeats 2)
  (( DRY )) && dev=(--device cpu --updates 2 --repeats 1 --size 64 --embed 32)
  measured $(( $(date +%s) + $1 )) char_speed "$RESULTS/char_speed.json" "$TABLE" \
    $PY -m benchmarks.char_speed "${dev[@]}"
}

step_fairseq-speed() {
  local dev=(--device cuda --updates 300 --precision fp32,fp16)
  ptb_data
  (( DRY )) && dev=(--device cpu --updates 5 --size 64 --threads 2)
  measured $(( $(date +%s) + $1 )) train_speed_fairseq "$RESULTS/train_speed_fairseq.json" "$TABLE" \
    $PY -m benchmarks.train_speed --mode fairseq --data "$DATA" "${dev[@]}" --repeats 1
}

# ---- timing: a fairseq-train update, the host's levers off and on ---------------------------------
step_timing() {
  local end=$(( $(date +%s) + $1 )) data plugins=() rc=0 label json=$RESULTS/update_timing.json
  ptb_data; data=$DATA
  (( DRY )) || [[ $DATA == data-bin/ptb ]] \
    || { say "timing: no PTB (carry .gpu-data: run.sh --prepare here)"; return 1; }
  rm -f "$json"  # this run's labels only (the script adds each call's to the file)
  local dev=(--device cuda --size 650 --updates 60 --repeats 1
             --cases "sentence lstm,sentence single,sentence combined")
  (( DRY )) && {
    data=data-bin/wikitext-2-sample
    dev=(--device cpu --size 8 --updates 8 --repeats 0 --cases "sentence single")
  }
  for label in before no-syncs; do  # carried (.gpu-plugins), else from this repository's history
    if [[ -d .gpu-plugins/$label/alm_plugin ]]; then plugins+=("$label=.gpu-plugins/$label/alm_plugin")
    elif git rev-parse -q --verify "${TIMING_PLUGINS[$label]}^{commit}" > /dev/null 2>&1; then
      plugins+=("$label=${TIMING_PLUGINS[$label]}")
    else say "timing: no .gpu-plugins/$label (run.sh --prepare here, and carry .gpu-plugins): $label left out"; fi
  done
  local timing=(-m benchmarks.host_overhead --data "$data" "${dev[@]}") lines='/^[a-z0-9-]+ +sentence/p'
  (( DRY )) || plugins=(after=alm_plugin after-graphs=alm_plugin "${plugins[@]}")  # --cuda-graphs: a GPU's alone
  measured "$end" timing_levers "$json" "$lines" $PY "${timing[@]}" "${plugins[@]}" after=alm_plugin \
    --num-workers 1 || rc=1
  for w in 0 2; do  # a process of three cases: ~35 s on an H100, two a label (a timed run, the pieces' run)
    measured "$end" timing_workers-$w "$json" "$lines" $PY "${timing[@]}" after-workers-$w=alm_plugin \
      --num-workers $w || rc=1
  done
  return $rc
}

# ---- paper: the rows of --corpus ptb-paper, resumable across commands ----------------------------
# Two training processes on one GPU time-slice it (H100: 21 / 26 s an epoch side by side against
# ~18 alone): under CUDA's MPS they share one context and their kernels interleave. Tried once, on
# the condition that a CUDA probe passes under it; PAPER_MPS=0 leaves it off.
start_mps() {
  [[ ${PAPER_MPS:-1} == 1 ]] || return 0
  command -v nvidia-cuda-mps-control > /dev/null \
    || { say "paper: no nvidia-cuda-mps-control: the rows time-slice the GPU"; return 0; }
  export CUDA_MPS_PIPE_DIRECTORY=$WORK/mps/pipe CUDA_MPS_LOG_DIRECTORY=$WORK/mps/log
  if [[ -f $WORK/mps/off ]]; then unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY; return 0; fi
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  pgrep -f nvidia-cuda-mps-control > /dev/null \
    || setsid nvidia-cuda-mps-control -d >> "$LOGS/mps.log" 2>&1 {RUN_STDERR}>&-
  if fg timeout 60 $PY -c "import torch; assert torch.ones(2, device='cuda').sum().item() == 2" \
       >> "$LOGS/mps.log" 2>&1; then
    say "paper: CUDA MPS on (the rows share the GPU's context)"
  else
    echo quit | nvidia-cuda-mps-control > /dev/null 2>&1; touch "$WORK/mps/off"
    unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
    say "paper: CUDA MPS failed its probe ($(tail -1 "$LOGS/mps.log")): off, the rows time-slice the GPU"
  fi
}

# Each row is one detached benchmarks/table.py process (training, then its scoring); its pid file
# says whether it still runs; its JSON, that it is done.
step_paper() {
  local limit=$1 end=$(( $(date +%s) + $1 - 10 )) corpus=ptb-paper dev=(--device cuda --jobs 8 --threads 2)
  local score_s=${PAPER_SCORE_S:-150} rc=0 row pid
  if (( DRY )); then corpus=ptb-paper-dry; dev=(--device cpu --jobs 2 --threads 1); score_s=${PAPER_SCORE_S:-60}
  else ptb_data
       [[ $DATA == data-bin/ptb ]] || { say "paper: no PTB (carry .gpu-data: run.sh --prepare here)"; return 1; }
       start_mps; fi
  # the rows' JSON live beside their checkpoints, outside the working tree: a device call copies the
  # tree afresh before each command and removes what it did not copy (a row finished in the first
  # command was taken for "stopped without its JSON" by the second); each is copied to $RESULTS below
  local save=$WORK/paper out=$WORK/paper/results/$corpus table=(-m benchmarks.table --corpus "$corpus")
  mkdir -p "$save" "$out"
  running() {  # its process is alive (an init that does not reap would leave a zombie: state Z)
    local pid; pid=$(count_in "$save/$1.pid" 0) && (( pid > 1 )) && kill -0 "$pid" 2>/dev/null \
      && [[ $(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null) != Z ]]
  }
  launch() {  # ROW [--cut]: a process of its own session, so it outlives this command
    setsid nohup env ALM_COMMIT="${ALM_COMMIT:-}" $PY "${table[@]}" --rows "$1" "${dev[@]}" --save-dir "$save" \
      --results-dir "$out" "${@:2}" >> "$LOGS/paper_$1.log" 2>&1 < /dev/null {RUN_STDERR}>&- &
    echo $! > "$save/$1.pid"
  }
  for row in "${PAPER_ROWS[@]}"; do
    local restarts; restarts=$(count_in "$save/$row.restarts" 0)  # not a count: as none
    if [[ -f $out/$row.json ]]; then say "paper: $row done already"
    elif running "$row"; then say "paper: $row still running (started by an earlier command)"
    elif [[ -f $save/$row.pid ]] && (( restarts < 2 )); then  # ended by a fault or a kill: started again, resuming
      pid=$(count_in "$save/$row.pid" 0); (( pid > 1 )) && kill -- "-$pid" 2>/dev/null  # its children too
      echo $(( restarts + 1 )) > "$save/$row.restarts"
      say "paper: $row had stopped without its JSON ($(tail -1 "$LOGS/paper_$row.log" 2>/dev/null)): started again"
      launch "$row" $([[ -f $save/$row.cut ]] && echo --cut)
    elif [[ -f $save/$row.pid ]]; then
      say "paper: $row stopped without its JSON again (restarted twice): $(tail -1 "$LOGS/paper_$row.log")"; rc=1
    else launch "$row"; say "paper: $row started (log $LOGS/paper_$row.log)"; fi
  done
  progress() {  # a line a row ("ROW: epoch E/N, about S s of training left; ..."), kept for where_is
    $PY "${table[@]}" --rows "$(IFS=,; echo "${PAPER_ROWS[*]}")" --save-dir "$save" --results-dir "$out" \
      --progress "$RESULTS/paper_progress.json" 2>&1 | tail -n "${#PAPER_ROWS[@]}" | tee "$WORK/paper_progress.txt"; }
  where_is() { sed -n "s/^$1: \([^;]*\).*/\1/p" "$WORK/paper_progress.txt" 2>/dev/null; }  # ROW: its progress
  local waiting=("${PAPER_ROWS[@]}") last_report=-999  # the first pass writes this command's progress
  local sampler=""  # the GPU's utilization once a second, for the step's record
  if (( ! DRY )); then
    nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits -l 1 > "$WORK/gpu_busy.txt" 2>/dev/null &
    sampler=$!; FG_PIDS[$sampler]=1
  fi
  while (( ${#waiting[@]} )) && (( $(left_of "$end") > 0 )); do
    local still=(); for row in "${waiting[@]}"; do running "$row" && still+=("$row"); done
    waiting=("${still[@]}")
    (( ${#waiting[@]} )) || break
    if (( $(now) - last_report >= (CUT ? 15 : 60) )); then
      progress >> "$LOGS/paper_progress.log"; last_report=$(now)
    fi
    if (( CUT )); then  # the last command: stop a row whose training and scoring would outrun the budget,
      # while its scoring still fits (a row already scoring, or one with no time an epoch yet, is left alone)
      for row in "${waiting[@]}"; do
        [[ -f $save/$row.cut ]] && continue
        local left_s; left_s=$(where_is "$row" | sed -n 's/.*about \([0-9]*\) s of training left/\1/p')
        [[ $left_s =~ ^[0-9]{1,9}$ ]] || continue
        if (( left_s + score_s > $(left_of "$end") && score_s <= $(left_of "$end") )) \
           && [[ -f $save/$row/checkpoint_best.pt ]]; then
          say "paper: $row cut (about $left_s s of training left, $(left_of "$end") s of budget):" \
              "its epochs so far scored"
          pid=$(count_in "$save/$row.pid" 0); (( pid > 1 )) && kill -- "-$pid" 2>/dev/null
          sleep 2; touch "$save/$row.cut"; launch "$row" --cut
        fi
      done
    fi
    fg sleep 5
  done
  progress | tee -a "$SUMMARY"
  [[ -n $sampler ]] && { kill "$sampler" 2>/dev/null; forget "$sampler"; }
  for row in "${PAPER_ROWS[@]}"; do  # its JSON to come back first; into logs.tgz: its training log and grid records
    if [[ -f $out/$row.json && -f $RESULTS/$row.json ]] && ! cmp -s "$out/$row.json" "$RESULTS/$row.json"; then
      say "paper: $RESULTS/$row.json is another run's: kept; this run's is $out/$row.json"; rc=1
    elif [[ -f $out/$row.json ]]; then cp "$out/$row.json" "$RESULTS/$row.json"; PRODUCED+=("$RESULTS/$row.json"); fi
    cp "$save/$row/train.log" "$LOGS/paper_${row}_train.log" 2>/dev/null
    for f in "$save/$row"/cache_grid_*.json; do [[ -f $f ]] && cp "$f" "$LOGS/paper_${row}_$(basename "$f")"; done
  done
  $PY -m benchmarks.gpu.paper_record --progress "$RESULTS/paper_progress.json" --busy "$WORK/gpu_busy.txt" \
    --rows "$(IFS=,; echo "${PAPER_ROWS[*]}")" --json "$RESULTS/paper_step.json" > /dev/null \
    && PRODUCED+=("$RESULTS/paper_step.json")
  PRODUCED+=("$RESULTS/paper_progress.json")
  local left=() line
  for row in "${PAPER_ROWS[@]}"; do
    [[ -f $out/$row.json ]] && continue
    if running "$row"; then line=$(where_is "$row"); left+=("$row ${line:-starting}")
    else say "paper: $row stopped without its JSON: $(tail -1 "$LOGS/paper_$row.log")"; rc=1; fi
  done
  if (( ${#left[@]} )); then
    say "still running: $(IFS=';'; echo "${left[*]}" | sed 's/;/; /g'): run the same command again"
    (( rc == 0 )) && rc=3
  fi
  return $rc
}

# ---- the run ------------------------------------------------------------------------------------
status=0
if (( PREPARE )); then prepare || status=1; fi
(( ${#STEPS[@]} )) || exit $status
if [[ -z $WORK ]]; then
  kind=$( (( DRY )) && echo dry || echo run)
  mkdir -p "$STATE" && chmod go-w "$STATE" && WORK=$(mktemp -d "${TMPDIR:-/tmp}/alm_gpu_$kind.XXXXXX") \
    && echo "$WORK" > "$RECORD.new" && mv -f "$RECORD.new" "$RECORD" \
    || { echo "run.sh: no work folder could be made (mktemp -d in ${TMPDIR:-/tmp}, its record in $STATE)" >&2
         exit 2; }
fi
RESULTS=${RESULTS:-$WORK/results}
LOGS=$WORK/logs
mkdir -p -m 700 "$WORK" && mkdir -p "$RESULTS" "$LOGS" \
  || { echo "run.sh: $WORK or $RESULTS could not be made: give folders you can write to" >&2; exit 2; }
RESULTS=$(cd "$RESULTS" && pwd) && WORK=$(cd "$WORK" && pwd) || exit 2
LOGS=$WORK/logs; SITE=$WORK/site
[[ -f $SITE/.alm_fallback ]] && use_site  # an earlier call on this machine installed there
SUMMARY=$RESULTS/summary.txt
: > "$SUMMARY" \
  || { echo "run.sh: $SUMMARY cannot be written: give ALM_GPU_RESULTS a folder you can write to" >&2; exit 2; }
say "run.sh$( (( DRY )) && echo ' --dry-run') ${STEPS[*]}: budget $TOTAL s; results in $RESULTS, logs in $LOGS"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | tee -a "$SUMMARY"
[[ " ${STEPS[*]} " == *" install "* ]] \
  || $PY -c "import numpy, torch; print('torch', torch.__version__, 'numpy', numpy.__version__)" 2>&1 \
  | tail -1 | tee -a "$SUMMARY"
NEED_PTB=0
[[ " ${STEPS[*]} " == *" speed "* || " ${STEPS[*]} " == *" fairseq-speed "* ]] && NEED_PTB=1
(( DRY )) || [[ " ${STEPS[*]} " != *" timing "* ]] || NEED_PTB=1
(( DRY )) || [[ " ${STEPS[*]} " != *" paper "* ]] || NEED_PTB=1
# PTB is binarised in the background (fairseq-preprocess) while the tests and checks run
(( NEED_PTB )) && [[ " ${STEPS[*]} " != *" install "* ]] && start_ptb
TIMES=()
for step in "${STEPS[@]}"; do
  limit=$(step_limit "$step")
  if (( limit < 10 )); then
    say "=== $step: not run (GPU_RUN_BUDGET $TOTAL s spent)"; status=1; TIMES+=("$step -"); continue
  fi
  say "=== $step (budget $limit s)"
  t=$(date +%s)
  "step_$step" "$limit"; rc=$?
  secs=$(( $(date +%s) - t ))
  (( rc == 124 )) && say "$step: cut by its timeout"
  say "--- $step: rc=$rc in $secs s"
  TIMES+=("$step ${secs}s rc=$rc")
  if (( rc == 3 )) && [[ $step == paper ]]; then (( status )) || status=3  # rows still training: run again
  elif (( rc )); then status=1; fi
  [[ $step == install ]] && (( NEED_PTB )) && start_ptb
done
[[ -n $PREP_PID ]] && wait "$PREP_PID"
say "steps: ${TIMES[*]}; total $(now) s; $(case $status in 0) echo all passed ;;
  3) echo "rows still running: run the same command again" ;; *) echo FAILED ;; esac)"
exit $status
