"""The ``gpu-timing`` block: fairseq-train updates timed on a GPU at 2 x 650 with the paper's batch
(``host_overhead.py --device cuda``): the host mends before and after, CUDA graphs against eager
updates, the data loader's workers. Each file's runs are one machine's; a file is not set against
another."""

from .tables import header, result_json

# each file, and what its runs differ in
FILES = (
    ("update_timing_h100_cut.json", "the plugin before its host mends, without the syncs, and after them"),
    ("update_timing_graphs_h100.json", "eager updates against `--cuda-graphs`"),
    ("update_timing_h100_workers.json", "`--num-workers` 1, 0 and 2"),
)


def cell(run, case, key, form):
    """A case's figure in a run, a dash where a cut run has none."""
    value = run["cases"].get(case, {}).get(key)
    return "–" if value is None else format(value, form)


def timing(name, differ):
    result = result_json("gpu", name)
    if result is None:
        return f"`benchmarks/results/gpu/{name}`: not measured."
    runs = result["runs"]
    labels, first = list(runs), next(iter(runs.values()))
    cases = list(first["cases"])
    lines = header(
        "case", *(f"{label}{'' if runs[label].get('complete', True) else ' (cut)'}: ms an update | "
                  "the task's step, ms | tokens/s" for label in labels)
    )  # fmt: skip
    for case in cases:
        lines.append(
            f"| {case} | "
            + " | ".join(
                f"{cell(runs[label], case, 'update_ms', '.2f')} | {cell(runs[label], case, 'task_ms', '.2f')} | "
                f"{cell(runs[label], case, 'tokens_per_s', ',')}"
                for label in labels
            )
            + " |"
        )
    against = []
    for label in labels[1:]:
        ratios = [
            runs[label]["cases"][case]["update_ms"] / first["cases"][case]["update_ms"]
            for case in cases
            if case in runs[label]["cases"]
        ]
        if ratios:
            against.append(f"{label} took {min(ratios):.2f}-{max(ratios):.2f}x {labels[0]}'s time")
    machines = sorted({run["device"] for run in runs.values()})
    repeats = sorted({run["repeats"] for run in runs.values()})
    return "\n".join(lines) + (
        f"\n\n{differ[0].upper()}{differ[1:]} ({name}; {'; '.join(machines)}; torch {first['torch']}; "
        f"{first['updates']} updates a run, the median update of "
        + ("one run each; " if repeats == [1] else f"{' or '.join(map(str, repeats))} runs each; ")
        + ", ".join(f"{label} = {run['plugin']}" for label, run in runs.items())
        + (f"; `{result['command']}`" if "command" in result else "")
        + f"). An update: {'; '.join(against)}"
        + (
            ", from one run each: no spread was measured, so a difference of some percent is no firm ranking."
            if repeats == [1]
            else "."
        )
    )


def block():
    return "\n\n".join(timing(name, differ) for name, differ in FILES)
