"""The ``host-overhead`` block: what a fairseq training update costs on the host besides the model's
step, and its reads of device values, for each plugin measured side by side
(``python -m benchmarks.host_overhead LABEL=DIR ... --json benchmarks/results/cpu/host_overhead.json``)."""

from benchmarks.comparisons import goal

from .tables import header, result_json

JSON = ("cpu", "host_overhead.json")
# the trainer's pieces the benchmark times, and what became of each
PIECES = [
    ("seeding", "`utils.set_torch_seed` before every update", "mended: the generators seeded directly"),
    ("clip", "`clip_grad_norm_`", "mended: one `torch._foreach_norm`"),
    (
        "meters",
        "`metrics.log_*` (tensor arithmetic per aggregator)",
        "left: fairseq's meters; ours log tensors and ints, no read",
    ),
    (
        "smoothed values",
        "`agg.get_smoothed_values()` every update (unused)",
        "left: a fork of `Trainer._reduce_and_log_stats`; 6 reads",
    ),
    ("config look-ups", "`self.cfg.*` in `Trainer.train_step`", "left: a fork of `Trainer.train_step`"),
]


def block():
    result = result_json(*JSON)
    if result is None:
        return (
            "The host's share of an update has not been measured yet (`python -m benchmarks.host_overhead "
            f"--json benchmarks/results/{'/'.join(JSON)}`)."
        )
    runs = result["runs"]
    labels = list(runs)
    first, last = runs[labels[0]], runs[labels[-1]]
    lines = header(
        "case",
        *(f"host ms, {label}" for label in labels),
        f"{labels[-1]} / {labels[0]}",
        *(f"syncs (ours), {label}" for label in (labels[0], labels[-1])),
        "figures and weights",
    )
    ratios = {case: figures["host_ms"] / first["cases"][case]["host_ms"] for case, figures in last["cases"].items()}
    for case, figures in last["cases"].items():
        before = first["cases"][case]
        same = "the same" if len({runs[label]["cases"][case]["trained"] for label in labels}) == 1 else "**differ**"
        lines.append(
            f"| {case} | "
            + " | ".join(f"{runs[label]['cases'][case]['host_ms']:.2f}" for label in labels)
            + f" | {ratios[case]:.2f} | {before['syncs']} ({before['ours']}) | "
            f"{figures['syncs']} ({figures['ours']}) | {same} |"
        )
    low, high = min(ratios.values()), max(ratios.values())
    bound = goal("host-overhead", "update")
    share = "half" if bound == 0.5 else f"{bound:g}x"
    ours = max(f["ours"] for f in last["cases"].values())
    lines += [
        "",
        f"**The host's share of an update, {labels[-1]} against {labels[0]}: {low:.2f}-{high:.2f}x**; "
        + (
            f"the target of at most {share} is met. "
            if high <= bound
            else f"the target, at most {share}, is **not met** on the CPU: what is left is fairseq's trainer (below). "
        )
        + (
            f"Reads of device values of the plugin's own: {ours} an update."
            if ours
            else "The plugin reads no device value on the host in an update; the reads left are fairseq's."
        ),
    ]
    case = next(iter(last["cases"]))  # where the time goes, in the first case
    parts = [run["cases"][case]["parts_ms"] for run in (first, last)]
    lines += [
        "",
        f"Where the host time goes ({case}, ms an update, one run each):",
        "",
        f"| piece | {labels[0]} | {labels[-1]} | |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {piece} | {parts[0][key]:.2f} | {parts[1][key]:.2f} | {fate} |"
        for key, piece, fate in PIECES
        if parts[0].get(key) is not None and parts[1].get(key) is not None
    ]
    lines.append(
        f"| `isfinite` twice, `where` of two `new_tensor` (timed alone) | {first['trainer_checks_ms']:.3f} | "
        f"{last['trainer_checks_ms']:.3f} | left: a fork of `Trainer.train_step`; 2 reads, 2 blocking "
        "copies on a GPU |"
    )
    remaining = sorted({where.rsplit(" ", 1)[0] for where in last["cases"][case]["where"]})
    return "\n".join(lines) + (
        f"\n\n(CPU, one thread, {', '.join(labels)} side by side; {last['updates']} updates a run, medians of "
        f"{last['repeats']} runs interleaved; {parts[1].get('config look-ups (count)'):.0f} config look-ups an update; "
        f"the reads left: {', '.join(remaining)}; `{result['command']}`)"
    )
