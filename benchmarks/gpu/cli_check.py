#!/usr/bin/env python
"""Every word model through the command-line tools on a GPU: the GPU figure must equal the CPU figure.

    python -m benchmarks.gpu.cli_check --json benchmarks/results/gpu/cli.json          # on a GPU machine
    python -m benchmarks.gpu.cli_check --dry-run --json /tmp/cli.json                 # here: both sides --cpu
    ALM_GPU_CLI_ARCHS=lstm ALM_GPU_CLI_OPTIONS=plain python -m benchmarks.gpu.cli_check --dry-run

Each arch is trained on data-bin/wikitext-2-sample, then each test-time option runs on valid on the GPU and with
--cpu (plain, cache, dynamic, both: fairseq-eval-lm; score: alm-score; grid: alm-cache-grid): every figure must be
finite and within RTOL of the CPU's. Also --fp16 / --amp train and --bf16 is refused (see verdicts). FAIL: exit 1.
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
import time
from pathlib import Path

import numpy
import torch

from alm_plugin.cli.output_files import write_text
from benchmarks import ROOT
from benchmarks.result_files import check_json, write_json

SAMPLE = "data-bin/wikitext-2-sample"
SENTENCE, DOCUMENT = "sentence_language_modeling", "document_language_modeling"
RECIPE = ["--criterion", "attention_cross_entropy", "--optimizer", "adam", "--lr", "0.003", "--clip-norm", "5"]
SENT_RECIPE, DOC_RECIPE = RECIPE + ["--batch-size", "32"], RECIPE + ["--batch-size", "20", "--tokens-per-sample", "35"]
LSTM, ATTENTIVE = ["--arch", "alm_lstm_small"], ["--arch", "attentive_lm_small"]
# name: (task, eval-lm batch size, training args); every word arch of the plugin, small
ARCHS = {
    "lstm": (SENTENCE, 32, LSTM),
    "single": (SENTENCE, 32, ATTENTIVE + ["--attention-score", "single"]),
    "combined": (SENTENCE, 32, ATTENTIVE + ["--attention-score", "combined"]),
    "amsrn": (
        SENTENCE,
        32,
        ["--arch", "amsrn_small", "--memory-selection", "tied", "--attention-entropy-weight", "0.1"],
    ),
    "lstm_adaptive": (SENTENCE, 32, LSTM + ["--adaptive-softmax-cutoff", "2000,4000"]),
    "single_adaptive": (SENTENCE, 32, ATTENTIVE + ["--adaptive-softmax-cutoff", "2000,4000"]),
    "pointer": (DOCUMENT, 1, ["--arch", "pointer_sentinel_lm_small"]),
    "doc_single": (DOCUMENT, 1, ATTENTIVE + ["--memory-window", "100"]),
}
OPTIONS = ["plain", "cache", "dynamic", "both", "score", "grid"]
PRIORITY = ["grid", "both", "dynamic", "cache", "plain", "score"]  # the longest first: the short ones fill the end
CACHE = ["--neural-cache-window", "100", "--neural-cache-theta", "0.3", "--neural-cache-lambda", "0.1"]
DYNAMIC_LR, DYNAMIC_DECAY = "0.03", "0.01"
SCORE_LINES = "The game was released in Japan .\nIt was the first song on the album .\nHe died in 1990 .\n"
RTOL = 1e-4  # the one tolerance, for every figure (the devices sum in different orders; docs/tools.md, On a GPU)
TOLERANCES = {option: f"every figure within {RTOL:g} relative of the CPU's" for option in OPTIONS}


class Job:
    """One process: its command, slot ('gpu' / 'cpu'), the jobs it waits for, kind, partner (its check's twin)."""

    def __init__(self, name, argv, slot, deps=(), threads=1, cap=300.0, kind=None):
        self.name, self.argv, self.slot, self.deps, self.threads, self.cap = name, argv, slot, list(deps), threads, cap
        self.kind, self.partner, self.state, self.reason = kind or name, None, "pending", ""
        self.rc = self.seconds = self.log = None

    def output(self, streams=("out", "err")):  # what it printed there ("" before it ran)
        return "".join(
            Path(f"{self.log}.{s}").read_text(errors="replace")
            for s in streams
            if self.log and os.path.exists(f"{self.log}.{s}")
        )


def why_not_start(job, left, took):
    """The reason not to start a pending job, or "": a dependency failed, its check's other side is not run, or
    less is left than 3 s or than the least its kind took (a new kind: any kind): it would be cut."""
    failed = next((d for d in job.deps if d.state in ("cut", "skipped") or d.rc), None)
    need = min(took.get(job.kind) or map(min, took.values()), default=0)
    if failed:
        return f"{failed.name} {failed.state}" + (f" rc={failed.rc}" if failed.rc is not None else "")
    if job.partner and job.partner.state in ("cut", "skipped"):
        return f"not started: its other side {job.partner.name} {job.partner.state}"
    if left < 3:
        return "not started: budget spent"
    if left < need:
        return (
            f"not started: {left:.0f} s of the budget left, "
            f"{'a ' + job.kind if job.kind in took else 'any process'} took {need:.0f} s at the least"
        )
    return ""


def run_jobs(jobs, limits, budget, logs, log=print):
    """Start the jobs in list order as their dependencies finish and slots free up (``limits['all']`` at once,
    ``limits['gpu']`` on the GPU); cut one at its cap or at ``budget`` s; skip one ``why_not_start`` gives a reason
    for. Returns the seconds it took."""
    clock = time.monotonic
    deadline, took = clock() + budget, {}  # took: kind: the seconds each finished process of that kind took
    while any(j.state in ("pending", "running") for j in jobs):
        for job in [j for j in jobs if j.state == "running" and (j.proc.poll() is not None or clock() >= j.kill_at)]:
            now, job.state = clock(), "done"
            if job.proc.poll() is None:  # not reaped yet, so its group is there to kill (its children too)
                os.killpg(job.proc.pid, signal.SIGKILL)
                job.state, job.reason = (
                    "cut",
                    f"cut after {now - job.started:.0f} s ("
                    + ("budget" if now >= deadline - 0.5 else f"cap {job.cap:.0f} s")
                    + ")",
                )
            job.rc, job.ended = job.proc.wait(), clock()
            job.seconds = round(job.ended - job.started, 1)
            if job.state == "done":
                took.setdefault(job.kind, []).append(job.seconds)
            log(
                f"  [{clock() - deadline + budget:5.0f}s] {job.name}: {job.state} rc={job.rc} in {job.seconds:.1f} s"
                f"{' ' + job.reason if job.reason else ''}"
            )
        for job in [j for j in jobs if j.state == "pending"]:
            busy = [j.slot for j in jobs if j.state == "running"]
            job.reason = why_not_start(job, deadline - clock(), took)
            if job.reason:
                job.state = "skipped"
            elif (
                all(d.state == "done" for d in job.deps)
                and len(busy) < limits["all"]
                and (job.slot != "gpu" or busy.count("gpu") < limits["gpu"])
            ):
                job.log, threads = os.path.join(logs, job.name), str(job.threads)
                with open(f"{job.log}.out", "w") as out, open(f"{job.log}.err", "w") as err:
                    job.proc = subprocess.Popen(  # a process group of its own, for the cut
                        job.argv,
                        cwd=ROOT,
                        stdin=subprocess.DEVNULL,
                        stdout=out,
                        stderr=err,
                        start_new_session=True,
                        env=dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS=threads, MKL_NUM_THREADS=threads),
                    )
                job.state, job.started, job.kill_at = "running", clock(), min(clock() + job.cap, deadline)
        time.sleep(0.1)
    return clock() - deadline + budget


