"""The ``train-speed`` block: the training step against a bare nn.LSTM LM at each thread count of one
run (``train_speed.py --mode model --json benchmarks/results/cpu/train_speed_model.json``)."""

from benchmarks.comparisons import goals

from .statements import met
from .tables import command, machine, result_json, speed_table

JSON = ("cpu", "train_speed_model.json")


def block():
    result = result_json(*JSON)
    if result is None:
        return (
            "The training step has not been measured yet (`python -m benchmarks.train_speed --mode model "
            f"--json benchmarks/results/{'/'.join(JSON)}`)."
        )
    by_threads = result.get("by_threads") or {result["device"]: result}
    first = next(iter(by_threads.values()))
    table = speed_table("model", [(f"{machine(r['device'])} | vs {first['baseline']}", r) for r in by_threads.values()])
    # the recorded command without --update-docs, which the script does not take
    how = command("benchmarks.train_speed", [a for a in first["argv"] if a != "--update-docs"])
    stated = "; ".join(
        f"{name} >= {goal}: "
        + ", ".join(
            f"{r['ratio'][name]:.3f} ({met(r['ratio'][name] >= goal)}) on {machine(r['device'])}"
            for r in by_threads.values()
        )
        for name, goal in goals("train-speed").items()
        if name in first["ratio"]
    )
    title = first["title"].rsplit(", CPU", 1)[0]
    return table + f"\n\nThe targets against `{first['baseline']}`: {stated}.\n\n({title}; {how})"
