"""benchmarks/gpu/cli_check.py, run.sh's cli step (every word arch's GPU figures against its CPU
figures): the one tolerance its verdicts use, the number of processes it runs at once, the order it
starts them in, what it reports of a check the budget left out, and its dry run (both sides --cpu)
on one arch and one option through run.sh (~40 s)."""

import json
import os
import subprocess
import sys
import time
import types

import pytest
from conftest import ROOT

from benchmarks.gpu import cli_check

RUN = os.path.join(ROOT, "benchmarks", "gpu", "run.sh")

GRID = "cache N=100 theta=0.3 lambda=0.1"


@pytest.mark.parametrize(
    "option, gpu, cpu, passed",
    [
        ("plain", {"ppl": "266.91"}, {"ppl": "266.91"}, True),
        ("plain", {"ppl": "266.92"}, {"ppl": "266.91"}, True),  # the last printed digit: 3.7e-5
        ("plain", {"ppl": "232.33"}, {"ppl": "232.32"}, True),  # amsrn on the H100, 2026-11-27
        ("plain", {"ppl": "267.18"}, {"ppl": "266.91"}, False),  # 0.1%: a real difference
        ("plain", {"ppl": "266.97"}, {"ppl": "266.91"}, False),  # 2.2e-4
        ("cache", {"ppl": "nan"}, {"ppl": "nan"}, False),
        ("cache", {"ppl": "inf"}, {"ppl": "inf"}, False),
        ("dynamic", {"ppl": "198.41"}, {"ppl": "198.40"}, True),
        ("dynamic", {"ppl": "198.45"}, {"ppl": "198.40"}, False),  # 2.5e-4: no looser tolerance for dynamic
        ("both", {"ppl": "199.00"}, {"ppl": "198.40"}, False),
        (
            "score",
            {"logprob": ["-36.6008", "-12.5"], "ppl": "3787.86"},
            {"logprob": ["-36.6009", "-12.5"], "ppl": "3787.86"},
            True,
        ),
        ("score", {"logprob": ["-36.6108"], "ppl": "3787.86"}, {"logprob": ["-36.6009"], "ppl": "3787.86"}, False),
        ("score", {"logprob": ["-36.6008"], "ppl": "3791.66"}, {"logprob": ["-36.6009"], "ppl": "3787.86"}, False),
        (
            "score",
            {"logprob": ["-36.6008"], "ppl": "3787.86"},
            {"logprob": ["-36.6009", "-1"], "ppl": "3787.86"},
            False,
        ),  # not the same lines
        ("score", {"logprob": ["-36.6008"], "ppl": None}, {"logprob": ["-36.6009"], "ppl": "3787.86"}, False),
        ("grid", {GRID: 219.134, "dynamic": 198.41}, {GRID: 219.131, "dynamic": 198.40}, True),
        ("grid", {GRID: 232.3213, "both": 180.0}, {GRID: 232.32, "both": 180.0}, True),  # 5.7e-6 (amsrn's grid)
        ("grid", {GRID: 219.35}, {GRID: 219.131}, False),  # 1e-3
        ("grid", {GRID: 219.131, "dynamic": 198.8}, {GRID: 219.131, "dynamic": 198.40}, False),
        ("grid", {GRID: 219.131}, {GRID: 219.131, "dynamic": 198.40}, False),  # not the same points
    ],
)
def test_a_gpu_figure_passes_only_within_the_tolerance_of_the_cpu_figure(option, gpu, cpu, passed):
    assert cli_check.compare(option, gpu, cpu)[0] is passed


def scaled(option, factor):
    """An option's GPU and CPU figures, the GPU's the CPU's times ``factor`` (every figure)."""
    base = {
        "score": {"logprob": [-36.6009, -21.25], "ppl": 3787.86},
        "grid": {GRID: 219.131, "dynamic": 198.40, "both": 180.5},
    }.get(option)
    cpu = base or {"ppl": 266.91}
    gpu = {k: ([x * factor for x in v] if isinstance(v, list) else v * factor) for k, v in cpu.items()}
    return gpu, cpu


@pytest.mark.parametrize("option", cli_check.OPTIONS)
def test_one_relative_tolerance_decides_every_option(option):
    """The same RTOL for every option and every figure: 5.6e-6 (the H100's grid) and just under RTOL
    pass, just over it and 0.1% fail, on either side; the JSON's tolerances say RTOL."""
    for factor, passed in (
        (1 + 5.6e-6, True),
        (1 + 0.9 * cli_check.RTOL, True),
        (1 - 0.9 * cli_check.RTOL, True),
        (1 + 1.1 * cli_check.RTOL, False),
        (1 - 1.1 * cli_check.RTOL, False),
        (1.001, False),
    ):
        ok, diff, note = cli_check.compare(option, *scaled(option, factor))
        assert ok is passed, (factor, diff, note)
        assert diff == pytest.approx(abs(factor - 1), rel=1e-3)
    assert cli_check.RTOL == 1e-4
    assert all(f"{cli_check.RTOL:g}" in text for text in cli_check.TOLERANCES.values())
    assert set(cli_check.TOLERANCES) == set(cli_check.OPTIONS)