def read_figures(option, job):
    """One side's figures as its tool printed (a grid: stored) them; None where there are none."""
    if option == "grid":
        path = Path(job.argv[job.argv.index("--json") + 1])
        grid = json.loads(path.read_text()) if path.exists() else None
        return grid and {
            **{
                f"cache N={p['window']} theta={p['theta']} lambda={p['lambda']}": p["ppl"] for p in grid.get("grid", [])
            },
            **{kind: grid[kind]["ppl"] for kind in ("dynamic", "both") if grid.get(kind)},
        }
    if option == "score":
        rows = [line.split("\t") for line in job.output(["out"]).splitlines() if line.strip()]
        ppl = re.findall(r"\bppl ([-\d.naif]+)", job.output(["err"]))
        return (
            {"logprob": [row[1] for row in rows[1:]], "ppl": (ppl or [None])[-1]}
            if rows and rows[0][:2] == ["line", "logprob"]
            else None
        )
    found = re.findall(r"Loss \(base 2\): ([-\d.naif]+), Perplexity: ([-\d.naif]+)", job.output())
    return {"ppl": found[-1][1], "loss_base2": found[-1][0]} if found else None


def compare(option, gpu, cpu):
    """(passed, the largest relative difference, note): every figure finite and within ``RTOL`` of the CPU's?"""
    on_gpu, on_cpu = (
        [(f"line {i + 1} logprob", v) for i, v in enumerate(f["logprob"])] + [("ppl", f["ppl"])]
        if option == "score"
        else sorted(f.items())
        if option == "grid"
        else [("ppl", f["ppl"])]
        for f in (gpu, cpu)
    )
    if [n for n, _ in on_gpu] != [n for n, _ in on_cpu] or any(v is None for _, v in on_gpu + on_cpu):
        return False, None, "not the same points" if option == "grid" else "not the same figures"
    figures = [(name, float(g), float(c)) for (name, g), (_, c) in zip(on_gpu, on_cpu)]
    what = f"{len(figures)} figures, " if len(figures) > 1 else ""
    if bad := [name for name, g, c in figures if not (math.isfinite(g) and math.isfinite(c))]:
        return False, None, f"{bad[0]} not finite" if what else "not finite"
    diffs = [(0.0 if g == c else abs(g - c) / max(abs(g), abs(c)), name) for name, g, c in figures]
    worst, name = max(reversed(diffs), key=lambda diff: diff[0], default=(0.0, None))  # the last of equals
    note = (
        (f"{what}equal" if what else "printed perplexity equal")
        if worst == 0
        else f"{what}largest rel diff {worst:.1e} ({name})"
        if what
        else f"rel diff {worst:.1e}"
    )
    return worst <= RTOL, worst, note + ("" if worst <= RTOL else f" > {RTOL:g}")


