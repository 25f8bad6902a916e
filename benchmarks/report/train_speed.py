"""The ``train-speed`` block: the training step against a bare nn.LSTM LM at each thread count of one
run (``train_speed.py --mode model --json benchmarks/results/cpu/train_speed_model.json``)."""

from .tables import result_json, speed_table

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
    table = speed_table("model", [(f"{r['device']} | vs {first['baseline']}", r) for r in by_threads.values()])
    # the table is written by this module now, no longer by the script's old --update-docs
    command = " ".join(["python -m benchmarks.train_speed", *(a for a in first["argv"] if a != "--update-docs")])
    return table + f"\n\n({first['title'].rsplit(', CPU', 1)[0]}; `{command}`)"
