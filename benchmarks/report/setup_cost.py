"""The README's ``setup-cost`` block (what the two set-up commands cost) and docs/tools.md's ``installs``
block (``scripts/install.sh`` into a fresh venv of each Python), from ``benchmarks/results/cpu/setup_cost.json``."""

import os

from benchmarks.result_files import read_result
from benchmarks.rows import ROOT

from .tables import header

COST = os.path.join(ROOT, "benchmarks", "results", "cpu", "setup_cost.json")


def minutes(seconds):
    return f"{seconds // 60:.0f} min {seconds % 60:.0f} s"


def block(path=COST):
    r = read_result(path)
    lines = header("command", "wall", "CPU-s (user + sys)", "disk", "measured")
    for run in r["commands"]:
        lines.append(
            f"| `{run['command']}` | {minutes(run['wall_seconds'])} | {run['cpu_seconds']:,.0f} | {run['disk']} | "
            f"a fresh clone of {run['commit']}, {run['machine']} |"
        )
    return "\n".join(lines)


def installs(path=COST):
    r = read_result(path)
    lines = header("Python", "wall", "CPU-s (user + sys)", "venv", "torch", "fairseq-fixed", "measured")
    for run in r["installs"]:
        lines.append(
            f"| {run['python']} | {minutes(run['wall_seconds'])} | {run['cpu_seconds']:,.0f} | "
            f"{run['venv_mb'] / 1000:.1f} GB | {run['torch']} | {run['fairseq_fixed']} | "
            f"a fresh venv, a clone of {run['commit']}, {run['machine']} |"
        )
    return "\n".join(lines)
