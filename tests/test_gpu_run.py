"""benchmarks/gpu/run.sh, the one prepared command for a lent GPU machine, and its cli step
(benchmarks/gpu/cli_check.py): the arguments it takes and refuses, the verdicts on a pair of
figures, and the cli step's dry run (both sides --cpu) on one arch and one option (~40 s)."""
import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT

RUN = os.path.join(ROOT, "benchmarks", "gpu", "run.sh")
sys.path.insert(0, os.path.join(ROOT, "benchmarks", "gpu"))
import cli_check  # noqa: E402


def run_sh(*args, env=None, timeout=60):
    return subprocess.run(["bash", RUN, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


@pytest.mark.parametrize("args, message", [
    (["install", "bogus"], "unknown step bogus"),
    (["--dry-run", "--fast", "cli"], "unknown option --fast"),
    (["--dry-run"], "usage: bash benchmarks/gpu/run.sh"),
])
def test_run_sh_refuses_what_it_does_not_know_before_doing_anything(tmp_path, args, message):
    proc = run_sh(*args, env={"ALM_GPU_RESULTS": str(tmp_path / "results"), "ALM_GPU_WORK": str(tmp_path / "work")})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr
    assert not os.path.exists(tmp_path / "results") and not os.path.exists(tmp_path / "work")


def test_run_sh_help_names_the_steps_and_the_carry_list():
    proc = run_sh("--help")
    assert proc.returncode == 0
    for text in ("install", "tests", "cli", "speed", '[".whl", ".gpu-data"]',
                 "bash benchmarks/gpu/run.sh install tests cli speed", "--dry-run"):
        assert text in proc.stdout


@pytest.mark.parametrize("option, gpu, cpu, passed", [
    ("plain", {"ppl": "266.91"}, {"ppl": "266.91"}, True),
    ("plain", {"ppl": "266.92"}, {"ppl": "266.91"}, False),  # to the printed digits
    ("cache", {"ppl": "nan"}, {"ppl": "nan"}, False),
    ("dynamic", {"ppl": "198.45"}, {"ppl": "198.40"}, True),  # within 0.1%
    ("both", {"ppl": "199.00"}, {"ppl": "198.40"}, False),
    ("score", {"logprob": ["-36.6008", "-12.5"], "ppl": "3787.86"},
     {"logprob": ["-36.6009", "-12.5"], "ppl": "3787.86"}, True),
    ("score", {"logprob": ["-36.6108"], "ppl": "3787.86"}, {"logprob": ["-36.6009"], "ppl": "3787.86"}, False),
    ("grid", {"cache N=100 theta=0.3 lambda=0.1": 219.134, "dynamic": 198.41},
     {"cache N=100 theta=0.3 lambda=0.1": 219.131, "dynamic": 198.40}, True),
    ("grid", {"cache N=100 theta=0.3 lambda=0.1": 219.144}, {"cache N=100 theta=0.3 lambda=0.1": 219.131}, False),
])
def test_a_gpu_figure_passes_only_where_it_equals_the_cpu_figure(option, gpu, cpu, passed):
    assert cli_check.compare(option, gpu, cpu)[0] is passed


def test_dry_run_of_the_cli_step_on_one_arch(tmp_path):
    """run.sh --dry-run cli, narrowed to alm_lstm_small and plain eval-lm: trains it, scores valid
    twice, compares, writes cli.json, checks --bf16's one-line refusal, exits 0."""
    results = tmp_path / "results"
    proc = run_sh("--dry-run", "cli", timeout=300,
                  env={"ALM_GPU_RESULTS": str(results), "ALM_GPU_WORK": str(tmp_path / "work"),
                       "ALM_GPU_CLI_ARCHS": "lstm", "ALM_GPU_CLI_OPTIONS": "plain"})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.load(open(results / "cli.json"))
    assert result["dry_run"] is True
    assert list(result["archs"]) == ["lstm"]
    plain = result["archs"]["lstm"]["checks"]["plain"]
    assert plain["verdict"] == "pass" and plain["gpu"]["ppl"] == plain["cpu"]["ppl"]
    assert result["precision"]["--bf16"]["verdict"] == "pass"
    assert result["summary"]["FAIL"] == 0
    summary = (results / "summary.txt").read_text()
    assert "--- cli: rc=0" in summary and "pass (printed perplexity equal)" in summary
