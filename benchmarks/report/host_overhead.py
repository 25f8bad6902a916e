"""The ``host-overhead`` block: what a fairseq training update costs on the host besides the model's
step, and its reads of device values, for each plugin measured side by side
(``python -m benchmarks.host_overhead LABEL=DIR ... --json benchmarks/results/cpu/host_overhead.json``)."""
from .tables import result_json

JSON = ("cpu", "host_overhead.json")
# the trainer's pieces the benchmark times, and what became of each (issue 63)
PIECES = [
    ("seeding", "`utils.set_torch_seed` before every update", "mended: the generators seeded directly"),
    ("clip", "`clip_grad_norm_`", "mended: one `torch._foreach_norm`"),
    ("meters", "`metrics.log_*` (tensor arithmetic per aggregator)", "left: fairseq's meters; ours log tensors and ints, no read"),
    ("smoothed values", "`agg.get_smoothed_values()` every update (unused)", "left: a fork of `Trainer._reduce_and_log_stats`; 6 reads"),
    ("config look-ups", "`self.cfg.*` in `Trainer.train_step`", "left: a fork of `Trainer.train_step`"),
]


def block():
    result = result_json(*JSON)
    if result is None:
        return ("The host's share of an update has not been measured yet (`python -m benchmarks.host_overhead "
                f"--json benchmarks/results/{'/'.join(JSON)}`).")
    runs = result["runs"]
    labels = list(runs)
    first, last = labels[0], labels[-1]
    lines = ["| case | " + " | ".join(f"host ms, {label}" for label in labels) + f" | {last} / {first} | "
             + " | ".join(f"syncs (ours), {label}" for label in (first, last)) + " | figures and weights |",
             "|---" * (len(labels) + 5) + "|"]
    for case, figures in runs[last]["cases"].items():
        before = runs[first]["cases"][case]
        same = "the same" if len({runs[label]["cases"][case]["trained"] for label in labels}) == 1 else "**differ**"
        lines.append(f"| {case} | " + " | ".join(f"{runs[label]['cases'][case]['host_ms']:.2f}" for label in labels)
                     + f" | {figures['host_ms'] / before['host_ms']:.2f} | {before['syncs']} ({before['ours']}) | "
                     f"{figures['syncs']} ({figures['ours']}) | {same} |")
    ratios = sorted(f["host_ms"] / runs[first]["cases"][c]["host_ms"] for c, f in runs[last]["cases"].items())
    ours = max(f["ours"] for f in runs[last]["cases"].values())
    lines += ["", f"**The host's share of an update, {last} against {first}: {ratios[0]:.2f}-{ratios[-1]:.2f}x**; "
              + ("the target of at most half is met. " if ratios[-1] <= 0.5 else
                 "the target of issue 63, at most half, is **not met** on the CPU: what is left is fairseq's trainer "
                 "(below). ")
              + (f"Reads of device values of the plugin's own: {ours} an update." if ours else
                 "The plugin reads no device value on the host in an update; the reads left are fairseq's.")]
    case = next(iter(runs[last]["cases"]))
    lines += ["", f"Where the host time goes ({case}, ms an update, one run each):", "",
              f"| piece | {first} | {last} | |", "|---|---|---|---|"]
    for key, piece, fate in PIECES:
        values = [runs[label]["cases"][case]["parts_ms"].get(key) for label in (first, last)]
        if None in values:
            continue
        lines.append(f"| {piece} | {values[0]:.2f} | {values[1]:.2f} | {fate} |")
    lookups = runs[last]["cases"][case]["parts_ms"].get("config look-ups (count)")
    lines.append(f"| `isfinite` twice, `where` of two `new_tensor` (timed alone) | {runs[first]['trainer_checks_ms']:.3f} | "
                 f"{runs[last]['trainer_checks_ms']:.3f} | left: a fork of `Trainer.train_step`; 2 reads, 2 blocking "
                 "copies on a GPU |")
    remaining = sorted({where.rsplit(" ", 1)[0] for where in runs[last]["cases"][case]["where"]})
    return "\n".join(lines) + (
        f"\n\n(CPU, one thread, {', '.join(labels)} side by side; {runs[last]['updates']} updates a run, medians of "
        f"{runs[last]['repeats']} runs interleaved; {lookups:.0f} config look-ups an update; the reads left: "
        f"{', '.join(remaining)}; "
        f"`{result['command']}`)")
