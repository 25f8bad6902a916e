"""The ``adaptive-softmax`` block: what the tied adaptive softmax saves in a training step and in
evaluation (``benchmarks/output_layer_speed.py``'s JSON) and what it costs in quality (the PTB stream
LSTM with it against the same row with the full softmax)."""

from benchmarks.comparisons import goal
from benchmarks.rows import PTB

from .statements import met, pct
from .tables import PARAMS, cost, header, label, result_json, speed_table, stale, table_command, threads

DEFAULT = "WT2 alm_lstm, adaptive 2000,10000"  # the rows' cutoffs, " (tied)" and " (untied)"


def threads_table(speed, kind):
    counts = sorted(speed["by_threads"], key=int)
    first = speed["by_threads"][counts[0]][kind]
    table = speed_table("run", [(f"{threads(t)} | vs baseline", speed["by_threads"][t][kind]) for t in counts])
    return table + f"\n\n(baseline: {first['baseline']}; {first['title'].split(', CPU')[0]})"


def speed_statement(speed):
    speed_goal, pointer_goal = goal("adaptive-softmax", "speed"), goal("adaptive-softmax", "pointer")
    lines = []
    for t in sorted(speed["by_threads"], key=int):
        ratio = speed["by_threads"][t]["train"]["ratio"]
        tied = {n: r for n, r in ratio.items() if n.startswith("WT2") and "(tied)" in n}
        best, default = max(tied, key=tied.get), ratio[f"{DEFAULT} (tied)"]
        # the pointer's step against alm_lstm's with the same output layer
        pointer = {
            n: r / ratio["PTB alm_lstm, adaptive 2000 (tied)" if "adaptive" in n else "PTB alm_lstm, full softmax"]
            for n, r in ratio.items()
            if "pointer" in n
        }
        lines.append(
            f"- {threads(t)}: a WikiText-2 step with the full softmax runs at "
            f"{ratio['WT2 alm_lstm, full softmax']:.2f}x "
            f"a PTB full-softmax step; with the tied default (2000,10000) at {default:.2f}x (goal >= {speed_goal}x: "
            f"{met(default >= speed_goal)}), best tied {best.split(', ')[1]} {tied[best]:.2f}x, untied "
            f"{ratio[f'{DEFAULT} (untied)']:.2f}x. The pointer's step against `alm_lstm` with the same output layer: "
            + ", ".join(f"{n.split(', ')[1]} {r:.2f}x" for n, r in pointer.items())
            + f" (goal >= {pointer_goal}x: {met(min(pointer.values()) >= pointer_goal)}). Evaluation on WikiText-2 "
            f"(1 x 35 chunks, the whole distribution formed): adaptive "
            f"{speed['by_threads'][t]['eval']['ratio']['WT2 eval, adaptive 2000,10000 (tied)']:.2f}x the full softmax."
        )
    return "\n".join(lines)


def quality(results):
    pair = {n: results.get(n) for n in ("lstm-stream", "lstm-stream-adaptive")}
    full, adaptive = pair.values()
    if adaptive is None or full is None:
        return "The PTB row with the adaptive softmax (`lstm-stream-adaptive`) has not finished yet."
    old = [n for n, r in pair.items() if stale(PTB, n, r)]
    if len(old) == 1:
        return (
            f"The adaptive softmax's PTB rows are of two dropout layouts until `{old[0]}` is retrained "
            f"({table_command(PTB.name, old)}): not compared."
        )
    lines = header("row", "valid ppl", "test ppl", "test + neural cache", PARAMS, "train min", "tokens/s")
    lines += [
        f"| `{n}`: {label(PTB, n, r)} | {r['valid_ppl']:.1f} | {r['test_ppl']:.1f} | "
        f"{r.get('test_ppl_cache', float('nan')):.1f} | {cost(r)} | {r['train_tokens_per_s']:,} |"
        for n, r in pair.items()
    ]
    change = pct(adaptive["test_ppl"], full["test_ppl"])
    quality_goal = goal("adaptive-softmax", "quality")
    lines += [
        "",
        f"On full PTB, same recipe and budget (10 epochs, 20 streams x 35 words, one thread), the tied "
        f"adaptive softmax changes the stream LSTM's test perplexity by {change:+.1f}% ({full['test_ppl']:.1f} "
        f"-> {adaptive['test_ppl']:.1f}): {'within' if change <= quality_goal else 'outside'} the "
        f"{quality_goal:.0f}% goal. Rows recorded at commits {full['commit']} and {adaptive['commit']}; their "
        "tokens/s were measured beside other work on the machine (the speed table above is the side-by-side "
        "measurement).",
    ]
    return "\n".join(lines)


def block(results):
    """``results``: every full-PTB row's JSON (``PTB.load()``)."""
    if (speed := result_json("cpu", "output_layer_speed.json")) is None:
        return "The speed benchmark has not run yet (`python -m benchmarks.output_layer_speed`).\n\n" + quality(results)
    command = "python -m benchmarks.output_layer_speed " + " ".join(speed["argv"])
    return "\n".join(
        [
            "Training step (forward, `attention_cross_entropy`, backward, clip, SGD), `alm_lstm` 2 x 200, "
            "20 streams x 35 words:",
            "",
            threads_table(speed, "train"),
            "",
            "Evaluation, WikiText-2 valid as one stream:",
            "",
            threads_table(speed, "eval"),
            "",
            speed_statement(speed),
            "",
            f"(`{command}`)",
            "",
            quality(results),
        ]
    )
