#!/usr/bin/env bash
# The GPU checks and figures (issues 16, 46) as ONE prepared command for a lent GPU machine (an
# H100/H200 with 16 cores, Python 3.12, torch 2.11+cu130, numpy 2, no package index): install,
# tests, cli and speed fit in 8 minutes (a command may take 10).
#
# 1. Here, once (needs the package index and ../shared/data/ptb):
#      bash benchmarks/gpu/run.sh --prepare
#    makes .whl/ (scripts/make_wheelhouse.sh --python-version 3.12 --dest .whl --have "$(cat
#    benchmarks/gpu/image_has.txt)": what the image lacks, ~22 MB; fairseq-fixed's cp312 wheel then
#    slimmed by benchmarks/gpu/slim_wheel.py to what the plugin imports, 20 -> 2.2 MB) and
#    .gpu-data/ptb/ (the raw PTB, 5.7 MB, copied from ../shared/data/ptb); both git-ignored, ~10 MB.
# 2. On the GPU machine, the device tool's `run` with carry [".whl", ".gpu-data"], timeout_s 600:
#      bash benchmarks/gpu/run.sh install tests cli speed
# 3. Here, without a GPU: the same steps with tiny budgets, both sides of each comparison --cpu,
#    the results under $TMPDIR/alm_gpu_dry/ (not benchmarks/results/gpu/):
#      bash benchmarks/gpu/run.sh --dry-run cli          # ~4 min on 2 busy cores; any steps
#
# Steps (run in this order whatever order they are given; each has a budget in seconds, a
# timeout, BUDGET_<STEP> overrides it; all of them end by GPU_RUN_BUDGET, 470 s):
# install  (60)  scripts/install.sh --wheelhouse .whl (the image's numpy 2 kept; fairseq-fixed's
#                binary wheel); if that fails, pip --target $ALM_GPU_WORK/site (as ../shared/gpu/
#                check.sh did) and PYTHONPATH / PATH pointed there. Then, in the background, raw
#                PTB -> data-bin/ptb (examples/language_model/prepare_lm_data.py) for speed.
#                Dry run: checks .whl covers scripts/requirements.txt beside image_has.txt.
# tests    (100) pytest -m cuda (causality, incremental == full, eval-lm == hand computation on
#                the GPU) beside the model tests on the CPU (-m "not cuda": test_history_models,
#                test_char_models, test_translation_models), in parallel.
# cli      (180) benchmarks/gpu/cli_check.py: every word arch trained an epoch on the GPU on
#                data-bin/wikitext-2-sample, every test-time option (plain, neural cache, dynamic
#                evaluation, both, alm-score, alm-cache-grid) on valid on the GPU and with --cpu:
#                GPU figure == CPU figure (dynamic evaluation within 0.1%); --fp16 and --amp train
#                attentive_lm_small; --bf16 is refused in one line. cli.json; a mismatch fails.
# speed    (130) benchmarks/train_speed.py --mode model (the training step against a bare cuDNN
#                nn.LSTM LM) at batch 32 and 128 x 35, fp32 / bf16 / fp16 autocast, on PTB;
#                benchmarks/gpu/dynamic_speed.py (eval tokens/s: static, cache, dynamic
#                evaluation); benchmarks/gpu/step_profile.py (aten calls and kernels of one step).
# char     (300, not in the 8 minutes) char_cache_lm against hclm at the paper's 600-d.
# fairseq-speed (300, not in the 8 minutes) train_speed.py --mode fairseq against lstm_lm, fp32 / fp16.
#
# Results: benchmarks/results/gpu/ (summary.txt with each step's seconds, cli.json,
# train_speed_model_b32.json, train_speed_model_b128.json, dynamic_speed.json, step_profile.json,
# char_speed.json, train_speed_fairseq.json); logs in $ALM_GPU_WORK/logs (default
# $TMPDIR/alm_gpu_run). Where $OUT is set (a device call), at most 8 files go there: summary.txt,
# logs.tgz (every log and result of the run) and up to 6 of the run's JSONs.
# Options: --dry-run, --prepare, -h / --help. Exit status: 0 when every step passed, 1 when one
# failed (the later steps still run and their files come back), 2 for a bad argument.
set -uo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python3}
STEPS_KNOWN=(install tests cli speed char fairseq-speed)
DRY=0; PREPARE=0; WANT=()
for arg in "$@"; do
  case $arg in
    --dry-run) DRY=1 ;;
    --prepare) PREPARE=1 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    -*) echo "run.sh: unknown option $arg (--dry-run, --prepare, --help)" >&2; exit 2 ;;
    *) if [[ " ${STEPS_KNOWN[*]} " == *" $arg "* ]]; then WANT+=("$arg")
       else echo "run.sh: unknown step $arg: ${STEPS_KNOWN[*]}" >&2; exit 2; fi ;;
  esac
