"""The ``gpu-timing`` block: fairseq-train updates timed on a GPU at 2 x 650 with the paper's batch
(``host_overhead.py --device cuda``), each file's runs side by side on one machine: the host mends
before and after, CUDA graphs against eager updates, the data loader's workers."""

from .tables import header, result_json

# each file, and what its runs differ in
FILES = (
    ("update_timing_h100_cut.json", "the plugin before its host mends, without the syncs, and after them"),
    ("update_timing_graphs_h100.json", "eager updates against `--cuda-graphs`"),
    ("update_timing_h100_workers.json", "`--num-workers` 1, 0 and 2"),
)


def timing(name, differ):
    result = result_json("gpu", name)
    if result is None:
        return f"`benchmarks/results/gpu/{name}`: not measured."
    runs = result["runs"]
    labels, first = list(runs), next(iter(runs.values()))
    lines = header("case", *(f"{label}: ms an update | tokens/s" for label in labels))
    for case in first["cases"]:
        lines.append(
            f"| {case} | "
            + " | ".join(
                f"{runs[label]['cases'][case]['update_ms']:.2f} | {runs[label]['cases'][case]['tokens_per_s']:,}"
                for label in labels
            )
            + " |"
        )
    last = runs[labels[-1]]
    ratios = [first["cases"][case]["update_ms"] / last["cases"][case]["update_ms"] for case in first["cases"]]
    plugins = ", ".join(f"{label} = {run['plugin']}" for label, run in runs.items())
    return "\n".join(lines) + (
        f"\n\n{differ.capitalize()} ({name}; {first['device']}, torch {first['torch']}, "
        f"{first['updates']} updates a run, {first['repeats']} run(s) each; {plugins}). "
        f"An update of {labels[-1]} against {labels[0]}: {min(ratios):.2f}-{max(ratios):.2f}x as fast."
        + (f" (`{result['command']}`)" if "command" in result else "")
    )


def block():
    return "\n\n".join(timing(name, differ) for name, differ in FILES)
