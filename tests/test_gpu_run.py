"""benchmarks/gpu/run.sh, the one prepared command for a lent GPU machine: the arguments it takes
and refuses (its cli step, benchmarks/gpu/cli_check.py, and that step's dry run: test_cli_check.py)."""
import json
import os
import subprocess

import pytest

from conftest import ROOT

RUN = os.path.join(ROOT, "benchmarks", "gpu", "run.sh")


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
