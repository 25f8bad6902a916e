"""The ``train-speed`` block: the training step against a bare nn.LSTM LM at each thread count of one
run (``train_speed.py --mode model --json benchmarks/results/cpu/train_speed_model.json``)."""
from .tables import result_json

JSON = ("cpu", "train_speed_model.json")


def block():
    result = result_json(*JSON)
    if result is None:
        return ("The training step has not been measured yet (`python -m benchmarks.train_speed --mode model "
                f"--json benchmarks/results/{'/'.join(JSON)}`).")
    by_threads = result.get("by_threads") or {result["device"]: result}
    counts = list(by_threads)
    first = by_threads[counts[0]]
    head = " | ".join(f"tokens/s, {by_threads[c]['device']} | vs {first['baseline']}" for c in counts)
    lines = [f"| model | {head} |", "|---" * (1 + 2 * len(counts)) + "|"]
    for name in first["tokens_per_s"]:
        lines.append(f"| {name} | " + " | ".join(f"{by_threads[c]['tokens_per_s'][name]:,} | "
                                                 f"{by_threads[c]['ratio'][name]:.2f}" for c in counts) + " |")
    # the table is written by this module now, no longer by the script's old --update-docs
    command = " ".join(["python -m benchmarks.train_speed", *(a for a in first["argv"] if a != "--update-docs")])
    return "\n".join(lines) + f"\n\n({first['title'].rsplit(', CPU', 1)[0]}; `{command}`)"
