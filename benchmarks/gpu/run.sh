#!/usr/bin/env bash
# The GPU checks and figures (issues 16, 46) as ONE prepared command for a lent GPU machine (an
# H100/H200 with 16 cores, Python 3.12, torch 2.11+cu130, numpy 2, no package index): install,
# tests, cli and speed fit in 9 minutes (a command may take 10); paper is a command of its own.
#
# 1. Here, once (needs the package index and ../shared/data/ptb):
#      bash benchmarks/gpu/run.sh --prepare
#    makes .whl/ (scripts/make_wheelhouse.sh --python-version 3.12 --dest .whl --have "$(cat
#    benchmarks/gpu/image_has.txt)": what the image lacks, ~22 MB; fairseq-fixed's cp312 wheel then
#    slimmed by benchmarks/gpu/slim_wheel.py to what the plugin imports, 20 -> 2.2 MB) and
#    .gpu-data/ptb/ (the raw PTB, 5.7 MB, copied from ../shared/data/ptb) and .gpu-plugins/ (the older
#    plugins the timing step measures, git archive, ~1 MB); all git-ignored, ~11 MB.
# 2. On the GPU machine, the device tool's `run` with carry [".whl", ".gpu-data", ".gpu-plugins"], timeout_s 600:
#      bash benchmarks/gpu/run.sh install tests cli speed
# 3. Here, without a GPU: the same steps with tiny budgets, both sides of each comparison --cpu,
#    the results under $TMPDIR/alm_gpu_dry/ (not benchmarks/results/gpu/):
#      bash benchmarks/gpu/run.sh --dry-run cli          # ~4 min on 2 busy cores; any steps
#
# Steps (run in this order whatever order they are given; each has a budget in seconds, a
# timeout, BUDGET_<STEP> overrides it; all of them end by GPU_RUN_BUDGET, 560 s, paper's 570 s):
# install  (60)  scripts/install.sh --wheelhouse .whl (the image's numpy 2 kept; fairseq-fixed's
#                binary wheel); if that fails, pip --target $ALM_GPU_WORK/site (as ../shared/gpu/
#                check.sh did) and PYTHONPATH / PATH pointed there. Then, in the background, raw
#                PTB -> data-bin/ptb (examples/language_model/prepare_lm_data.py) for speed.
#                Dry run: checks .whl covers scripts/requirements.txt beside image_has.txt.
# tests    (100) pytest -m cuda (causality, incremental == full, eval-lm == hand computation on
#                the GPU) beside the model tests on the CPU (-m "not cuda": test_history_models,
#                test_char_models, test_translation_models), in parallel.
# cli      (240) benchmarks/gpu/cli_check.py: every word arch trained an epoch on the GPU on
#                data-bin/wikitext-2-sample, every test-time option (plain, neural cache, dynamic
#                evaluation, both, alm-score, alm-cache-grid) on valid on the GPU and with --cpu:
#                GPU figure == CPU figure (dynamic evaluation within 0.1%); --fp16 and --amp train
#                attentive_lm_small; --bf16 is refused in one line. cli.json; a mismatch fails.
# speed    (130) benchmarks.train_speed --mode model (the training step against a bare cuDNN
#                nn.LSTM LM) at batch 32 and 128 x 35, fp32 / bf16 / fp16 autocast, on PTB;
#                benchmarks.stream_speed --kinds eval --device cuda (eval tokens/s: static, cache, dynamic
#                evaluation); benchmarks/gpu/step_profile.py (aten calls and kernels of one step).
# char     (300, not in the 8 minutes) char_cache_lm against hclm at the paper's 600-d.
# paper [ROW...] (565, a command of its own) the Attentive LM paper's Table 1 at 2 x 650 (rows lstm,
#                single, combined, single-zero-context of --corpus ptb-paper in benchmarks/rows.py;
#                default lstm single):
#                installs if needed, binarises PTB, starts each row detached (setsid: it trains on
#                between commands while the machine is held) as benchmarks.table --device cuda,
#                which scores a row the moment it has trained, 8 scoring commands at once, and writes
#                its JSON; then waits within the budget. Rows not done: one line each (epoch, the
#                training left), exit status 3: run the SAME command again at once (the machine
#                stays warm 30 s), with GPU_RUN_BUDGET set to the device time that is left; the next
#                command finds the running rows and waits. --cut (the session's last command): a row
#                still training that could not finish training and scoring (PAPER_SCORE_S, 150 s) in
#                the budget is stopped and its epochs so far scored (its JSON gives cut_at_epoch).
#                Measured on an H100 (issue 56, MPS on): lstm + single side by side 23 / 27 s an
#                epoch with validation, install + PTB 55 s, scoring a row ~95 s (8 commands at once):
#                two rows in two commands (559 s + 214 s, the machine held 813 s in all); one row
#                alone (~18 s an epoch) fits one command.
#                Returned: the rows' JSON (commit them to benchmarks/results/ptb-paper/) and
#                paper_progress.json (each row's valid curve so far). Dry run: 2 x 32 rows on the
#                shipped sample, 2 epochs, on the CPU.
# fairseq-speed (300, not in the 8 minutes) train_speed.py --mode fairseq against lstm_lm, fp32 / fp16.
# timing   (200, not in the 8 minutes) a fairseq-train update at the paper's batch, 2 x 650, lstm / single /
#                combined (benchmarks.host_overhead --device cuda): median ms an update, tokens/s, the host's
#                share, the syncs (ours, fairseq's, and those torch.cuda.set_sync_debug_mode reports), with
#                the host levers off (before: b6545b6; no-syncs: adb44ed, the syncs out but not the mends) and
#                on (this tree), and --num-workers 0 / 1 / 2; update_timing.json. The older plugins come in
#                .gpu-plugins/ (run.sh --prepare; carry it too). Dry run: 2 x 16, single, on the sample.
#
# Results: benchmarks/results/gpu/ (summary.txt with each step's seconds, cli.json,
# train_speed_model_b32.json, train_speed_model_b128.json, stream_speed.json, step_profile.json,
# char_speed.json, train_speed_fairseq.json, update_timing.json); logs in $ALM_GPU_WORK/logs (default
# $TMPDIR/alm_gpu_run). Where $OUT is set (a device call), at most 8 files go there: summary.txt,
# logs.tgz (every log and result of the run) and up to 6 of the run's JSONs.
# SIGTERM (a `timeout` around run.sh) or SIGINT (Ctrl-C) ends what it runs in the foreground (each
# step's processes, the PTB binarisation) and exits 143 / 130; paper's rows, started detached, train on.
# Options: --dry-run, --prepare, --cut (paper only), -h / --help. Exit status: 0 when every step passed,
# 1 when one failed (the later steps still run and their files come back), 2 for a bad argument
# (also tests, cli, speed, char, fairseq-speed or timing without --dry-run on a machine with no GPU: refused
# in one line before anything runs),
# 3 when paper's rows still run (and nothing failed): run the same command again.
set -uo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python3}
STEPS_KNOWN=(install tests cli speed char fairseq-speed timing paper)
PAPER_ROWS_KNOWN=(lstm single combined single-zero-context)
# the timing step's plugins with the host levers off: before the syncs were taken out, and before the mends
declare -A TIMING_PLUGINS=([before]=b6545b6 [no-syncs]=adb44ed)
DRY=0; PREPARE=0; CUT=0; WANT=(); PAPER_ROWS=()
for arg in "$@"; do
  case $arg in
    --dry-run) DRY=1 ;;
    --prepare) PREPARE=1 ;;
    --cut) CUT=1 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    -*) echo "run.sh: unknown option $arg (--dry-run, --prepare, --cut, --help)" >&2; exit 2 ;;
    *) if [[ " ${STEPS_KNOWN[*]} " == *" $arg "* ]]; then WANT+=("$arg")
       elif [[ " ${WANT[*]:-} " == *" paper "* && " ${PAPER_ROWS_KNOWN[*]} " == *" $arg "* ]]; then PAPER_ROWS+=("$arg")
       else echo "run.sh: unknown step $arg: ${STEPS_KNOWN[*]} (paper's rows: ${PAPER_ROWS_KNOWN[*]})" >&2; exit 2; fi ;;
  esac
