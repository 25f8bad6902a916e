"""The ``wikitext-2`` block: the Attentive LM paper's Table 2 at our size. Our rows beside the
paper's, the statement of each goal (attention, document streams, the cache, dynamic evaluation
and where its grid may be too narrow, the pointer, fairseq's LSTM) and the settings' choices."""

from benchmarks.comparisons import goals
from benchmarks.grid_edge import KINDS, edge_sides, picks
from benchmarks.rows import WIKITEXT2, WIKITEXT2_PAPER

from .statements import compared, gain, gate_note, head, met, pct, span
from .tables import (
    OPTIONS,
    PARAMS,
    before_the_fix_note,
    cell,
    cost,
    header,
    label,
    one_layout,
    result_json,
    table_command,
    unlogged,
)
from .wikitext_2_choices import cutoff_note, pointer_loss_note


def table(results):
    lines = header(
        "row",
        "reads",
        "valid ppl",
        "test ppl",
        "+ cache",
        "+ dynamic eval",
        "+ both",
        "best epoch",
        PARAMS,
        "train min",
        "tokens/s",
        "the paper's valid / test",
    )
    for name in (n for n in WIKITEXT2.rows if n in results):  # a row not run: named below with its command
        r = results[name]
        lines.append(
            f"| {label(WIKITEXT2, name, r)} | {WIKITEXT2.rows[name].reading} | {r['valid_ppl']:.1f} | "
            f"**{r['test_ppl']:.1f}** | "
            + " | ".join(cell(r, f"test_ppl{s}") for _, s in OPTIONS)
            + f" | {r.get('best_epoch', '?')}/{r['epochs']}{unlogged(r)} | {cost(r)} | "
            f"{r['train_tokens_per_s'] or '–'} | {WIKITEXT2.paper.get(name, '')} |"
        )
    if queued := [name for name in WIKITEXT2.rows if name not in results]:
        lines.append(
            f"\nQueued, not in the table: {'; '.join(WIKITEXT2.rows[n].description for n in queued)} "
            f"({table_command(WIKITEXT2.name, queued)}; each costs about a finished row's training and "
            "evaluation minutes, below)."
        )
    return "\n".join(lines)


def paper_table():
    return "\n".join(
        header("the paper's Table 2 (Salton et al. 2017, as printed)", "params", "valid", "test")
        + [f"| {' | '.join(system)} |" for system in WIKITEXT2_PAPER]
    )


def best_option(r):
    """The lowest test ppl a row reaches and with what: (ppl, how)."""
    options = {
        "alone": "",
        "with the cache": "_cache",
        "with dynamic evaluation": "_dynamic",
        "with the cache and dynamic evaluation": "_cache_dynamic",
    }
    return min((r[f"test_ppl{s}"], how) for how, s in options.items() if f"test_ppl{s}" in r)


def grid_edge_note(results, rows, edge):
    """Where dynamic evaluation's pick on valid (alone or with the cache) sits at the grid's strongest
    adaptation (its largest lr or smallest decay), the best setting may lie outside it: say so, and
    what ``grid_edge.py`` found one step beyond (``edge``: dynamic-edge.json) or that it has not looked."""
    sides = {
        n: {s for pick in picks(results[n]).values() for s in edge_sides(WIKITEXT2.dynamic_grid(results[n]), pick)}
        for n in rows
        if n in results and "dynamic" in results[n]
    }
    edged = {
        n: [text for side, text in (("lr", "the largest lr"), ("decay", "the smallest decay")) if side in hit]
        for n, hit in sides.items()
        if hit
    }
    if not edged:
        return []
    lines = [
        f"Dynamic evaluation's pick on valid sits at the grid's strongest adaptation (SGD lr "
        f"{WIKITEXT2.dynamic_lrs.replace(',', ', ')} x decay {WIKITEXT2.dynamic_decays.replace(',', ', ')}) for "
        + "; ".join(f"{rows[n]} ({' and '.join(texts)})" for n, texts in edged.items())
        + "."
    ]
    # a probe answers to the picks it saw: where the row's latest evaluation picks otherwise, it counts as not run
    probed = [n for n in edged if n in edge and edge[n]["picks"] == picks(results[n])]

    def setting(p):
        return f"lr {p['lr']:g} decay {p['decay']:g}"

    def win(n, p, kind, valid, test):
        change = pct(p[f"test_ppl_{kind}"], results[n][test])
        return (
            f"{rows[n]} at {setting(p)}{' with the cache' if kind == 'both' else ''}: valid {p[valid]:.1f} "
            f"against {results[n][valid]:.1f}, test {p[f'test_ppl_{kind}']:.1f} against the table's "
            f"{results[n][test]:.1f} ({change:+.1f}%, "
            + ("better on test too" if change < 0 else "**not better on test**")
            + ")"
        )

    if probed:
        lines.append(
            "One step beyond, on valid alone / with the cache (`benchmarks/grid_edge.py`; the table keeps "
            "the grid's figures): "
            + "; ".join(
                f"{rows[n]}: "
                + ", ".join(
                    f"{setting(p)} {p['valid_ppl_dynamic']:.1f} / {p['valid_ppl_cache_dynamic']:.1f}"
                    for p in edge[n]["beyond"]
                )
                + f" against the picks' {results[n]['valid_ppl_dynamic']:.1f} / "
                f"{results[n]['valid_ppl_cache_dynamic']:.1f}"
                for n in probed
            )
            + "."
        )
        if wins := [
            win(n, p, *kind) for n in probed for p in edge[n]["beyond"] for kind in KINDS if f"test_ppl_{kind[0]}" in p
        ]:
            lines.append(
                "**A step beyond wins on valid** (one step was tried; further is untried): " + "; ".join(wins) + "."
            )
        if standing := [
            rows[n]
            for n in probed
            if not any(f"test_ppl_{kind}" in p for p in edge[n]["beyond"] for kind, _, _ in KINDS)
        ]:
            lines.append(
                "No step beyond beats the picks, alone or with the cache, for "
                + "; ".join(standing)
                + ": their grid picks stand."
            )
    if unprobed := [rows[n] for n in edged if n not in probed]:
        lines.append(
            "Not tried beyond the grid yet for " + "; ".join(unprobed) + ": `python -m benchmarks.grid_edge "
            "--save-dir <table.py's>` does."
        )
    return [" ".join(lines)]