def plan(args, work):
    """The jobs in the order they start (trainings, precision checks, then the checks by ``PRIORITY``, GPU side
    first); the trainings; {(arch, option): (GPU side, CPU side)}; the precision checks by flag. A dry run has no
    --fp16 / --amp and, given no --options, runs every option on the first arch, plain on the first document arch."""
    gpu_flag, gpu_slot, gpu_threads = (["--cpu"], "cpu", args.threads) if args.dry_run else ([], "gpu", 1)
    sides = (("gpu", gpu_flag, gpu_slot, gpu_threads), ("cpu", ["--cpu"], "cpu", args.threads))
    stop = ["--max-update", str(args.max_update), "--disable-validation"] if args.max_update else ["--max-epoch", "1"]
    dynamic = ["--dynamic-eval-lr", args.dynamic_lr, "--dynamic-eval-decay", DYNAMIC_DECAY]
    common = ["--user-dir", "alm_plugin", "--log-format", "simple", "--num-workers", "0", "--seed", "1"]
    write_text(lines := Path(work, "score_lines.txt"), SCORE_LINES)
    trains, pairs, extra = [], {}, {}
    for name in args.archs:
        (task, eval_batch, arch_args), save = ARCHS[name], os.path.join(work, "ck", name)
        shutil.rmtree(save, ignore_errors=True)
        recipe = [*arch_args, *(SENT_RECIPE if task == SENTENCE else DOC_RECIPE), *stop, "--save-dir", save]
        trains.append(
            train := Job(
                f"train_{name}",
                [
                    "fairseq-train",
                    SAMPLE,
                    *common,
                    "--task",
                    task,
                    *recipe,
                    "--log-interval",
                    "50",
                    "--no-epoch-checkpoints",
                    *gpu_flag,
                ],
                gpu_slot,
                threads=gpu_threads,
                cap=args.train_cap,
                kind="train",
            )
        )
        path, options = os.path.join(save, "checkpoint_last.pt"), args.options
        if args.dry_run and args.options == OPTIONS:  # the default dry run: the plumbing, in a few minutes
            first_document = next((a for a in args.archs if ARCHS[a][0] == DOCUMENT), None)
            options = OPTIONS if name == args.archs[0] else ["plain"] if name == first_document else []
        eval_lm = [
            "fairseq-eval-lm",
            SAMPLE,
            "--user-dir",
            "alm_plugin",
            "--task",
            task,
            "--path",
            path,
            "--gen-subset",
            "valid",
            "--batch-size",
            str(eval_batch),
        ]
        argv = {
            "plain": eval_lm,
            "cache": eval_lm + CACHE,
            "dynamic": eval_lm + dynamic,
            "both": eval_lm + CACHE + dynamic,
            "score": ["alm-score", "--path", path, "--data", SAMPLE, str(lines)],
            "grid": [
                "alm-cache-grid",
                "--path",
                path,
                "--data",
                SAMPLE,
                "--windows",
                "100",
                "--thetas",
                "0.3",
                "--lambdas",
                "0.1",
                "--dynamic-lrs",
                args.dynamic_lr,
                "--dynamic-decays",
                DYNAMIC_DECAY,
            ],
        }
        for option in options:  # a grid's JSON among the logs, which each run starts without
            gpu, cpu = pairs[(name, option)] = tuple(
                Job(
                    f"{option}_{name}_{side}",
                    argv[option]
                    + flag
                    + (
                        ["--json", os.path.join(work, "logs", f"{option}_{name}_{side}.json")]
                        if option == "grid"
                        else []
                    ),
                    slot,
                    [train],
                    threads,
                    args.eval_cap,
                    kind=f"{option}_{side}",
                )
                for side, flag, slot, threads in sides
            )
            gpu.partner, cpu.partner = cpu, gpu
    base = [
        "fairseq-train",
        SAMPLE,
        *common,
        "--task",
        SENTENCE,
        *ATTENTIVE,
        *SENT_RECIPE,
        "--max-update",
        "20",
        "--disable-validation",
        "--no-save",
        "--log-interval",
        "5",
    ]
    for flag in ["--fp16", "--amp"] if args.precision and not args.dry_run else []:
        extra[flag] = Job(f"train_{flag[2:]}", [*base, flag], gpu_slot, cap=args.train_cap)
    if args.precision:
        extra["--bf16"] = Job("train_bf16_refused", [*base, "--bf16", *gpu_flag], "cpu", cap=args.train_cap)
    checks = [job for option in PRIORITY for name in args.archs for job in pairs.get((name, option), ())]
    return trains + list(extra.values()) + checks, trains, pairs, extra


