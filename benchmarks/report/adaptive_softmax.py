"""The ``adaptive-softmax`` block: what the tied adaptive softmax saves in a training step and in
evaluation (``benchmarks/output_layer_speed.py``'s JSON) and what it costs in quality (the PTB stream
LSTM with it against the same row with the full softmax)."""
from benchmarks.rows import PTB

from .statements import met, pct
from .tables import label, result_json, speed_table, threads

SPEED_GOAL, POINTER_GOAL, QUALITY_GOAL = 1.5, 0.85, 3.0  # x PTB full step; x alm_lstm; % test ppl


def threads_table(speed, kind):
    counts = sorted(speed["by_threads"], key=int)
    first = speed["by_threads"][counts[0]][kind]
    table = speed_table("run", [(f"{threads(t)} | vs baseline", speed["by_threads"][t][kind]) for t in counts])
    return table + f"\n\n(baseline: {first['baseline']}; {first['title'].split(', CPU')[0]})"


def speed_statement(speed):
    lines = []
    for t in sorted(speed["by_threads"], key=int):
        ratio = speed["by_threads"][t]["train"]["ratio"]
        tied = {n: r for n, r in ratio.items() if n.startswith("WT2") and "(tied)" in n}
        best = max(tied, key=tied.get)
        full = ratio["WT2 alm_lstm, full softmax"]
        pointer = {n: r / ratio[base] for n, r, base in (
            (n, r, "PTB alm_lstm, adaptive 2000 (tied)" if "adaptive" in n else "PTB alm_lstm, full softmax")
            for n, r in ratio.items() if "pointer" in n)}
        evaluation = speed["by_threads"][t]["eval"]["ratio"]
        lines.append(
            f"- {threads(t)}: a WikiText-2 step with the full softmax runs at {full:.2f}x a PTB "
            f"full-softmax step; with the tied default (2000,10000) at "
            f"{ratio['WT2 alm_lstm, adaptive 2000,10000 (tied)']:.2f}x (goal >= {SPEED_GOAL}x: "
            f"{met(ratio['WT2 alm_lstm, adaptive 2000,10000 (tied)'] >= SPEED_GOAL)}), best tied "
            f"{best.split(', ')[1]} {tied[best]:.2f}x, untied {ratio['WT2 alm_lstm, adaptive 2000,10000 (untied)']:.2f}x. "
            "The pointer's step against `alm_lstm` with the same output layer: "
            + ", ".join(f"{n.split(', ')[1]} {r:.2f}x" for n, r in pointer.items())
            + f" (goal >= {POINTER_GOAL}x: {met(min(pointer.values()) >= POINTER_GOAL)}). "
            f"Evaluation on WikiText-2 (1 x 35 chunks, the whole distribution formed): adaptive "
            f"{evaluation['WT2 eval, adaptive 2000,10000 (tied)']:.2f}x the full softmax.")
    return "\n".join(lines)


def quality(results):
    full, adaptive = results.get("lstm-stream"), results.get("lstm-stream-adaptive")
    if adaptive is None or full is None:
        return "The PTB row with the adaptive softmax (`lstm-stream-adaptive`) has not finished yet."
    if PTB.rows["lstm-stream"].before_the_dropout_fix(full) != PTB.rows["lstm-stream-adaptive"].before_the_dropout_fix(adaptive):
        stale = "lstm-stream" if PTB.rows["lstm-stream"].before_the_dropout_fix(full) else "lstm-stream-adaptive"
        return (f"The adaptive softmax's PTB rows are of two dropout layouts until `{stale}` is retrained "
                f"(`python -m benchmarks.table --corpus ptb --rows {stale} --threads 1`): not compared.")
    lines = ["| row | valid ppl | test ppl | test + neural cache | params | train min | tokens/s |",
             "|---|---|---|---|---|---|---|"]
    for name, r in (("lstm-stream", full), ("lstm-stream-adaptive", adaptive)):
        lines.append(f"| `{name}`: {label(PTB, name, r)} | {r['valid_ppl']:.1f} | {r['test_ppl']:.1f} | "
                     f"{r.get('test_ppl_cache', float('nan')):.1f} | {r['params'] / 1e6:.2f}M | {r['train_minutes']:.0f} | "
                     f"{r['train_tokens_per_s']:,} |")
    change = pct(adaptive["test_ppl"], full["test_ppl"])
    verdict = "within" if change <= QUALITY_GOAL else "outside"
    lines += ["", f"On full PTB, same recipe and budget (10 epochs, 20 streams x 35 words, one thread), the tied "
                  f"adaptive softmax changes the stream LSTM's test perplexity by {change:+.1f}% ({full['test_ppl']:.1f} "
                  f"-> {adaptive['test_ppl']:.1f}): {verdict} the {QUALITY_GOAL:.0f}% goal. Rows recorded at commits "
                  f"{full['commit']} and {adaptive['commit']}; their tokens/s were measured beside other work on the "
                  "machine (the speed table above is the side-by-side measurement)."]
    return "\n".join(lines)


def block(results):
    """``results``: every full-PTB row's JSON (``PTB.load()``)."""
    speed = result_json("cpu", "output_layer_speed.json")
    parts = []
    if speed is not None:
        command = "python -m benchmarks.output_layer_speed " + " ".join(speed["argv"])
        parts += ["Training step (forward, `attention_cross_entropy`, backward, clip, SGD), `alm_lstm` 2 x 200, "
                  "20 streams x 35 words:", "", threads_table(speed, "train"), "",
                  "Evaluation, WikiText-2 valid as one stream:", "", threads_table(speed, "eval"), "",
                  speed_statement(speed), "", f"(`{command}`)"]
    else:
        parts.append("The speed benchmark has not run yet (`python -m benchmarks.output_layer_speed`).")
    parts += ["", quality(results)]
    return "\n".join(parts)
