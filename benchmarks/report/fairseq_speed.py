"""The ``fairseq-speed`` block: whole ``fairseq-train`` runs of our models beside fairseq's ``lstm_lm``
at 2 x 650 on PTB, on the CPU and on a GPU (``train_speed.py --mode fairseq --json ...``), each machine
measured side by side in one run."""

from .tables import command, header, machine, result_json

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
    """{model: {precision: (tokens/s, ratio to the baseline model at that precision)}}."""
    table = {}
    for name, speed in result["tokens_per_s"].items():
        model, _, precision = name.rpartition(" ")
        if precision not in PRECISIONS:
            model, precision = name, "fp32"
        table.setdefault(model, {})[precision] = (speed, result["ratio_same_precision"][name])
    return table


def speed_table(result):
    table = by_precision(result)
    precisions = [p for p in PRECISIONS if any(p in row for row in table.values())]
    baseline = next(iter(table))
    lines = header("model", *(f"tokens/s, {p} | vs {baseline}" for p in precisions))
    for model, row in table.items():
        lines.append(
            f"| {model} | "
            + " | ".join(f"{row[p][0]:,} | {row[p][1]:.2f}" if p in row else "– | –" for p in precisions)
            + " |"
        )
    how = command("benchmarks.train_speed", result["argv"])
    return "\n".join(lines) + f"\n\n({machine(result['title'])}; torch {result['torch']}; {how})"


def block():
    parts = []
    for parts_of_json, to_measure in RUNS:
        result = result_json(*parts_of_json)
        parts.append(
            f"{machine(result['device'])}:\n\n{speed_table(result)}"
            if result is not None
            else f"Not measured yet on the {parts_of_json[0].upper()} (`{to_measure}`)."
        )
    return "\n\n".join(parts)