def verdicts(trains, pairs, extra, log=print):
    """Per arch its training and checks, the precision checks, the counts of pass / FAIL / not run; a table row each."""

    def losses(job):  # fairseq-train's: loss=X each --log-interval updates, | loss X | the epoch's
        return re.findall(r"(?:\| loss |\bloss=)([-\w.+]+?)(?: \||,|$)", job.output(), flags=re.M)

    def tail(job):  # why it failed: its last lines but warnings
        return " | ".join([ln for ln in job.output().splitlines() if ln.strip() and "Warning" not in ln][-3:])[-600:]

    results, precision, counts = {}, {}, {"pass": 0, "FAIL": 0, "not run": 0}
    row = "{:%d} {:7} {:>12} {:>12} {:>6} {:>6}  {}" % (width := max(len(t.name) for t in trains) - len("train_"))
    log("\n" + row.format("arch", "option", "GPU side", "CPU side", "GPU s", "CPU s", "verdict"))
    for train in trains:
        name, seen = train.name[len("train_") :], losses(train)
        valid = re.findall(r"valid \| epoch \d+ .*?\| ppl ([\d.]+)", train.output())
        results[name] = {
            "train": {
                "args": ARCHS[name][2],
                "task": ARCHS[name][0],
                "state": train.state,
                "rc": train.rc,
                "seconds": train.seconds,
                "reason": train.reason,
                "last_loss": (seen or [None])[-1],
                "valid_ppl": (valid or [None])[-1],
            },
            "checks": {},
        }
        if train.state != "done" or train.rc != 0:
            counts["FAIL" if train.state == "done" else "not run"] += 1
        log(
            row.format(
                name,
                "train",
                f"ppl {valid[-1]}" if valid else f"loss {seen[-1]}" if seen else "-",
                "",
                f"{train.seconds or 0:.1f}",
                "",
                "ok" if train.rc == 0 else f"{train.state} {train.reason}",
            )
        )
        for option, (gpu, cpu) in ((option, pair) for (arch, option), pair in pairs.items() if arch == name):
            check = results[name]["checks"][option] = {"gpu_seconds": gpu.seconds, "cpu_seconds": cpu.seconds}
            if failed := [j for j in (gpu, cpu) if j.state == "done" and j.rc != 0]:  # a side that ran and failed
                check.update(verdict="FAIL", note=f"{failed[0].name} exit {failed[0].rc}: {tail(failed[0])}")
            elif not_run := [j for j in (gpu, cpu) if j.state != "done"]:
                check.update(verdict="not run", note="; ".join(f"{j.name}: {j.reason or j.state}" for j in not_run))
            elif None in (g := read_figures(option, gpu), c := read_figures(option, cpu)):
                check.update(verdict="FAIL", note="no figure in the output (see the logs)")
            else:
                ok, diff, note = compare(option, g, c)
                check.update(gpu=g, cpu=c, verdict="pass" if ok else "FAIL", rel_diff=diff, note=note)
            counts[check["verdict"]] += 1
            g, c = (
                "-" if f is None else f["ppl"] if "ppl" in f else f"{f.get('both', f.get('dynamic', 0)):.2f}"
                for f in (check.get("gpu"), check.get("cpu"))
            )  # a grid's point with both (or dynamic)
            log(
                row.format(
                    name,
                    option,
                    g,
                    c,
                    f"{gpu.seconds or 0:.1f}",
                    f"{cpu.seconds or 0:.1f}",
                    f"{check['verdict']} ({check['note']})",
                )
            )
    for flag, job in extra.items():  # --bf16 (fairseq 0.12 reads it as --tpu): refused in one line, no traceback
        errors = [line for line in job.output(["err"]).splitlines() if "error:" in line]
        seen, bf16 = losses(job), flag == "--bf16"
        ok = (
            job.rc != 0 and "Traceback" not in job.output() and len(errors) == 1 and "--bf16" in errors[0]
            if bf16
            else job.rc == 0 and bool(seen) and math.isfinite(float(seen[-1]))
        )
        note = ("refused in one line" if bf16 else "finite loss") if ok else tail(job)
        check = precision[flag] = (
            {"verdict": "not run", "note": f"{job.state} {job.reason}".strip()}
            if job.state != "done"
            else {
                "verdict": "pass" if ok else "FAIL",
                "rc": job.rc,
                **({"message": errors} if bf16 else {"seconds": job.seconds, "losses": seen}),
                "note": note,
            }
        )
        counts[check["verdict"]] += 1
        log(f"{'precision':{width}} {flag:7} {check['verdict']} ({check['note']})")
    return results, precision, counts


