"""The ``train-speed`` block: the training step against a bare nn.LSTM LM at each thread count of one
run (``train_speed.py --mode model --json benchmarks/results/cpu/train_speed_model.json``)."""

from .statements import met
from .tables import command, machine, result_json, speed_table

JSON = ("cpu", "train_speed_model.json")
# the speed each model's step should keep against the bare LM's: the cost its formula adds, no more
TARGETS = {"alm_lstm": 0.95, "attentive_lm single": 0.85, "attentive_lm combined": 0.75, "amsrn tied": 0.85}


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
    goals = "; ".join(
        f"{name} >= {goal}: "
        + ", ".join(
            f"{r['ratio'][name]:.3f} ({met(r['ratio'][name] >= goal)}) on {machine(r['device'])}"
            for r in by_threads.values()
        )
        for name, goal in TARGETS.items()
        if name in first["ratio"]
    )
    title = first["title"].rsplit(", CPU", 1)[0]
    return table + f"\n\nThe targets against `{first['baseline']}`: {goals}.\n\n({title}; {how})"
