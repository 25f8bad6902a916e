"""The ``fairseq-speed`` block: whole ``fairseq-train`` runs of our models beside fairseq's ``lstm_lm``
at 2 x 650 on PTB, on the CPU and on a GPU (``train_speed.py --mode fairseq --json ...``), each machine
measured side by side in one run."""

from .tables import command, machine, result_json, speed_table

# the JSON of each machine, and the command that writes it
RUNS = (
    (
        ("cpu", "train_speed_fairseq.json"),
        "python -m benchmarks.train_speed --data data-bin/ptb --threads 1 --updates 50 --repeats 2 --json "
        "benchmarks/results/cpu/train_speed_fairseq.json",
    ),
    (
        ("gpu", "train_speed_fairseq.json"),
        "bash benchmarks/gpu/run.sh fairseq-speed",
    ),
)
PRECISIONS = ("fp32", "bf16", "fp16")


def by_precision(result):
    """The run's figures split by precision, each as the shared speed table reads them:
    ``{precision: {"tokens_per_s": {model: ...}, "ratio": {model: ratio to the baseline at that precision}}}``."""
    columns = {}
    for name, speed in result["tokens_per_s"].items():
        model, _, precision = name.rpartition(" ")
        if precision not in PRECISIONS:
            model, precision = name, "fp32"
        column = columns.setdefault(precision, {"tokens_per_s": {}, "ratio": {}})
        column["tokens_per_s"][model] = speed
        column["ratio"][model] = result["ratio_same_precision"][name]
    return columns


def table(result):
    columns = by_precision(result)
    baseline = next(iter(next(iter(columns.values()))["tokens_per_s"]))
    how = command("benchmarks.train_speed", result["argv"])
    return speed_table("model", [(f"{p} | vs {baseline}", f) for p, f in columns.items()]) + (
        f"\n\n({machine(result['title'])}; torch {result['torch']}; {how})"
    )


def block():
    parts = []
    for parts_of_json, to_measure in RUNS:
        result = result_json(*parts_of_json)
        parts.append(
            f"{machine(result['device'])}:\n\n{table(result)}"
            if result is not None
            else f"Not measured yet on the {parts_of_json[0].upper()} (`{to_measure}`)."
        )
    return "\n\n".join(parts)