def default_jobs(cores, threads=1):
    """Processes at once: the cores less 2 (GPU processes' own threads, the polling) but all of 2 to 4, / threads."""
    return max(1, max(min(cores, 2), cores - 2) // threads)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add, env = parser.add_argument, os.environ.get
    add("--dry-run", action="store_true", help="no GPU: the 'GPU' side runs with --cpu too")
    add("--archs", default=env("ALM_GPU_CLI_ARCHS", ",".join(ARCHS)), help=f"comma-separated, from {', '.join(ARCHS)}")
    add("--options", default=env("ALM_GPU_CLI_OPTIONS", ",".join(OPTIONS)), help=f"from {', '.join(OPTIONS)}")
    add("--no-precision", dest="precision", action="store_false", help="leave out the --fp16 / --amp / --bf16 checks")
    add("--budget", type=float, help="seconds for everything (default 200; dry run 300)")
    add("--max-update", type=int, help="training updates per arch (default: one epoch; dry run 5); 0: one epoch")
    add("--dynamic-lr", default=DYNAMIC_LR, help=f"dynamic evaluation's lr (decay {DYNAMIC_DECAY}; see docs/tools.md)")
    add("--train-cap", type=float, default=150, help="seconds one training may take")
    add("--eval-cap", type=float, default=150, help="seconds one evaluation may take")
    add("--jobs", type=int, help="processes at once, GPU and CPU sides together (default: see default_jobs)")
    add("--gpu-jobs", type=int, help="at most this many of them on the GPU (default: --jobs)")
    add("--threads", type=int, default=1, help="threads per CPU-side process (default 1: the most work per core)")
    add("--work", default=os.path.join(env("TMPDIR", "/tmp"), "alm_gpu_cli"), help="checkpoints and logs")
    add("--json", help="write the results here")
    args = parser.parse_args()
    check_json(parser, args.json, own=lambda record: "numpy" in record and "python" in record)  # before the run
    args.archs, args.options = ([v for v in s.split(",") if v] for s in (args.archs, args.options))
    for what, values, known in (("--archs", args.archs, ARCHS), ("--options", args.options, OPTIONS)):
        if (unknown := [v for v in values if v not in known]) or not values:
            parser.error(f"{what}: {', '.join(unknown) or 'none given'}: choose from {', '.join(known)}")
    if not args.dry_run and not torch.cuda.is_available():
        parser.error("torch sees no GPU here: run with --dry-run (both sides --cpu)")
    cores = os.cpu_count() or 2
    args.jobs = default_jobs(cores, args.threads) if args.jobs is None else args.jobs
    if args.jobs < 1 or (args.gpu_jobs is not None and args.gpu_jobs < 1):
        parser.error("--jobs and --gpu-jobs: at least 1")
    args.gpu_jobs = min(args.gpu_jobs or args.jobs, args.jobs)
    args.budget = args.budget or (300 if args.dry_run else 200)
    args.max_update = (5 if args.dry_run else 0) if args.max_update is None else args.max_update
    if absent := [t for t in "fairseq-train fairseq-eval-lm alm-score alm-cache-grid".split() if not shutil.which(t)]:
        sys.exit(f"cli_check: {absent[0]} is not on PATH: install the plugin first (scripts/install.sh)")
    logs = os.path.join(os.path.abspath(args.work), "logs")
    shutil.rmtree(logs, ignore_errors=True)
    os.makedirs(logs)
    jobs, trains, pairs, extra = plan(args, os.path.dirname(logs))
    print(
        f"cli_check: {len(trains)} archs, {len(pairs)} comparisons, {len(jobs)} processes, {args.jobs} at once; "
        f"budget {args.budget:.0f} s; logs in {logs}",
        flush=True,
    )
    wall = round(run_jobs(jobs, {"all": args.jobs, "gpu": args.gpu_jobs}, args.budget, logs), 1)
    results, precision, counts = verdicts(trains, pairs, extra)
    print(f"\ncli_check: {counts['pass']} pass, {counts['FAIL']} FAIL, {counts['not run']} not run, in {wall} s")
    ran = [j for j in jobs if j.seconds is not None]
    total, kinds = sum(j.seconds for j in ran), {j.kind: [i.seconds for i in ran if i.kind == j.kind] for j in ran}
    processes = {
        "started": len(ran),
        "seconds": round(total, 1),
        "mean_s": round(total / max(1, len(ran)), 1),
        "mean_s_by_kind": {k: round(sum(v) / len(v), 1) for k, v in sorted(kinds.items())},
    }
    print(f"processes: {len(ran)} of {len(jobs)} started, {total:.0f} s in all, {args.jobs} at once")
    if args.json:
        device = "CPU (dry run: both sides --cpu)" if args.dry_run else torch.cuda.get_device_name(0)
        title = f"GPU figure against CPU figure, every word arch and test-time option, {SAMPLE} valid, {device}"
        write_json(
            args.json,
            {
                "title": title,
                "torch": torch.__version__,
                "numpy": numpy.__version__,
                "python": sys.version.split()[0],
                "device": device,
                "dry_run": args.dry_run,
                "argv": sys.argv[1:],
                "budget_s": args.budget,
                "wall_s": wall,
                "training": f"{args.max_update} updates" if args.max_update else "one epoch",
                "dynamic_eval": {"lr": float(args.dynamic_lr), "decay": float(DYNAMIC_DECAY)},
                "cache": {"window": 100, "theta": 0.3, "lambda": 0.1},
                "tolerances": TOLERANCES,
                "slots": {
                    "jobs": args.jobs,
                    "gpu_jobs": None if args.dry_run else args.gpu_jobs,
                    "cores": cores,
                    "threads_per_cpu_process": args.threads,
                },
                "summary": counts,
                "processes": processes,
                "archs": results,
                "precision": precision,
            },
        )
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
