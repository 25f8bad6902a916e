"""The ``ptb-paper-stream`` block: the paper's size (2 x 650, its recipe) read as document streams, the
state carried across sentences as in every medium-size PTB figure the field quotes; our rows beside those
anchors, each declared step stated, and the goal with the cache and dynamic evaluation."""

from benchmarks.comparisons import goal
from benchmarks.rows import PTB_MEDIUM_ANCHORS, PTB_PAPER

from .statements import compared, grid_note, head
from .tables import (
    OPTIONS,
    PARAMS,
    before_the_fix_note,
    best_epoch,
    cell,
    cut,
    cut_note,
    header,
    label,
    one_layout,
    params,
    provenance,
)

ROWS = [n for n, row in PTB_PAPER.rows.items() if row.reading == "stream"]


def table(results):
    lines = header(
        "row", "valid ppl", "test ppl", "test + cache", "test + dynamic eval", "test + both", "best epoch", PARAMS
    )
    for name in ROWS:
        if (r := results.get(name)) is None:
            lines.append(f"| {PTB_PAPER.rows[name].description} | not run yet | | | | | | |")
            continue
        lines.append(
            f"| {label(PTB_PAPER, name, r)} | {r['valid_ppl']:.1f} | **{r['test_ppl']:.1f}** | "
            + " | ".join(cell(r, f"test_ppl{suffix}") for _, suffix in OPTIONS)
            + f" | {best_epoch(r)}/{r['epochs']}{' (cut)' if cut(r, PTB_PAPER.epochs) else ''} | "
            f"{params(r)} |"
        )
    return "\n".join(lines)


def anchors():
    return "\n".join(
        header("the field's medium-size PTB figures (state carried, standard count, as printed)", "params", "test")
        + [f"| {' | '.join(anchor)} |" for anchor in PTB_MEDIUM_ANCHORS]
    )


def statement(results, sentence):
    """``results``: the stream rows' JSON; ``sentence``: the sentence LSTM's seeds (the first step's baseline),
    both of one dropout layout."""
    lines = [head("What streams show at the paper's size", len(results), len(ROWS), "stream rows")]
    steps = compared(PTB_PAPER, {**sentence, **results}, rows=ROWS)
    lines += steps or ["No declared comparison of the stream rows has run yet."]
    both = {n: r["test_ppl_cache_dynamic"] for n, r in results.items() if "test_ppl_cache_dynamic" in r}
    if both:
        best, bound = min(both, key=both.get), goal("ptb-paper-stream", "best stream row")
        verdict = f"met by `{best}`" if both[best] <= bound else f"not met (the lowest: `{best}`"
        lines.append(
            f"The goal, test <= {bound:g} with the cache and dynamic evaluation ({PTB_PAPER.label}, streams): "
            f"{verdict}, {both[best]:.1f}{')' if both[best] > bound else ''}."
        )
    lines += grid_note(PTB_PAPER, results)
    lines += cut_note(PTB_PAPER, results)
    if results:
        lines.append(f"Trained: {provenance(results)}.")
    return "\n".join(lines)


def block(paper):
    """``paper``: every 2 x 650 row's JSON (``PTB_PAPER.load()``)."""
    results = {n: r for n, r in paper.items() if n in ROWS}
    # one dropout layout: the stream LSTM's, and the sentence LSTM's seeds only where they share it
    kept, notes = one_layout(PTB_PAPER, results, "lstm-stream")
    sentence = {n: r for n, r in paper.items() if n not in ROWS}
    both, _ = one_layout(PTB_PAPER, {**sentence, **kept}, "lstm-stream" if kept else "lstm")
    sentence = {n: r for n, r in both.items() if n in sentence}
    return "\n\n".join(
        [
            table(results),
            *before_the_fix_note(PTB_PAPER, results),
            anchors(),
            "\n".join([statement(kept, sentence), *notes]),
        ]
    )