done
if (( ${#WANT[@]} == 0 && PREPARE == 0 )); then
  echo "usage: bash benchmarks/gpu/run.sh [--dry-run] [--prepare] STEP... (${STEPS_KNOWN[*]}; see --help)" >&2
  exit 2
fi
STEPS=()  # the canonical order
for s in "${STEPS_KNOWN[@]}"; do [[ " ${WANT[*]:-} " == *" $s "* ]] && STEPS+=("$s"); done

T0=$(date +%s)
now() { echo $(( $(date +%s) - T0 )); }
if (( DRY )); then
  RESULTS=${ALM_GPU_RESULTS:-${TMPDIR:-/tmp}/alm_gpu_dry/results}
  WORK=${ALM_GPU_WORK:-${TMPDIR:-/tmp}/alm_gpu_dry/work}
  declare -A BUDGET=([install]=30 [tests]=200 [cli]=330 [speed]=300 [char]=300 [fairseq-speed]=300)
  TOTAL=${GPU_RUN_BUDGET:-900}
else
  RESULTS=${ALM_GPU_RESULTS:-benchmarks/results/gpu}
  WORK=${ALM_GPU_WORK:-${TMPDIR:-/tmp}/alm_gpu_run}
  declare -A BUDGET=([install]=60 [tests]=100 [cli]=180 [speed]=130 [char]=300 [fairseq-speed]=300)
  TOTAL=${GPU_RUN_BUDGET:-470}
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
  local w
  for w in .whl/fairseq_fixed-*-cp3*.whl; do [[ -f $w ]] && { $PY benchmarks/gpu/slim_wheel.py "$w" || return 1; }; done
  local kb; kb=$(du -sk .whl .gpu-data | awk '{ s += $1 } END { print s }')
  say "prepare: .whl $(du -sh .whl | cut -f1), .gpu-data $(du -sh .gpu-data | cut -f1): $(( kb / 1024 )) MiB to carry (limit 64)"
  (( kb < 48 * 1024 )) || { say "prepare: over 48 MiB: too close to the 64 MiB carry limit"; return 1; }
  say "prepare: carry [\".whl\", \".gpu-data\"] and run: bash benchmarks/gpu/run.sh install tests cli speed"
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
  if timeout "$limit" bash scripts/install.sh --wheelhouse .whl > "$LOGS/install.log" 2>&1; then
    say "install.sh: $(tail -1 "$LOGS/install.log")"
  else
    say "install.sh failed ($(grep -iE 'error' "$LOGS/install.log" | tail -1)): pip --target $SITE instead"
    mkdir -p "$SITE"
    timeout $(( limit > 40 ? limit : 40 )) $PY -m pip install -q --no-index --no-deps --no-build-isolation --no-compile --target "$SITE" \
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
    cuda_pid=$!
  fi
  OMP_NUM_THREADS=4 timeout "$limit" $PY -m pytest -q -p no:cacheprovider -m "not cuda" tests/test_history_models.py \
    tests/test_char_models.py tests/test_translation_models.py > "$LOGS/pytest_models.log" 2>&1 &
  models_pid=$!
  if [[ -n $cuda_pid ]]; then
    wait "$cuda_pid"; local c=$?
    say "pytest -m cuda: rc=$c $(tail -1 "$LOGS/pytest_cuda.log")"; (( c == 0 )) || rc=1
  fi
  wait "$models_pid"; local m=$?
  say "pytest model tests (CPU): rc=$m $(tail -1 "$LOGS/pytest_models.log")"; (( m == 0 )) || rc=1
  return $rc
}

# ---- cli ----------------------------------------------------------------------------------------
step_cli() {
  local limit=$1 flags=()
  (( DRY )) && flags+=(--dry-run)
  timeout "$limit" $PY benchmarks/gpu/cli_check.py "${flags[@]}" --budget $(( limit - 20 )) --work "$WORK/cli" \
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
  local prof=(--device cuda) dyn=(--device cuda --repeats 2)
  if (( DRY )); then
    dev=(--device cpu --size 64 --threads 2); ts=(--updates 3 --repeats 1); big=(--updates 3)
    prof=(--device cpu --size 32 --batch-sizes 4); dyn=(--device cpu --batches 20 --repeats 1)
  fi
  run_speed() {  # NAME JSON COMMAND...: within what is left of the step
    local name=$1 json=$2; shift 2
    local left; left=$(left_of "$end")
    (( left > 5 )) || { say "$name: not run (the step's budget is spent)"; return 1; }
    timeout "$left" "$@" --json "$json" > "$LOGS/$name.log" 2>&1
    local r=$?
    [[ -f $json ]] && PRODUCED+=("$json")
    say "$name: rc=$r"
    grep -E "^(model|bare|alm_lstm|attentive|amsrn|eval,|training step|eval tokens|operations)" "$LOGS/$name.log" | tee -a "$SUMMARY"
    return $r
  }
  run_speed train_speed_b32 "$RESULTS/train_speed_model_b32.json" $PY benchmarks/train_speed.py --mode model \
    --data "$data" "${dev[@]}" "${ts[@]}" --batch-size 32 || rc=1
  run_speed train_speed_b128 "$RESULTS/train_speed_model_b128.json" $PY benchmarks/train_speed.py --mode model \
    --data "$data" "${dev[@]}" "${ts[@]}" "${big[@]}" --batch-size 128 || rc=1
  run_speed dynamic_speed "$RESULTS/dynamic_speed.json" $PY benchmarks/gpu/dynamic_speed.py --data "$data" "${dyn[@]}" || rc=1
  run_speed step_profile "$RESULTS/step_profile.json" $PY benchmarks/gpu/step_profile.py "${prof[@]}" || rc=1
  return $rc
}

step_char() {
  local dev=(--device cuda --updates 100 --repeats 2)
  (( DRY )) && dev=(--device cpu --updates 2 --repeats 1)
  timeout "$1" $PY benchmarks/char_speed.py "${dev[@]}" --json "$RESULTS/char_speed.json" > "$LOGS/char_speed.log" 2>&1
  local r=$?; PRODUCED+=("$RESULTS/char_speed.json"); tail -8 "$LOGS/char_speed.log" | tee -a "$SUMMARY"; return $r
}

step_fairseq-speed() {
  local data dev=(--device cuda --updates 300 --precision fp32,fp16)
  ptb_data; data=$DATA
  (( DRY )) && dev=(--device cpu --updates 5 --size 64 --threads 2)
  timeout "$1" $PY benchmarks/train_speed.py --mode fairseq --data "$data" "${dev[@]}" --repeats 1 \
    --json "$RESULTS/train_speed_fairseq.json" > "$LOGS/train_speed_fairseq.log" 2>&1
  local r=$?; PRODUCED+=("$RESULTS/train_speed_fairseq.json"); tail -8 "$LOGS/train_speed_fairseq.log" | tee -a "$SUMMARY"; return $r
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
  (( rc == 0 )) || status=1
  [[ $step == install ]] && (( NEED_PTB )) && start_ptb
done
[[ -n $PREP_PID ]] && wait "$PREP_PID"
say "steps: ${TIMES[*]}; total $(now) s; $( (( status )) && echo FAILED || echo all passed)"
exit $status
