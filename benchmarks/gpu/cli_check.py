#!/usr/bin/env python
"""Every word model through the command-line tools on a GPU: the GPU figure must equal the CPU figure.

    python -m benchmarks.gpu.cli_check --json benchmarks/results/gpu/cli.json          # on a GPU machine
    python -m benchmarks.gpu.cli_check --dry-run --json /tmp/cli.json                 # here: both sides --cpu
    ALM_GPU_CLI_ARCHS=lstm ALM_GPU_CLI_OPTIONS=plain python -m benchmarks.gpu.cli_check --dry-run

Each arch is trained briefly on the GPU on ``data-bin/wikitext-2-sample`` (``fairseq-train``, one
epoch; ``--max-update N`` for fewer), then every test-time option is run twice on the valid split,
on the GPU and with ``--cpu``, and the printed figures are compared:

- ``plain``, ``cache`` (``--neural-cache-*``), ``dynamic`` (``--dynamic-eval-lr/decay``), ``both``:
  ``fairseq-eval-lm``'s perplexity;
- ``score``: ``alm-score`` on a few lines, each line's logprob and the corpus ppl;
- ``grid``: ``alm-cache-grid`` with one cache point and one dynamic point (``--json``): every point's ppl.

Every figure of every option must be within ``RTOL`` (1e-4) relative of the CPU's (see ``RTOL``).

Also ``fairseq-train --fp16`` and ``--amp`` of attentive_lm_small (a few updates: a finite loss) and
``--bf16`` refused in one line (fairseq 0.12 turns it into --tpu). Checks run in parallel, each
side in its own process, ``--jobs`` processes at once (default: the cores less 2; GPU and CPU sides
share them), within ``--budget`` seconds: every training first (each check waits for its checkpoint,
and a check's CPU side starts as soon as the checkpoint exists, not after its GPU side), then the
checks longest first (``PRIORITY``: a pair's two sides next to each other), so the step ends soon
after its last process starts. A process that cannot finish in the budget is reported: its check is
"not run" with the reason (not started: the budget spent, or less left than that kind of process
took so far; or cut at the budget). A failing comparison (or training) makes the exit code 1; the
summary counts pass / FAIL / not run; the JSON has, per arch and option, both figures, both wall
times (the dynamic-evaluation pass timing among them) and the verdict.

``--dry-run`` (a machine without a GPU): the 'GPU' side runs with ``--cpu`` too, training stops
after ``--max-update`` (5) updates, every arch is trained, the first arch runs every option and the
first document arch ``plain`` (given ``--options`` / ``ALM_GPU_CLI_OPTIONS``, every arch runs those;
``--archs`` / ``ALM_GPU_CLI_ARCHS`` chooses the archs); fp16/amp are not run. It checks the plumbing
(the commands, what is read from their output, the verdicts, the JSON), not the GPU: about 3
minutes on 2 busy cores.
"""
import argparse
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

from benchmarks import ROOT

SAMPLE = "data-bin/wikitext-2-sample"
SENTENCE, DOCUMENT = "sentence_language_modeling", "document_language_modeling"
SENT_RECIPE = ["--criterion", "attention_cross_entropy", "--optimizer", "adam", "--lr", "0.003", "--clip-norm", "5",
               "--batch-size", "32"]
DOC_RECIPE = ["--criterion", "attention_cross_entropy", "--optimizer", "adam", "--lr", "0.003", "--clip-norm", "5",
              "--batch-size", "20", "--tokens-per-sample", "35"]