done
(( ${#PAPER_ROWS[@]} )) || PAPER_ROWS=(lstm single)
if (( CUT )) && [[ " ${WANT[*]:-} " != *" paper "* ]]; then
  echo "run.sh: --cut stops paper's rows that cannot finish in the budget: it applies to the paper step only (add paper, or drop --cut)" >&2
  exit 2
fi
if (( ${#WANT[@]} == 0 && PREPARE == 0 )); then
  echo "usage: bash benchmarks/gpu/run.sh [--dry-run] [--prepare] STEP... (${STEPS_KNOWN[*]}; see --help)" >&2
  exit 2
fi
# paper's first command on a fresh machine installs first
if [[ " ${WANT[*]:-} " == *" paper "* && " ${WANT[*]} " != *" install "* ]] && (( ! DRY )) \
   && ! $PY -c "import fairseq, alm_plugin" 2>/dev/null && [[ ! -f ${ALM_GPU_WORK:-${TMPDIR:-/tmp}/alm_gpu_run}/site/.alm_fallback ]]; then
  WANT+=(install)
fi
STEPS=()  # the canonical order
for s in "${STEPS_KNOWN[@]}"; do [[ " ${WANT[*]:-} " == *" $s "* ]] && STEPS+=("$s"); done
# the steps that run on CUDA: on a machine without a GPU, say so now, before anything runs or is written
# (each would fail in its log, the reason out of sight); --dry-run runs them on the CPU
if (( ! DRY )); then
  ON_GPU=()
  for s in tests cli speed char fairseq-speed timing; do [[ " ${STEPS[*]:-} " == *" $s "* ]] && ON_GPU+=("$s"); done
  if (( ${#ON_GPU[@]} )) && ! nvidia-smi -L 2>/dev/null | grep -q '^GPU' \
     && ! $PY -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
    echo "run.sh: ${ON_GPU[*]} run on a GPU and this machine has none (nvidia-smi lists no GPU, torch sees no CUDA):" \
         "run them on the lent GPU machine, or here with --dry-run (bash benchmarks/gpu/run.sh --dry-run ${ON_GPU[*]})" >&2
    exit 2
  fi
fi

T0=$(date +%s)
now() { echo $(( $(date +%s) - T0 )); }
if (( DRY )); then
  RESULTS=${ALM_GPU_RESULTS:-${TMPDIR:-/tmp}/alm_gpu_dry/results}
  WORK=${ALM_GPU_WORK:-${TMPDIR:-/tmp}/alm_gpu_dry/work}
  declare -A BUDGET=([install]=30 [tests]=200 [cli]=330 [speed]=300 [char]=300 [fairseq-speed]=300 [timing]=240 [paper]=280)
  TOTAL=${GPU_RUN_BUDGET:-900}
else
  RESULTS=${ALM_GPU_RESULTS:-benchmarks/results/gpu}
  WORK=${ALM_GPU_WORK:-${TMPDIR:-/tmp}/alm_gpu_run}
  declare -A BUDGET=([install]=60 [tests]=100 [cli]=240 [speed]=130 [char]=300 [fairseq-speed]=300 [timing]=200 [paper]=565)
  # paper is a command of its own (a device command may take 600 s)
  [[ " ${WANT[*]:-} " == *" paper "* ]] && TOTAL=${GPU_RUN_BUDGET:-570} || TOTAL=${GPU_RUN_BUDGET:-560}
fi
for s in "${STEPS_KNOWN[@]}"; do
  var=BUDGET_$(echo "$s" | tr 'a-z-' 'A-Z_'); [[ -n ${!var:-} ]] && BUDGET[$s]=${!var}
done
SUMMARY=/dev/null   # until a step runs (--prepare alone writes no results)
SITE=$WORK/site
PRODUCED=()   # this run's result files, for $OUT
export PYTHONUNBUFFERED=1
say() { echo "[$(now)s] $*" | tee -a "$SUMMARY"; }

finish() {
  [[ -d $LOGS ]] || return 0
  tar -czf "$WORK/logs.tgz" -C "$WORK" logs -C "$RESULTS" . 2>/dev/null
  if [[ -n ${OUT:-} ]]; then
    cp "$SUMMARY" "$WORK/logs.tgz" "$OUT"/ 2>/dev/null
    local n=0 f
    for f in "${PRODUCED[@]:-}"; do
      [[ -f $f ]] && (( n < 6 )) && cp "$f" "$OUT"/ && n=$((n + 1))
    done
  fi
}
LOGS=""
trap finish EXIT

# What this run waits on (each step's timeout, pytest, cli_check.py and the fairseq processes under
# them; the PTB binarisation) ends with it: on SIGTERM (as `timeout` sends) or SIGINT, each is sent
# SIGTERM (a coreutils timeout passes it on to its command's process group). Bash runs a trap only
# between commands, so these run in the background and are waited on (`fg`): a wait is cut by the
# signal. paper's rows, started detached (setsid), are not among them: they train on, as designed.
FG_PIDS=()
forget() {  # PID: waited for, no longer this run's to end
  local kept=() p
  for p in "${FG_PIDS[@]:-}"; do [[ -n $p && $p != "$1" ]] && kept+=("$p"); done
  FG_PIDS=()
  (( ${#kept[@]} )) && FG_PIDS=("${kept[@]}")
  return 0
}
fg() {  # COMMAND...: run it as a foreground command would run, ended with this run
  "$@" &
  local pid=$! rc
  FG_PIDS+=("$pid")
  wait "$pid"; rc=$?
  forget "$pid"
  return $rc
}
stop() {  # SIGNAL
  trap - TERM INT
  local pid
  for pid in "${FG_PIDS[@]:-}" ${PREP_PID:-}; do [[ -n $pid ]] && kill -TERM "$pid" 2>/dev/null; done
  for pid in "${FG_PIDS[@]:-}" ${PREP_PID:-}; do [[ -n $pid ]] && wait "$pid" 2>/dev/null; done  # not the rows
  echo "run.sh: stopped by SIG$1: the processes it ran ended (paper's detached rows, if any, still train)" >&"$RUN_STDERR"
  [[ $1 == INT ]] && exit 130 || exit 143
}
# run.sh's own stderr (a trap runs inside the redirections of the step it cuts); closed for what is
# started detached, which would otherwise hold run.sh's stderr open after it ends
exec {RUN_STDERR}>&2
trap 'stop TERM' TERM
trap 'stop INT' INT

# a step's timeout: its budget, cut to what is left of GPU_RUN_BUDGET
step_limit() { local left=$(( TOTAL - $(now) - 5 )); (( left < ${BUDGET[$1]} )) && echo "$left" || echo "${BUDGET[$1]}"; }
left_of() { echo $(( $1 - $(date +%s) )); }   # seconds to an epoch deadline

# ---- --prepare: what the GPU machine needs carried (here, with the package index) ----------------
prepare() {
  local shared=${SHARED_DATA:-../shared/data}
  if [[ ! -s .gpu-data/ptb/train.txt ]]; then
    [[ -s $shared/ptb/train.txt ]] || { say "prepare: no $shared/ptb/train.txt (set SHARED_DATA)"; return 1; }
    mkdir -p .gpu-data/ptb && cp "$shared"/ptb/{train,valid,test}.txt .gpu-data/ptb/ || return 1
  fi
  if ! compgen -G ".whl/fairseq[-_]fixed-*" > /dev/null; then
    bash scripts/make_wheelhouse.sh --python-version 3.12 --dest .whl --have "$(cat benchmarks/gpu/image_has.txt)" || return 1
  fi
  local label
  for label in "${!TIMING_PLUGINS[@]}"; do  # the older plugins that the timing step measures
    [[ -d .gpu-plugins/$label/alm_plugin ]] && continue
    mkdir -p ".gpu-plugins/$label" && git archive "${TIMING_PLUGINS[$label]}" alm_plugin | tar -x -C ".gpu-plugins/$label" || return 1
  done
  local w
  for w in .whl/fairseq_fixed-*-cp3*.whl; do [[ -f $w ]] && { $PY -m benchmarks.gpu.slim_wheel "$w" || return 1; }; done
  local kb; kb=$(du -sk .whl .gpu-data .gpu-plugins | awk '{ s += $1 } END { print s }')
  say "prepare: .whl $(du -sh .whl | cut -f1), .gpu-data $(du -sh .gpu-data | cut -f1), .gpu-plugins $(du -sh .gpu-plugins | cut -f1): $(( kb / 1024 )) MiB to carry (limit 64)"
  (( kb < 48 * 1024 )) || { say "prepare: over 48 MiB: too close to the 64 MiB carry limit"; return 1; }
  say "prepare: carry [\".whl\", \".gpu-data\", \".gpu-plugins\"] and run: bash benchmarks/gpu/run.sh install tests cli speed"
}

# ---- PTB for the speed steps: raw text carried in .gpu-data/ptb, binarised here ------------------
PREP_PID=""
start_ptb() {
  [[ -s data-bin/ptb/dict.txt || -n $PREP_PID ]] && return 0
  local raw=""
  if [[ -s .gpu-data/ptb/train.txt ]]; then raw=.gpu-data; elif [[ -s ../shared/data/ptb/train.txt ]]; then raw=../shared/data; fi
  [[ -n $raw ]] || { say "PTB: neither .gpu-data/ptb nor ../shared/data/ptb: speed falls back to the sample"; return 0; }
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
[[ -f $SITE/.alm_fallback ]] && use_site   # an earlier call on this machine installed there

step_install() {
  local limit=$1
  if (( DRY )); then  # here nothing is installed: is the wheelhouse complete for the image?
    compgen -G ".whl/fairseq[-_]fixed-*" > /dev/null || { say "no .whl/fairseq-fixed: run: bash benchmarks/gpu/run.sh --prepare"; return 1; }
    $PY - <<'EOF' 2>&1 | tee -a "$SUMMARY"
import os, re
norm = lambda n: re.sub(r"[-_.]+", "-", n).lower()
files = os.listdir(".whl")
have = {norm(re.match(r"(.+?)-\d", f).group(1)) for f in files if re.match(r"(.+?)-\d", f)}
image = {norm(n) for n in open("benchmarks/gpu/image_has.txt").read().strip().split(",")}
wanted = [re.split(r"[<>=!; ]", l.strip())[0] for l in open("scripts/requirements.txt") if l.strip() and not l.startswith("#")]
wanted += ["fairseq-fixed", "antlr4-python3-runtime"]
missing = [w for w in wanted if norm(w) not in have | image]
size = sum(os.path.getsize(os.path.join(".whl", f)) for f in files) / 2**20
print(f"install (dry run): .whl has {len(files)} files, {size:.1f} MiB; would run: bash scripts/install.sh --wheelhouse .whl;"
      + (f" MISSING from .whl and the image: {', '.join(missing)}" if missing else " every requirement is in .whl or the image"))
raise SystemExit(1 if missing else 0)
EOF
    return "${PIPESTATUS[0]}"
  fi
  if fg timeout "$limit" bash scripts/install.sh --wheelhouse .whl > "$LOGS/install.log" 2>&1; then
    say "install.sh: $(tail -1 "$LOGS/install.log")"
  else
    say "install.sh failed ($(grep -iE 'error' "$LOGS/install.log" | tail -1)): pip --target $SITE instead"
    mkdir -p "$SITE"
    fg timeout $(( limit > 40 ? limit : 40 )) $PY -m pip install -q --no-index --no-deps --no-build-isolation --no-compile --target "$SITE" \
      .whl/*.whl .whl/*.tar.gz . >> "$LOGS/install.log" 2>&1 || { say "pip --target failed: $(tail -2 "$LOGS/install.log")"; return 1; }
    touch "$SITE/.alm_fallback"
    use_site
  fi
  $PY -c "import torch, numpy, fairseq, alm_plugin; print('torch', torch.__version__, 'numpy', numpy.__version__,
    'fairseq', fairseq.__version__, 'cuda', torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else '')" \
    2>&1 | tail -1 | tee -a "$SUMMARY"
  return "${PIPESTATUS[0]}"
}

# ---- tests --------------------------------------------------------------------------------------
step_tests() {
  local limit=$1 rc=0 cuda_pid="" models_pid
  if (( DRY )); then
    say "tests (dry run): pytest -m cuda left out (no GPU here)"
  else
    timeout "$limit" $PY -m pytest -q -p no:cacheprovider -m cuda tests > "$LOGS/pytest_cuda.log" 2>&1 &
    cuda_pid=$!; FG_PIDS+=("$cuda_pid")
  fi
  OMP_NUM_THREADS=4 timeout "$limit" $PY -m pytest -q -p no:cacheprovider -m "not cuda" tests/test_history_models.py \
    tests/test_char_models.py tests/test_translation_models.py > "$LOGS/pytest_models.log" 2>&1 &
  models_pid=$!; FG_PIDS+=("$models_pid")
  if [[ -n $cuda_pid ]]; then
    wait "$cuda_pid"; local c=$?; forget "$cuda_pid"
    say "pytest -m cuda: rc=$c $(tail -1 "$LOGS/pytest_cuda.log")"; (( c == 0 )) || rc=1
  fi
  wait "$models_pid"; local m=$?; forget "$models_pid"
  say "pytest model tests (CPU): rc=$m $(tail -1 "$LOGS/pytest_models.log")"; (( m == 0 )) || rc=1
  return $rc
}

# ---- cli ----------------------------------------------------------------------------------------
step_cli() {
  local limit=$1 flags=()
  (( DRY )) && flags+=(--dry-run)
  fg timeout "$limit" $PY -m benchmarks.gpu.cli_check "${flags[@]}" --budget $(( limit - 20 )) --work "$WORK/cli" \
    --json "$RESULTS/cli.json" > "$LOGS/cli_check.log" 2>&1
  local rc=$?
  PRODUCED+=("$RESULTS/cli.json")
  sed -n '/^arch /,$p' "$LOGS/cli_check.log" | tee -a "$SUMMARY"
  cp -r "$WORK/cli/logs" "$LOGS/cli" 2>/dev/null
  return $rc
}

# ---- speed --------------------------------------------------------------------------------------
step_speed() {
  local limit=$1 end=$(( $(date +%s) + limit )) rc=0 data
  ptb_data; data=$DATA
  say "speed on $data"
  local dev=(--device cuda) ts=(--updates 60 --repeats 2 --precision fp32,bf16,fp16) big=(--updates 30)
  local prof=(--device cuda) dyn=(--device cuda --threads 1 --repeats 2)
  if (( DRY )); then
    dev=(--device cpu --size 64 --threads 2); ts=(--updates 3 --repeats 1); big=(--updates 3)
    prof=(--device cpu --size 32 --batch-sizes 4); dyn=(--device cpu --threads 1 --eval-batches 20 --repeats 1)
  fi
  run_speed() {  # NAME JSON COMMAND...: within what is left of the step
    local name=$1 json=$2; shift 2
    local left; left=$(left_of "$end")
    (( left > 5 )) || { say "$name: not run (the step's budget is spent)"; return 1; }
    fg timeout "$left" "$@" --json "$json" > "$LOGS/$name.log" 2>&1
    local r=$?
    [[ -f $json ]] && PRODUCED+=("$json")
    say "$name: rc=$r"
    grep -E "^(model|bare|alm_lstm|attentive|amsrn|eval,|training step|eval tokens|operations)" "$LOGS/$name.log" | tee -a "$SUMMARY"
    return $r
  }
  run_speed train_speed_b32 "$RESULTS/train_speed_model_b32.json" $PY -m benchmarks.train_speed --mode model \
    --data "$data" "${dev[@]}" "${ts[@]}" --batch-size 32 || rc=1
  run_speed train_speed_b128 "$RESULTS/train_speed_model_b128.json" $PY -m benchmarks.train_speed --mode model \
    --data "$data" "${dev[@]}" "${ts[@]}" "${big[@]}" --batch-size 128 || rc=1
  run_speed stream_speed "$RESULTS/stream_speed.json" $PY -m benchmarks.stream_speed --kinds eval --data "$data" "${dyn[@]}" || rc=1
  run_speed step_profile "$RESULTS/step_profile.json" $PY -m benchmarks.gpu.step_profile "${prof[@]}" || rc=1
  return $rc
}

step_char() {
  local dev=(--device cuda --updates 100 --repeats 2)
  (( DRY )) && dev=(--device cpu --updates 2 --repeats 1)
  fg timeout "$1" $PY -m benchmarks.char_speed "${dev[@]}" --json "$RESULTS/char_speed.json" > "$LOGS/char_speed.log" 2>&1
  local r=$?; PRODUCED+=("$RESULTS/char_speed.json"); tail -8 "$LOGS/char_speed.log" | tee -a "$SUMMARY"; return $r
}

step_fairseq-speed() {
  local data dev=(--device cuda --updates 300 --precision fp32,fp16)
  ptb_data; data=$DATA
  (( DRY )) && dev=(--device cpu --updates 5 --size 64 --threads 2)
  fg timeout "$1" $PY -m benchmarks.train_speed --mode fairseq --data "$data" "${dev[@]}" --repeats 1 \
    --json "$RESULTS/train_speed_fairseq.json" > "$LOGS/train_speed_fairseq.log" 2>&1
  local r=$?; PRODUCED+=("$RESULTS/train_speed_fairseq.json"); tail -8 "$LOGS/train_speed_fairseq.log" | tee -a "$SUMMARY"; return $r
}

# ---- timing: a fairseq-train update, the host's levers off and on (issue 63) ----------------------
step_timing() {
  local end=$(( $(date +%s) + $1 )) data plugins=() rc=0 label
  ptb_data; data=$DATA
  (( DRY )) || [[ $DATA == data-bin/ptb ]] || { say "timing: no PTB (carry .gpu-data: run.sh --prepare here)"; return 1; }
  rm -f "$RESULTS/update_timing.json"  # this run's labels only (the script adds each call's to the file)
  local dev=(--device cuda --size 650 --updates 60 --repeats 1 --cases "sentence lstm,sentence single,sentence combined")
  (( DRY )) && { data=data-bin/wikitext-2-sample; dev=(--device cpu --size 16 --updates 10 --repeats 0 --cases "sentence single"); }
  for label in before no-syncs; do  # carried (.gpu-plugins), else from this repository's history
    if [[ -d .gpu-plugins/$label/alm_plugin ]]; then plugins+=("$label=.gpu-plugins/$label/alm_plugin")
    elif git rev-parse -q --verify "${TIMING_PLUGINS[$label]}^{commit}" > /dev/null 2>&1; then plugins+=("$label=${TIMING_PLUGINS[$label]}")
    else say "timing: no .gpu-plugins/$label (run.sh --prepare here, and carry .gpu-plugins): $label left out"; fi
  done
  timing() {  # NAME ARGS...: one benchmarks.host_overhead run, within what is left of the step
    local name=$1 left; shift; left=$(left_of "$end")
    (( left > 5 )) || { say "timing $name: not run (the step's budget is spent)"; return 1; }
    fg timeout "$left" $PY -m benchmarks.host_overhead "$@" --data "$data" "${dev[@]}" \
      --json "$RESULTS/update_timing.json" > "$LOGS/timing_$name.log" 2>&1
    local r=$?; say "timing $name: rc=$r"; grep -E "^[a-z0-9-]+ +sentence" "$LOGS/timing_$name.log" | tee -a "$SUMMARY"; return $r
  }
  timing levers "${plugins[@]}" after=alm_plugin --num-workers 1 || rc=1
  timing workers-0 after-workers-0=alm_plugin --num-workers 0 || rc=1
  timing workers-2 after-workers-2=alm_plugin --num-workers 2 || rc=1
  [[ -f $RESULTS/update_timing.json ]] && PRODUCED+=("$RESULTS/update_timing.json")
  return $rc
}

# ---- paper: the rows of --corpus ptb-paper, resumable across commands ----------------------------
# Two training processes on one GPU time-slice it (H100: 21 / 26 s an epoch side by side against
# ~18 alone): under CUDA's MPS they share one context and their kernels interleave. Tried once, on
# the condition that a CUDA probe passes under it; PAPER_MPS=0 leaves it off.
start_mps() {
  [[ ${PAPER_MPS:-1} == 1 ]] || return 0
  command -v nvidia-cuda-mps-control > /dev/null || { say "paper: no nvidia-cuda-mps-control: the rows time-slice the GPU"; return 0; }
  export CUDA_MPS_PIPE_DIRECTORY=$WORK/mps/pipe CUDA_MPS_LOG_DIRECTORY=$WORK/mps/log
  if [[ -f $WORK/mps/off ]]; then unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY; return 0; fi
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  pgrep -f nvidia-cuda-mps-control > /dev/null || setsid nvidia-cuda-mps-control -d >> "$LOGS/mps.log" 2>&1 {RUN_STDERR}>&-
  if fg timeout 60 $PY -c "import torch; assert torch.ones(2, device='cuda').sum().item() == 2" >> "$LOGS/mps.log" 2>&1; then
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
  else ptb_data; [[ $DATA == data-bin/ptb ]] || { say "paper: no PTB (carry .gpu-data: run.sh --prepare here)"; return 1; }
       start_mps; fi
  # the rows' JSON live beside their checkpoints, outside the working tree: a device call copies the
  # tree afresh before each command and removes what it did not copy (a row finished in the first
  # command was taken for "stopped without its JSON" by the second); each is copied to $RESULTS below
  local save=$WORK/paper out=$WORK/paper/results/$corpus table=(-m benchmarks.table --corpus "$corpus")
  mkdir -p "$save" "$out"
  running() {  # its process is alive (an init that does not reap would leave a zombie: state Z)
    local pid; pid=$(cat "$save/$1.pid" 2>/dev/null) && [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null \
      && [[ $(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null) != Z ]]
  }
  launch() {  # ROW [--cut]: a process of its own session, so it outlives this command
    setsid nohup env ALM_COMMIT="${ALM_COMMIT:-}" $PY "${table[@]}" --rows "$1" "${dev[@]}" --save-dir "$save" \
      --results-dir "$out" "${@:2}" >> "$LOGS/paper_$1.log" 2>&1 < /dev/null {RUN_STDERR}>&- &
    echo $! > "$save/$1.pid"
  }
  for row in "${PAPER_ROWS[@]}"; do
    if [[ -f $out/$row.json ]]; then say "paper: $row done already"
    elif running "$row"; then say "paper: $row still running (started by an earlier command)"
    elif [[ -f $save/$row.pid ]]; then say "paper: $row stopped without its JSON: $(tail -1 "$LOGS/paper_$row.log")"; rc=1
    else launch "$row"; say "paper: $row started (log $LOGS/paper_$row.log)"; fi
  done
  progress() { $PY "${table[@]}" --rows "$(IFS=,; echo "${PAPER_ROWS[*]}")" --save-dir "$save" --results-dir "$out" \
                 --progress "$RESULTS/paper_progress.json" 2>&1 | tail -n "${#PAPER_ROWS[@]}"; }
  local waiting=("${PAPER_ROWS[@]}") last_report=0
  while (( ${#waiting[@]} )) && (( $(left_of "$end") > 0 )); do
    local still=()
    for row in "${waiting[@]}"; do running "$row" && still+=("$row"); done
    waiting=("${still[@]}")
    (( ${#waiting[@]} )) || break
    if (( $(now) - last_report >= (CUT ? 15 : 60) )); then progress >> "$LOGS/paper_progress.log"; last_report=$(now); fi
    if (( CUT )); then  # the last command: stop a row whose training and scoring would outrun the budget,
      # while its scoring still fits (a row already scoring, or one with no time an epoch yet, is left alone)
      for row in "${waiting[@]}"; do
        [[ -f $save/$row.cut ]] && continue
        local left_s; left_s=$($PY -c "import json; p = json.load(open('$RESULTS/paper_progress.json'))['$row']
assert p['state'] == 'training'; print(int(p['training_seconds_left']))" 2>/dev/null) || continue
        if (( left_s + score_s > $(left_of "$end") && score_s <= $(left_of "$end") )) && [[ -f $save/$row/checkpoint_best.pt ]]; then
          say "paper: $row cut (about $left_s s of training left, $(left_of "$end") s of budget): its epochs so far scored"
          pid=$(cat "$save/$row.pid"); kill -- "-$pid" 2>/dev/null; sleep 2; touch "$save/$row.cut"; launch "$row" --cut
        fi
      done
    fi
    fg sleep 5
  done
  progress | tee -a "$SUMMARY"
  PRODUCED+=("$RESULTS/paper_progress.json")
  for row in "${PAPER_ROWS[@]}"; do  # into logs.tgz: each row's training log and grid records
    cp "$save/$row/train.log" "$LOGS/paper_${row}_train.log" 2>/dev/null
    for f in "$save/$row"/cache_grid_*.json; do [[ -f $f ]] && cp "$f" "$LOGS/paper_${row}_$(basename "$f")"; done
  done
  for row in "${PAPER_ROWS[@]}"; do
    if [[ -f $out/$row.json ]]; then cp "$out/$row.json" "$RESULTS/$row.json"; PRODUCED+=("$RESULTS/$row.json"); fi
  done
  local left=() line
  for row in "${PAPER_ROWS[@]}"; do
    [[ -f $out/$row.json ]] && continue
    if running "$row"; then
      line=$($PY -c "import json; p = json.load(open('$RESULTS/paper_progress.json'))['$row']
left = p['training_seconds_left']
print(('trained, scoring' if p['state'] == 'scoring' else f\"epoch {p['epochs_done']}/{p['epochs']}, \"
       + (f'about {left} s of training left' if left is not None else 'its time an epoch not known yet')))" 2>/dev/null)
      left+=("$row ${line:-starting}")
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
LOGS=$WORK/logs
mkdir -p "$RESULTS" "$LOGS"
RESULTS=$(cd "$RESULTS" && pwd); WORK=$(cd "$WORK" && pwd); LOGS=$WORK/logs; SITE=$WORK/site
SUMMARY=$RESULTS/summary.txt
: > "$SUMMARY"
say "run.sh$( (( DRY )) && echo ' --dry-run') ${STEPS[*]}: budget $TOTAL s; results in $RESULTS, logs in $LOGS"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | tee -a "$SUMMARY"
[[ " ${STEPS[*]} " == *" install "* ]] || $PY -c "import numpy, torch; print('torch', torch.__version__, 'numpy', numpy.__version__)" 2>&1 | tail -1 | tee -a "$SUMMARY"
NEED_PTB=0
[[ " ${STEPS[*]} " == *" speed "* || " ${STEPS[*]} " == *" fairseq-speed "* ]] && NEED_PTB=1
(( DRY )) || [[ " ${STEPS[*]} " != *" timing "* ]] || NEED_PTB=1
(( DRY )) || [[ " ${STEPS[*]} " != *" paper "* ]] || NEED_PTB=1
# PTB is binarised in the background (fairseq-preprocess) while the tests and checks run
(( NEED_PTB )) && [[ " ${STEPS[*]} " != *" install "* ]] && start_ptb
TIMES=()
for step in "${STEPS[@]}"; do
  limit=$(step_limit "$step")
  if (( limit < 10 )); then say "=== $step: not run (GPU_RUN_BUDGET $TOTAL s spent)"; status=1; TIMES+=("$step -"); continue; fi
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
say "steps: ${TIMES[*]}; total $(now) s; $(case $status in 0) echo all passed ;; 3) echo "rows still running: run the same command again" ;; *) echo FAILED ;; esac)"
exit $status
