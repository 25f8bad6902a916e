"""The short answer to the papers' question (does attention beat an equal LSTM?), generated from the JSON and
the declared comparisons: a table for the README (``table``) and the sentences behind it for
docs/benchmarks.md (``text``), so that none of their figures is typed by hand."""

from benchmarks.comparisons import BEST_DROPOUT, Comparison, declared
from benchmarks.rows import PTB, PTB_PAPER, WIKITEXT2

from .statements import FLOOR, NO_VERDICT, budget_clause, dead, parameter_clause, picks, shown, weigh
from .tables import header, one_layout

# (corpus, row, baseline, what the step is called) in the order the answer gives them
STEPS = (
    (PTB_PAPER, "single-zero-context", "lstm", "the concat layer alone"),
    (PTB_PAPER, "single", "single-zero-context", "the attention on top of it"),
    (PTB_PAPER, "single-zero-context", "lstm-matched", "the layer against its parameters spent as LSTM width"),
    (PTB, "single-zero-context", "lstm", "the concat layer alone"),
    (PTB, "single", "single-zero-context", "the attention on top of it"),
    (PTB, "single-zero-context", "lstm-matched", "the layer against its parameters spent as LSTM width"),
    (WIKITEXT2, "single", "lstm", "the layer and the attention together, which no row separates"),
)
SIZES = {PTB_PAPER.name: "PTB, 2 x 650", PTB.name: "PTB, 2 x 200", WIKITEXT2.name: "WikiText-2, 2 x 200"}


def steps():
    """``[(corpus, results, comparison or None, what)]``: each step of the answer, those of each model at its own
    best dropout after the full-PTB ones (None until its rows have run)."""
    kept = {corpus.name: one_layout(corpus, corpus.load(), "lstm")[0] for corpus in (PTB_PAPER, PTB, WIKITEXT2)}
    found = []
    for corpus, row, baseline, what in STEPS:
        comparison = next(c for c in declared(corpus.name) if (c.row, c.baseline) == (row, baseline))
        found.append((corpus, kept[corpus.name], comparison, what))
        if corpus is PTB and baseline == "lstm-matched":
            chosen, _ = picks(PTB, kept[PTB.name], BEST_DROPOUT)
            for (base, model, _), name in zip(BEST_DROPOUT.steps, ("the concat layer alone", "the attention on it")):
                pair = chosen and Comparison(
                    PTB.name, BEST_DROPOUT.choices[base][chosen[base]], BEST_DROPOUT.choices[model][chosen[model]], ()
                )
                found.append((PTB, kept[PTB.name], pair or None, f"{name}, each model at its best dropout"))
    return found


def band(w):
    """What counts as level on test, and whether that is the floor or the seeds' widest range."""
    test = w.spreads["test"]
    measured = "no seeds" if test is None else f"seeds span {test.value:.2f}%"
    if test is not None and test.corpus is not w.corpus:
        measured += f" on {test.corpus.label}"
    if w.threshold("test") == FLOOR:
        return f"{FLOOR:.2f}%, the floor ({measured})"
    return f"{w.threshold('test'):.2f}% ({measured})"


def said(corpus, results, comparison, what):
    """One step: ``"the concat layer alone (`single-zero-context` against `lstm`) is ahead on test (-N.N%, means
    of 2 and 2 seeds; level within ...)"``, or that it has not run."""
    if comparison is None:
        return f"{what} waits for its rows"
    w = weigh(corpus, results, comparison)
    rows = f"`{comparison.row}` against `{comparison.baseline}`"
    if w is None:
        return f"{what} ({rows}) has not run yet"
    if w.failed:
        return f"{what} ({rows}) is not compared: {dead(w)}"
    caveats = [c for c in (budget_clause(w), comparison.parameters and parameter_clause(w)) if c]
    verdict = NO_VERDICT if w.converging() else w.verdict("test")
    figures = f"{shown(w, 'test')}, {w.seeds()}; level within {band(w)}" + "".join(f"; {c}" for c in caveats)
    return f"{what} ({rows}): {verdict} on test ({figures})"


def text():
    by_size = {}
    for corpus, results, comparison, what in steps():
        by_size.setdefault(corpus.name, []).append(said(corpus, results, comparison, what))
    return "The short answer, on test perplexity (generated from the JSON). " + " ".join(
        f"On {SIZES[name]}: {'; '.join(parts)}." for name, parts in by_size.items()
    )


def table():
    """The README's table: a line a step, its two rows, the test difference, the seeds and the verdict."""
    lines = header("size", "step", "rows", "test ppl", "seeds", "level within", "verdict")
    for corpus, results, comparison, what in steps():
        if comparison is None or (w := weigh(corpus, results, comparison)) is None:
            rows = f"`{comparison.row}` against `{comparison.baseline}`" if comparison else "waiting for its rows"
            lines.append(f"| {SIZES[corpus.name]} | {what} | {rows} | | | | not run yet |")
            continue
        seeds = f"{len(w.row)} + {len(w.base)}"
        verdict = "failed to train" if w.failed else w.verdict("test")
        lines.append(
            f"| {SIZES[corpus.name]} | {what} | `{comparison.row}` against `{comparison.baseline}` | "
            f"{shown(w, 'test')} | {seeds} | {band(w)} | {verdict} |"
        )
    return "\n".join(lines)