# name: (task, eval-lm batch size, training args); every word arch of the plugin, small
ARCHS = {
    "lstm": (SENTENCE, 32, ["--arch", "alm_lstm_small"]),
    "single": (SENTENCE, 32, ["--arch", "attentive_lm_small", "--attention-score", "single"]),
    "combined": (SENTENCE, 32, ["--arch", "attentive_lm_small", "--attention-score", "combined"]),
    "amsrn": (SENTENCE, 32, ["--arch", "amsrn_small", "--memory-selection", "tied",
                             "--attention-entropy-weight", "0.1"]),
    "lstm_adaptive": (SENTENCE, 32, ["--arch", "alm_lstm_small", "--adaptive-softmax-cutoff", "2000,4000"]),
    "single_adaptive": (SENTENCE, 32, ["--arch", "attentive_lm_small", "--adaptive-softmax-cutoff", "2000,4000"]),
    "pointer": (DOCUMENT, 1, ["--arch", "pointer_sentinel_lm_small"]),
    "doc_single": (DOCUMENT, 1, ["--arch", "attentive_lm_small", "--memory-window", "100"]),
}
OPTIONS = ["plain", "cache", "dynamic", "both", "score", "grid"]
# the order in which the checks start: the longest first (alm-cache-grid makes a cache pass, a
# dynamic-evaluation pass and one with both; a dynamic pass is an SGD step per segment), so that the
# short ones fill the slots at the end (longest-processing-time first: the shortest wall time for
# the lot); a check's GPU and CPU sides are next to each other
PRIORITY = ["grid", "both", "dynamic", "cache", "plain", "score"]
CACHE = ["--neural-cache-window", "100", "--neural-cache-theta", "0.3", "--neural-cache-lambda", "0.1"]
DYNAMIC_LR, DYNAMIC_DECAY = "0.03", "0.01"


def eval_flags(option, lr=DYNAMIC_LR):
    dynamic = ["--dynamic-eval-lr", lr, "--dynamic-eval-decay", DYNAMIC_DECAY]
    return {"plain": [], "cache": CACHE, "dynamic": dynamic, "both": CACHE + dynamic}[option]


SCORE_LINES = "The game was released in Japan .\nIt was the first song on the album .\nHe died in 1990 .\n"
# The one tolerance, for every figure of every option: the GPU figure within RTOL relative of the
# CPU's (the devices sum in different orders; why 1e-4: docs/tools.md, "On a GPU").
RTOL = 1e-4
TOLERANCES = {option: f"every figure within {RTOL:g} relative of the CPU's" for option in OPTIONS}


class Job:
    """One process: its command, where it runs ('gpu' or 'cpu': the device it uses), what it waits
    for, its kind (the processes of a kind take about as long: 'train', 'plain_gpu', ...), and the
    other side of its check (not worth running alone)."""

    def __init__(self, name, argv, slot, deps=(), stdin=None, threads=1, cap=300.0, kind=None):
        self.name, self.argv, self.slot, self.deps, self.stdin = name, argv, slot, list(deps), stdin
        self.threads, self.cap, self.kind, self.partner = threads, cap, kind or name, None
        self.state, self.reason, self.rc, self.seconds = "pending", "", None, None
        self.proc = self.started = self.kill_at = None
        self.out_path = self.err_path = None

    def output(self):
        text = ""
        for path in (self.out_path, self.err_path):
            if path and os.path.exists(path):
                with open(path, errors="replace") as f:
                    text += f.read()
        return text

    def stdout(self):
        if self.out_path and os.path.exists(self.out_path):
            with open(self.out_path, errors="replace") as f:
                return f.read()
        return ""


def start(job, logs, deadline):
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS=str(job.threads), MKL_NUM_THREADS=str(job.threads))
    job.out_path, job.err_path = os.path.join(logs, f"{job.name}.out"), os.path.join(logs, f"{job.name}.err")
    with open(job.out_path, "w") as out, open(job.err_path, "w") as err:
        job.proc = subprocess.Popen(job.argv, cwd=ROOT, env=env, stdout=out, stderr=err, text=True,
                                    stdin=subprocess.PIPE if job.stdin is not None else subprocess.DEVNULL,
                                    start_new_session=True)  # its own group: a cut kills its children too
    if job.stdin is not None:
        job.proc.stdin.write(job.stdin)
        job.proc.stdin.close()
    job.started = time.monotonic()
    job.kill_at = min(job.started + job.cap, deadline)
    job.state = "running"