@pytest.mark.parametrize("option", cli_check.OPTIONS)
def test_the_tolerance_is_stated_once(option, monkeypatch):
    """Every option's verdict follows RTOL itself: a tolerance of its own (a looser one for dynamic
    evaluation, say) would not move with it."""
    monkeypatch.setattr(cli_check, "RTOL", 1e-2)
    for factor, passed in ((1 + 0.9e-2, True), (1 - 0.9e-2, True), (1 + 1.1e-2, False), (1 - 1.1e-2, False)):
        assert cli_check.compare(option, *scaled(option, factor))[0] is passed, factor


@pytest.mark.parametrize(
    "cores, threads, jobs", [(16, 1, 14), (8, 1, 6), (4, 1, 2), (2, 1, 2), (1, 1, 1), (16, 2, 7), (2, 4, 1)]
)
def test_processes_at_once_come_from_the_cores(cores, threads, jobs):
    assert cli_check.default_jobs(cores, threads) == jobs


def test_jobs_below_one_are_refused_in_one_line(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["cli_check.py", "--dry-run", "--jobs", "0"])
    with pytest.raises(SystemExit) as exit:
        cli_check.main()
    err = capsys.readouterr().err
    assert exit.value.code == 2 and "--jobs and --gpu-jobs: at least 1" in err
    assert err.strip().splitlines()[-1].startswith("cli_check.py: error: --jobs and --gpu-jobs: at least 1"), err


def plan_args(**given):
    args = dict(
        archs=["lstm", "pointer"],
        options=cli_check.OPTIONS,
        dry_run=False,
        max_update=0,
        threads=1,
        train_cap=150,
        eval_cap=150,
        dynamic_lr=cli_check.DYNAMIC_LR,
        precision=True,
    )
    return types.SimpleNamespace(**{**args, **given})


def test_the_plan_starts_the_trainings_then_the_longest_checks_each_pair_side_by_side(tmp_path):
    jobs, trains, pairs, extra = cli_check.plan(plan_args(), str(tmp_path))
    names = [j.name for j in jobs]
    assert names[:2] == ["train_lstm", "train_pointer"] and {j.kind for j in trains} == {"train"}
    assert names[2:5] == ["train_fp16", "train_amp", "train_bf16_refused"]
    checks = jobs[5:]
    assert len(checks) == 2 * len(pairs) == 2 * 2 * len(cli_check.OPTIONS)
    assert [j.name for j in checks[:4]] == ["grid_lstm_gpu", "grid_lstm_cpu", "grid_pointer_gpu", "grid_pointer_cpu"]
    assert [j.kind.rsplit("_", 1)[0] for j in checks[::4]] == cli_check.PRIORITY
    for (name, option), (gpu, cpu) in pairs.items():
        assert names.index(cpu.name) == names.index(gpu.name) + 1
        assert gpu.partner is cpu and cpu.partner is gpu
        assert [d.name for d in gpu.deps] == [d.name for d in cpu.deps] == [f"train_{name}"]  # the checkpoint only
        assert (gpu.slot, cpu.slot) == ("gpu", "cpu") and "--cpu" in cpu.argv and "--cpu" not in gpu.argv
        assert (gpu.kind, cpu.kind) == (f"{option}_gpu", f"{option}_cpu")
    dry, _, dry_pairs, dry_extra = cli_check.plan(plan_args(dry_run=True, max_update=5), str(tmp_path))
    assert all("--cpu" in j.argv and j.slot == "cpu" for j in dry if j.name != "train_bf16_refused")
    assert sorted(dry_pairs) == sorted([("lstm", o) for o in cli_check.OPTIONS] + [("pointer", "plain")])
    assert list(dry_extra) == ["--bf16"]


def sleeper(name, seconds, slot="cpu", deps=(), kind=None):  # deps: the jobs it waits for
    return cli_check.Job(name, ["sleep", str(seconds)], slot, deps, kind=kind)