def statement(results, edge=None):
    """``edge``: grid_edge.py's probe beyond dynamic evaluation's grid (dynamic-edge.json), if run."""
    bounds = goals("wikitext-2")
    rows = {n: WIKITEXT2.rows[n].description for n in WIKITEXT2.rows}
    first_line = head("What it shows", len(results), len(rows))
    lstm, stream = results.get("lstm"), results.get("lstm-stream")
    if not results:
        return f"{first_line} No row has finished yet."
    lines = [first_line, *compared(WIKITEXT2, results)]
    ours = [n for n in rows if n in results and not n.startswith("fairseq")]
    stream_rows = [n for n in ours if WIKITEXT2.rows[n].reading == "stream"]
    for option, suffix, goal in (
        ("The neural cache", "_cache", bounds["cache"]),
        ("Dynamic evaluation", "_dynamic", bounds["dynamic"]),
    ):
        gains = {n: gain(results[n], suffix) for n in ours if f"test_ppl{suffix}" in results[n]}
        reached = [n for n in stream_rows if n in gains and gains[n] <= -goal]
        if gains:
            lines.append(
                f"{option} (settings chosen on valid): "
                + "; ".join(f"{rows[n]} {g:+.1f}%" for n, g in gains.items())
                + f". Goal >= {goal}% below each stream row's test "
                + (
                    f"ppl: {met(len(reached) == len(stream_rows))} ({len(reached)} of {len(stream_rows)} stream rows)."
                    if stream_rows
                    else "ppl: no stream row has finished yet."
                )
            )
    lines += grid_edge_note(results, rows, edge or {})
    if stream and (pointer := results.get("ps-lstm-stream")):
        change = pct(pointer["test_ppl"], stream["test_ppl"])
        lines.append(
            f"The Pointer Sentinel-LSTM's goal, >= {bounds['pointer']}% ahead of the stream LSTM on test "
            f"({change:+.1f}%): {met(change <= -bounds['pointer'])}."
        )
        lines += gate_note(pointer, rows["ps-lstm-stream"])
    if ours:
        best = min(ours, key=lambda n: best_option(results[n])[0])
        ppl, how = best_option(results[best])
        lines.append(
            f"Best combination: {rows[best]} {how}, test {ppl:.1f}"
            + (
                f" ({pct(ppl, lstm['test_ppl']):+.1f}% against the sentence-level LSTM; goal >= "
                f"{bounds['best']}% below: {met(pct(ppl, lstm['test_ppl']) <= -bounds['best'])})"
                if lstm
                else ""
            )
            + "."
        )
    if (peer := results.get("fairseq-lstm_lm")) and stream:
        change = pct(peer["test_ppl"], stream["test_ppl"])
        lines.append(
            f"Against fairseq's `lstm_lm` our stream LSTM's goal is to be at or ahead on test ({change:+.1f}% for "
            f"the peer): {met(change >= bounds['fairseq-lstm_lm'])}. Comparable: the data, the token count, the size, "
            "the optimizer and "
            f"budget; not: the peer has {peer['params'] / 1e6:.1f}M parameters (untied tails) and sees at most 70 "
            "tokens of context (scored with 35 tokens of context) where the stream reads the whole article."
        )
    # our rows' evaluation, the grid included (the peer's is two eval-lm passes)
    evaluated = [
        r["eval_minutes"]
        for r in results.values()
        if "eval_minutes" in r and "cache" in r and not r["cache"].get("grid_points_reused")
    ]
    points = len(WIKITEXT2.dynamic_lrs.split(",")) * len(WIKITEXT2.dynamic_decays.split(","))
    lines.append(
        f"Cost at one thread, two jobs side by side: {span([r['train_minutes'] for r in results.values()])} "
        f"training minutes a row for {WIKITEXT2.epochs} epochs"
        + (
            f", then {span(evaluated)} minutes of evaluation (our rows: {points} dynamic-evaluation passes "
            "over valid to choose on, two over test)"
            if evaluated
            else ""
        )
        + "."
    )
    return "\n".join(lines)


def block():
    results = WIKITEXT2.load()
    kept, notes = one_layout(WIKITEXT2, results, "lstm")
    edge = result_json(WIKITEXT2.name, "dynamic-edge.json") or {}
    return "\n\n".join(
        [
            table(results),
            *before_the_fix_note(WIKITEXT2, results),
            "\n".join([statement(kept, edge), *notes]),
            paper_table(),
            cutoff_note(),
            pointer_loss_note(),
        ]
    )