def run_jobs(jobs, limits, budget, logs, log=print):
    """Start the jobs in list order as their dependencies finish and slots free up (at most
    ``limits['all']`` processes at once, ``limits['gpu']`` of them on the GPU), until ``budget``
    seconds have passed: a running job is cut then; a pending one is not started where less is left
    than the shortest of its kind took, or of a kind not seen yet, the shortest of any (start-up),
    since it would be cut (the slot goes to a shorter one), nor where the other side of its check
    was not run."""
    deadline = time.monotonic() + budget
    pending, running, by_name = list(jobs), [], {j.name: j for j in jobs}
    took = {}  # kind: the seconds each finished process of that kind took

    def needs(job):  # the least a process of its kind took; of a kind not seen yet, the least any took
        return min(took.get(job.kind) or [min(min(seconds) for seconds in took.values())])

    while pending or running:
        now = time.monotonic()
        for job in list(running):
            rc = job.proc.poll()
            if rc is None and now >= job.kill_at:
                try:
                    os.killpg(job.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                rc = job.proc.wait()
                job.state, job.reason = "cut", f"cut after {now - job.started:.0f} s (" + (
                    "budget" if now >= deadline - 0.5 else f"cap {job.cap:.0f} s") + ")"
            elif rc is not None:
                job.state = "done"
            if rc is not None:
                job.rc, job.seconds = rc, round(time.monotonic() - job.started, 1)
                if job.state == "done":
                    took.setdefault(job.kind, []).append(job.seconds)
                running.remove(job)
                log(f"  [{budget - (deadline - time.monotonic()):5.0f}s] {job.name}: "
                    f"{job.state} rc={rc} in {job.seconds:.1f} s{' ' + job.reason if job.reason else ''}")
        on_gpu = sum(job.slot == "gpu" for job in running)
        for job in list(pending):
            deps = [by_name[d] for d in job.deps]
            failed = [d for d in deps if d.state in ("cut", "skipped") or (d.state == "done" and d.rc != 0)]
            partner = by_name.get(job.partner)
            left = deadline - time.monotonic()
            if failed:
                job.state, job.reason = "skipped", f"{failed[0].name} {failed[0].state}" + (
                    f" rc={failed[0].rc}" if failed[0].rc is not None else "")
            elif partner is not None and partner.state in ("cut", "skipped"):
                job.state, job.reason = "skipped", f"not started: its other side {partner.name} {partner.state}"
            elif left < 3:
                job.state, job.reason = "skipped", "not started: budget spent"
            elif took and left < needs(job):
                job.state, job.reason = "skipped", (f"not started: {left:.0f} s of the budget left, "
                                                    f"{'a ' + job.kind if job.kind in took else 'any process'} "
                                                    f"took {needs(job):.0f} s at the least")
            if job.state == "skipped":
                pending.remove(job)
                continue
            if (all(d.state == "done" for d in deps) and len(running) < limits["all"]
                    and (job.slot != "gpu" or on_gpu < limits["gpu"])):
                start(job, logs, deadline)
                on_gpu += job.slot == "gpu"
                pending.remove(job)
                running.append(job)
        time.sleep(0.1)


# ---- what the tools print ------------------------------------------------------------------------

def eval_lm_figures(job):
    text = job.output()
    found = re.findall(r"Loss \(base 2\): ([-\d.naif]+), Perplexity: ([-\d.naif]+)", text)
    if not found:
        return None
    loss, ppl = found[-1]
    return {"ppl": ppl, "loss_base2": loss}


def score_figures(job):
    rows = [line.split("\t") for line in job.stdout().splitlines() if line.strip()]
    if not rows or rows[0][:2] != ["line", "logprob"]:
        return None
    summary = re.findall(r"\bppl ([-\d.naif]+)", open(job.err_path, errors="replace").read())
    return {"logprob": [row[1] for row in rows[1:]], "ppl": summary[-1] if summary else None}


def grid_figures(path):
    if not os.path.exists(path):
        return None
    with open(path) as f:
        grid = json.load(f)
    figures = {f"cache N={p['window']} theta={p['theta']} lambda={p['lambda']}": p["ppl"] for p in grid.get("grid", [])}
    for kind in ("dynamic", "both"):
        if grid.get(kind):
            figures[kind] = grid[kind]["ppl"]
    return figures


def rel(a, b):
    """The relative difference of two figures (0 where they are equal, 0 included)."""
    return 0.0 if a == b else abs(a - b) / max(abs(a), abs(b))


def figures(option, found):
    """The figures of one side, in a fixed order, as (name, value as printed or stored)."""
    if option == "score":
        return [(f"line {i + 1} logprob", v) for i, v in enumerate(found["logprob"])] + [("ppl", found["ppl"])]
    if option == "grid":
        return sorted(found.items())
    return [("ppl", found["ppl"])]


def compare(option, gpu, cpu):
    """The verdict on one check's figures: (passed, the largest relative difference, note). Every
    figure of every option passes within ``RTOL`` relative of the CPU's and is finite."""
    if option not in OPTIONS:
        raise ValueError(option)
    g_figures, c_figures = figures(option, gpu), figures(option, cpu)
    if [n for n, _ in g_figures] != [n for n, _ in c_figures] or any(v is None for _, v in g_figures + c_figures):
        return False, None, "not the same figures" if option != "grid" else "not the same points"
    worst, worst_name = 0.0, None
    for (name, g), (_, c) in zip(g_figures, c_figures):
        g, c = float(g), float(c)
        if not (math.isfinite(g) and math.isfinite(c)):
            return False, None, f"{name} not finite" if len(g_figures) > 1 else "not finite"
        if rel(g, c) >= worst:
            worst, worst_name = rel(g, c), name
    passed = worst <= RTOL
    what = f"{len(g_figures)} figures, " if len(g_figures) > 1 else ""
    if worst == 0:
        note = f"{what}equal" if what else "printed perplexity equal"
    else:
        note = f"{what}{'largest ' if what else ''}rel diff {worst:.1e}" + (f" ({worst_name})" if what else "") + \
            ("" if passed else f" > {RTOL:g}")
    return passed, worst, note


def losses(job):
    """The training losses a fairseq-train log shows: ``loss=X`` (every --log-interval updates) and
    ``| loss X |`` (the epoch's, also where --max-update stops it)."""
    return re.findall(r"(?:\| loss |\bloss=)([-\w.+]+?)(?: \||,|$)", job.output(), flags=re.M)


# ---- the plan ------------------------------------------------------------------------------------

def plan(args, work):
    """The jobs, in the order they start; and for each arch and option the pair of jobs it compares."""
    gpu_flag = ["--cpu"] if args.dry_run else []
    gpu_slot = "cpu" if args.dry_run else "gpu"
    gpu_threads = args.threads if args.dry_run else 1
    stop = ["--max-update", str(args.max_update), "--disable-validation"] if args.max_update else ["--max-epoch", "1"]
    trains, evals, pairs, extra = [], {}, {}, {}
    for name in args.archs:
        task, eval_batch, arch_args = ARCHS[name]
        recipe = SENT_RECIPE if task == SENTENCE else DOC_RECIPE
        save = os.path.join(work, "ck", name)
        shutil.rmtree(save, ignore_errors=True)
        trains.append(Job(f"train_{name}", ["fairseq-train", SAMPLE, "--user-dir", "alm_plugin", "--task", task,
                                            *arch_args, *recipe, *stop, "--save-dir", save, "--no-epoch-checkpoints",
                                            "--log-format", "simple", "--log-interval", "50", "--num-workers", "0",
                                            "--seed", "1", *gpu_flag], gpu_slot, threads=gpu_threads,
                          cap=args.train_cap, kind="train"))
        checkpoint = os.path.join(save, "checkpoint_last.pt")
        options = args.options
        if args.dry_run and args.options is OPTIONS:  # the default dry run: the plumbing, in a few minutes
            first_document = next((a for a in args.archs if ARCHS[a][0] == DOCUMENT), None)
            options = OPTIONS if name == args.archs[0] else ["plain"] if name == first_document else []
        for option in options:
            for side, flag, slot, threads in (("gpu", gpu_flag, gpu_slot, gpu_threads),
                                              ("cpu", ["--cpu"], "cpu", args.threads)):
                job_name = f"{option}_{name}_{side}"
                if option in ("plain", "cache", "dynamic", "both"):
                    argv = ["fairseq-eval-lm", SAMPLE, "--user-dir", "alm_plugin", "--task", task, "--path", checkpoint,
                            "--gen-subset", "valid", "--batch-size", str(eval_batch),
                            *eval_flags(option, args.dynamic_lr), *flag]
                    job = Job(job_name, argv, slot, [f"train_{name}"], threads=threads, cap=args.eval_cap)
                elif option == "score":
                    job = Job(job_name, ["alm-score", "--path", checkpoint, "--data", SAMPLE, *flag], slot,
                              [f"train_{name}"], stdin=SCORE_LINES, threads=threads, cap=args.eval_cap)
                else:
                    grid_json = os.path.join(work, f"{job_name}.json")
                    if os.path.exists(grid_json):  # never an earlier run's figures
                        os.remove(grid_json)
                    job = Job(job_name, ["alm-cache-grid", "--path", checkpoint, "--data", SAMPLE, "--windows", "100",
                                         "--thetas", "0.3", "--lambdas", "0.1", "--dynamic-lrs", args.dynamic_lr,
                                         "--dynamic-decays", DYNAMIC_DECAY, "--json", grid_json, *flag],
                              slot, [f"train_{name}"], threads=threads, cap=args.eval_cap)
                job.kind = f"{option}_{side}"
                evals[(option, name, side)] = job
            gpu, cpu = pairs[(name, option)] = (evals[(option, name, "gpu")], evals[(option, name, "cpu")])
            gpu.partner, cpu.partner = cpu.name, gpu.name
    # the precision checks: a few updates of attentive_lm_small in mixed precision, and --bf16 refused
    short = ["--max-update", "20", "--disable-validation", "--no-save", "--log-format", "simple",
             "--log-interval", "5", "--num-workers", "0", "--seed", "1"]
    base = ["fairseq-train", SAMPLE, "--user-dir", "alm_plugin", "--task", SENTENCE, "--arch", "attentive_lm_small",
            *SENT_RECIPE, *short]
    if not args.dry_run and args.precision:
        for flag in ("--fp16", "--amp"):
            extra[flag] = Job(f"train{flag.replace('--', '_')}", [*base, flag], gpu_slot, threads=1, cap=args.train_cap)
    if args.precision:
        extra["--bf16"] = Job("train_bf16_refused", [*base, "--bf16", *gpu_flag], "cpu", threads=1,
                              cap=args.train_cap)
    ordered = [(o, n, s) for o in PRIORITY for n in args.archs for s in ("gpu", "cpu")]
    jobs = trains + list(extra.values()) + [evals[key] for key in ordered if key in evals]
    return jobs, trains, pairs, extra


def verdicts(args, trains, pairs, extra):
    results, counts = {}, {"pass": 0, "FAIL": 0, "not run": 0}
    for train in trains:
        name = train.name[len("train_"):]
        valid = re.findall(r"valid \| epoch \d+ .*?\| ppl ([\d.]+)", train.output())
        results[name] = {"train": {"args": ARCHS[name][2], "task": ARCHS[name][0], "state": train.state,
                                   "rc": train.rc, "seconds": train.seconds, "reason": train.reason,
                                   "last_loss": (losses(train) or [None])[-1],
                                   "valid_ppl": valid[-1] if valid else None},
                         "checks": {}}
        if train.state != "done" or train.rc != 0:
            counts["FAIL" if train.state == "done" else "not run"] += 1
    for (name, option), (gpu, cpu) in pairs.items():
        entry = {"gpu_seconds": gpu.seconds, "cpu_seconds": cpu.seconds}
        if gpu.state == "done" and cpu.state == "done" and gpu.rc == 0 and cpu.rc == 0:
            read = {"score": score_figures, "grid": lambda job: grid_figures(job.argv[job.argv.index("--json") + 1])}
            g, c = (read.get(option, eval_lm_figures)(job) for job in (gpu, cpu))
            if g is None or c is None:
                entry.update(verdict="FAIL", note="no figure in the output (see the logs)")
            else:
                ok, diff, note = compare(option, g, c)
                entry.update(gpu=g, cpu=c, verdict="pass" if ok else "FAIL", rel_diff=diff, note=note)
        elif any(j.state == "done" and j.rc != 0 for j in (gpu, cpu)):  # a side that ran and failed
            bad = gpu if gpu.state == "done" and gpu.rc != 0 else cpu
            entry.update(verdict="FAIL", note=f"{bad.name} exit {bad.rc}: {tail(bad)}")
        else:
            not_run = [j for j in (gpu, cpu) if j.state != "done"]
            entry.update(verdict="not run", note="; ".join(f"{j.name}: {j.reason or j.state}" for j in not_run))
        results[name]["checks"][option] = entry
        counts[entry["verdict"]] += 1
    precision = {}
    for flag, job in extra.items():
        if job.state != "done":
            precision[flag] = {"verdict": "not run", "note": f"{job.state} {job.reason}".strip()}
        elif flag == "--bf16":
            err = open(job.err_path, errors="replace").read()
            lines = [line for line in err.splitlines() if "error:" in line]
            ok = job.rc != 0 and "Traceback" not in job.output() and len(lines) == 1 and "--bf16" in lines[0]
            precision[flag] = {"verdict": "pass" if ok else "FAIL", "rc": job.rc, "message": lines,
                               "note": "refused in one line" if ok else tail(job)}
        else:
            seen = losses(job)
            ok = job.rc == 0 and bool(seen) and all(math.isfinite(float(x)) for x in seen[-1:])
            precision[flag] = {"verdict": "pass" if ok else "FAIL", "rc": job.rc, "seconds": job.seconds,
                               "losses": seen, "note": "finite loss" if ok else tail(job)}
        counts[precision[flag]["verdict"]] += 1
    return results, precision, counts


def tail(job, lines=3):
    text = [line for line in job.output().splitlines() if line.strip() and "Warning" not in line]
    return " | ".join(text[-lines:])[-600:]


def sample_gpu(samples, stop, every=5.0):
    """(seconds, utilization %, memory MiB) of the GPU every ``every`` seconds until ``stop`` is set:
    how busy the checks keep it (to size --gpu-jobs)."""
    start = time.monotonic()
    while not stop.wait(every):
        try:
            line = subprocess.run(["nvidia-smi", "--query-gpu=utilization.gpu,memory.used",
                                   "--format=csv,noheader,nounits"], capture_output=True, text=True,
                                  timeout=10).stdout.splitlines()[0]
            util, memory = (int(float(x)) for x in line.split(","))
            samples.append((round(time.monotonic() - start), util, memory))
        except (OSError, ValueError, IndexError, subprocess.SubprocessError):
            return


def environment(dry_run):
    import numpy
    import torch
    return {"torch": torch.__version__, "numpy": numpy.__version__, "python": sys.version.split()[0],
            "device": "CPU (dry run: both sides --cpu)" if dry_run or not torch.cuda.is_available()
            else torch.cuda.get_device_name(0)}


def process_seconds(jobs, at_once, wall):
    """How long the processes took, in all and by kind (the GPU and CPU sides of each option apart)."""
    ran = [j for j in jobs if j.seconds is not None]
    total = sum(j.seconds for j in ran)
    kinds = {}
    for job in ran:
        kinds.setdefault(job.kind, []).append(job.seconds)
    return {"started": len(ran), "seconds": round(total, 1), "mean_s": round(total / max(1, len(ran)), 1),
            "slots_busy_pct": round(100 * total / max(1e-9, at_once * wall)),
            "mean_s_by_kind": {k: round(sum(v) / len(v), 1) for k, v in sorted(kinds.items())}}


def default_jobs(cores, threads=1):
    """Processes at once: every core but 2 (a GPU process has threads of its own beside the one that
    launches its kernels, and this scheduler polls), all of them on a machine of 2 to 4 cores; a
    CPU-side process with several threads takes as many cores."""
    return max(1, max(min(cores, 2), cores - 2) // threads)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dry-run", action="store_true", help="no GPU: the 'GPU' side runs with --cpu too")
    parser.add_argument("--archs", default=os.environ.get("ALM_GPU_CLI_ARCHS", ",".join(ARCHS)),
                        help=f"comma-separated, from {', '.join(ARCHS)}")
    parser.add_argument("--options", default=os.environ.get("ALM_GPU_CLI_OPTIONS", ",".join(OPTIONS)),
                        help=f"comma-separated, from {', '.join(OPTIONS)}")
    parser.add_argument("--no-precision", dest="precision", action="store_false",
                        help="leave out the --fp16 / --amp / --bf16 training checks")
    parser.add_argument("--budget", type=float, default=None, help="seconds for everything (default 200; dry run 300)")
    parser.add_argument("--max-update", type=int, default=None,
                        help="training updates per arch (default: one epoch; dry run 5); 0: one epoch")
    parser.add_argument("--dynamic-lr", default=DYNAMIC_LR,
                        help=f"dynamic evaluation's lr (decay {DYNAMIC_DECAY}; default {DYNAMIC_LR}: every arch "
                             "gains after an epoch on the sample; at 0.1 combined and doc_single diverge, at 0.3 "
                             "single too, and a diverging run parts the devices)")
    parser.add_argument("--train-cap", type=float, default=150, help="seconds one training may take")
    parser.add_argument("--eval-cap", type=float, default=150, help="seconds one evaluation may take")
    parser.add_argument("--jobs", type=int, default=None,
                        help="processes at once, GPU and CPU sides together (default: the cores less 2, for the "
                             "GPU processes' own threads and this scheduler; at least 2 where there are 2 cores)")
    parser.add_argument("--gpu-jobs", type=int, default=None,
                        help="at most this many of them on the GPU (default: no limit but --jobs; the H100 run "
                             "of 2026-11-27 had 6 on it at once, 14.4 GB at most, 36%% busy)")
    parser.add_argument("--threads", type=int, default=1,
                        help="threads per CPU-side process (tiny models: one thread each is the most work per core)")
    parser.add_argument("--work", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "alm_gpu_cli"),
                        help="checkpoints and logs (outside the repository)")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    args.archs = [a for a in args.archs.split(",") if a]
    given_options = args.options
    args.options = [o for o in args.options.split(",") if o]
    for values, known, what in ((args.archs, ARCHS, "--archs"), (args.options, OPTIONS, "--options")):
        unknown = [v for v in values if v not in known]
        if unknown or not values:
            parser.error(f"{what}: {', '.join(unknown) or 'none given'}: choose from {', '.join(known)}")
    if given_options == ",".join(OPTIONS):
        args.options = OPTIONS  # the default (a dry run narrows it: see plan)
    if not args.dry_run:
        import torch
        if not torch.cuda.is_available():
            parser.error("torch sees no GPU here: run with --dry-run (both sides --cpu)")
    args.budget = args.budget or (300 if args.dry_run else 200)
    args.max_update = (5 if args.dry_run else 0) if args.max_update is None else args.max_update
    cores = os.cpu_count() or 2
    if args.jobs is None:
        args.jobs = default_jobs(cores, args.threads)
    if args.jobs < 1 or (args.gpu_jobs is not None and args.gpu_jobs < 1):
        parser.error("--jobs and --gpu-jobs: at least 1")
    args.gpu_jobs = min(args.gpu_jobs or args.jobs, args.jobs)
    for tool in ("fairseq-train", "fairseq-eval-lm", "alm-score", "alm-cache-grid"):
        if shutil.which(tool) is None:
            sys.exit(f"cli_check: {tool} is not on PATH: install the plugin first (scripts/install.sh)")

    work = os.path.abspath(args.work)
    logs = os.path.join(work, "logs")
    shutil.rmtree(logs, ignore_errors=True)
    os.makedirs(logs)
    jobs, trains, pairs, extra = plan(args, work)
    limits = {"all": args.jobs, "gpu": args.gpu_jobs}
    print(f"cli_check: {len(trains)} archs, {len(pairs)} comparisons, {len(jobs)} processes; budget "
          f"{args.budget:.0f} s; {args.jobs} processes at once on {cores} cores"
          + ("" if args.dry_run else f", at most {args.gpu_jobs} on the GPU")
          + f", {args.threads} threads per CPU process; logs in {logs}", flush=True)
    t0 = time.monotonic()
    samples, stop = [], threading.Event()
    if not args.dry_run and shutil.which("nvidia-smi"):
        threading.Thread(target=sample_gpu, args=(samples, stop), daemon=True).start()
    run_jobs(jobs, limits, args.budget, logs)
    stop.set()
    wall = round(time.monotonic() - t0, 1)
    results, precision, counts = verdicts(args, trains, pairs, extra)

    width = max(len(n) for n in results)
    print(f"\n{'arch':{width}s} {'option':7s} {'GPU side':>12s} {'CPU side':>12s} {'GPU s':>6s} {'CPU s':>6s}  verdict")
    for name, entry in results.items():
        t = entry["train"]
        shown = f"ppl {t['valid_ppl']}" if t["valid_ppl"] else f"loss {t['last_loss']}" if t["last_loss"] else "-"
        print(f"{name:{width}s} {'train':7s} {shown:>12s} {'':>12s} "
              f"{t['seconds'] or 0:6.1f} {'':>6s}  {'ok' if t['rc'] == 0 else t['state'] + ' ' + t['reason']}")
        for option, check in entry["checks"].items():
            g, c = check.get("gpu"), check.get("cpu")
            show = lambda f: "-" if f is None else (f.get("ppl") if isinstance(f, dict) and "ppl" in f else
                                                    f"{f.get('both', f.get('dynamic', 0)):.2f}")
            print(f"{name:{width}s} {option:7s} {show(g):>12s} {show(c):>12s} {check['gpu_seconds'] or 0:6.1f} "
                  f"{check['cpu_seconds'] or 0:6.1f}  {check['verdict']} ({check.get('note', '')})")
    for flag, check in precision.items():
        print(f"{'precision':{width}s} {flag:7s} {check['verdict']} ({check['note']})")
    print(f"\ncli_check: {counts['pass']} pass, {counts['FAIL']} FAIL, {counts['not run']} not run, in {wall} s")
    processes = process_seconds(jobs, args.jobs, wall)
    print(f"processes: {processes['started']} of {len(jobs)} started, {processes['seconds']:.0f} s in all "
          f"({processes['mean_s']:.1f} s each), {args.jobs} at once: {processes['slots_busy_pct']}% of the slots' "
          f"time busy (to size --budget: the seconds in all / --jobs, plus the longest process)")
    gpu_use = None
    if samples:
        gpu_use = {"mean_utilization_pct": round(sum(u for _, u, _ in samples) / len(samples)),
                   "max_memory_mib": max(m for _, _, m in samples), "samples": samples}
        print(f"GPU: {gpu_use['mean_utilization_pct']}% busy on average, at most {gpu_use['max_memory_mib']} MiB, "
              f"at most {args.gpu_jobs} processes on it at once")

    if args.json:
        env = environment(args.dry_run)
        title = (f"GPU figure against CPU figure, every word arch and test-time option, {SAMPLE} valid, "
                 f"{env['device']}")
        result = {"title": title, **env, "dry_run": args.dry_run, "argv": sys.argv[1:], "budget_s": args.budget,
                  "wall_s": wall, "training": ("one epoch" if not args.max_update else f"{args.max_update} updates"),
                  "dynamic_eval": {"lr": float(args.dynamic_lr), "decay": float(DYNAMIC_DECAY)},
                  "cache": {"window": 100, "theta": 0.3, "lambda": 0.1}, "tolerances": TOLERANCES,
                  "slots": {"jobs": args.jobs, "gpu_jobs": None if args.dry_run else args.gpu_jobs, "cores": cores,
                            "threads_per_cpu_process": args.threads}, "gpu_use": gpu_use,
                  "summary": counts, "processes": processes, "archs": results, "precision": precision}
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json + ".tmp", "w") as f:
            json.dump(result, f, indent=1)
        os.replace(args.json + ".tmp", args.json)
        print(f"wrote {args.json}")
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