def test_no_more_processes_run_at_once_than_the_limits(tmp_path):
    jobs = [sleeper(f"j{i}", 1, slot="gpu" if i < 3 else "cpu") for i in range(6)]
    t0 = time.monotonic()
    cli_check.run_jobs(jobs, {"all": 4, "gpu": 1}, 60, str(tmp_path), log=lambda *a: None)
    assert all(j.state == "done" and j.rc == 0 for j in jobs)
    events = sorted([(j.started, 1, j.slot) for j in jobs] + [(j.ended, -1, j.slot) for j in jobs])
    at_once, on_gpu, most, most_gpu = 0, 0, 0, 0
    for _, step, slot in events:
        at_once += step
        on_gpu += step * (slot == "gpu")
        most, most_gpu = max(most, at_once), max(most_gpu, on_gpu)
    assert most <= 4 and most_gpu == 1
    assert time.monotonic() - t0 >= 3  # the three GPU jobs one after another


def test_a_check_the_budget_leaves_out_is_not_run_with_its_reason(tmp_path):
    """A process is not started where less of the budget is left than its kind took (nor the other
    side of its check); one running at the budget is cut; the summary counts them as not run."""
    trains = {arch: sleeper(f"train_{arch}", 0.2, kind="train") for arch in ("lstm", "pointer")}
    pairs = {
        (arch, option): tuple(
            sleeper(f"{option}_{arch}_{side}", seconds, deps=[trains[arch]], kind=f"{option}_{side}")
            for side in ("gpu", "cpu")
        )
        for arch, option, seconds in (("lstm", "dynamic", 5), ("lstm", "cache", 30), ("pointer", "dynamic", 5))
    }
    for gpu, cpu in pairs.values():
        gpu.partner, cpu.partner = cpu, gpu
    (dynamic_gpu, dynamic_cpu), (cache_gpu, cache_cpu), (later_gpu, later_cpu) = pairs.values()
    # 3 at once: the trainings; then lstm's dynamic pair and cache_gpu; at ~5.2 s 3.8 s are left: less
    # than a dynamic process took (pointer's pair is not started), more than any took (cache_cpu is)
    jobs = [*trains.values(), dynamic_gpu, dynamic_cpu, cache_gpu, later_gpu, later_cpu, cache_cpu]
    cli_check.run_jobs(jobs, {"all": 3, "gpu": 3}, 9, str(tmp_path), log=lambda *a: None)
    assert [j.state for j in jobs] == ["done"] * 4 + ["cut", "skipped", "skipped", "cut"]
    assert later_gpu.reason.startswith("not started: 4 s of the budget left, a dynamic_gpu took 5 s at the least")
    assert later_cpu.reason == "not started: its other side dynamic_pointer_gpu skipped"
    assert cache_gpu.reason.endswith("(budget)") and cache_cpu.reason.endswith("(budget)")
    results, _, counts = cli_check.verdicts(list(trains.values()), pairs, {}, log=lambda *a: None)
    assert counts == {"pass": 0, "FAIL": 1, "not run": 2}  # lstm dynamic ran: no figure in its output
    checks = results["pointer"]["checks"]["dynamic"], results["lstm"]["checks"]["cache"]
    assert [c["verdict"] for c in checks] == ["not run", "not run"]
    assert "dynamic_pointer_gpu: not started" in checks[0]["note"] and "cut after" in checks[1]["note"]


def run_sh(*args, env=None, timeout=60):
    return subprocess.run(
        ["bash", RUN, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def test_dry_run_of_the_cli_step_on_one_arch(tmp_path):
    """run.sh --dry-run cli, narrowed to alm_lstm_small and plain eval-lm: trains it, scores valid
    twice, compares, writes cli.json, checks --bf16's one-line refusal, exits 0, counts in the summary."""
    results = tmp_path / "results"
    proc = run_sh(
        "--dry-run",
        "cli",
        timeout=300,
        env={
            "ALM_GPU_RESULTS": str(results),
            "ALM_GPU_WORK": str(tmp_path / "work"),
            "ALM_GPU_CLI_ARCHS": "lstm",
            "ALM_GPU_CLI_OPTIONS": "plain",
        },
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.load(open(results / "cli.json"))
    assert result["dry_run"] is True
    assert list(result["archs"]) == ["lstm"]
    plain = result["archs"]["lstm"]["checks"]["plain"]
    assert plain["verdict"] == "pass" and plain["gpu"]["ppl"] == plain["cpu"]["ppl"]
    assert result["precision"]["--bf16"]["verdict"] == "pass"
    assert result["summary"] == {"pass": 2, "FAIL": 0, "not run": 0}
    assert result["slots"]["jobs"] == cli_check.default_jobs(os.cpu_count())
    summary = (results / "summary.txt").read_text()
    assert "--- cli: rc=0" in summary and "pass (printed perplexity equal)" in summary
    assert "cli_check: 2 pass, 0 FAIL, 0 not run" in summary and "processes: 4 of 4 started" in summary
    assert set(result["processes"]["mean_s_by_kind"]) == {"train", "train_bf16_refused", "plain_gpu", "plain_cpu"}
