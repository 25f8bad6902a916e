"""Run fairseq's console scripts the way a user does, from the repository root."""
import json
import os
import re
import subprocess
import sys

from conftest import ROOT

TRAIN_COMMON = ["--user-dir", "alm_plugin", "--task", "sentence_language_modeling", "--cpu",
                "--log-format", "json", "--no-progress-bar", "--num-workers", "0"]


def run(tool, *args, check=True):
    """Run a fairseq CLI entry point in a fresh process; returns (returncode, stdout+stderr)."""
    code = f"import sys; from fairseq_cli.{tool} import cli_main; sys.argv[0] = 'fairseq-{tool}'; cli_main()"
    proc = subprocess.run([sys.executable, "-c", code, *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    output = proc.stdout + proc.stderr
    if check and proc.returncode != 0:
        raise AssertionError(f"fairseq-{tool} failed ({proc.returncode}):\n{output[-4000:]}")
    return proc.returncode, output


def json_records(output, kind):
    """The JSON log lines of one kind (train_inner, train, valid)."""
    records = []
    for line in output.splitlines():
        match = re.search(r"\| " + kind + r" \| (\{.*\})$", line)
        if match:
            records.append(json.loads(match.group(1)))
    return records


def eval_lm_result(output):
    match = re.search(r"Loss \(base 2\): ([\d.]+), Perplexity: ([\d.]+)", output)
    assert match, output[-3000:]
    return float(match.group(1)), float(match.group(2))
