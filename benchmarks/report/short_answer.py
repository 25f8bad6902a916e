"""The README's short answer to the papers' question (does attention beat an equal LSTM?), generated from
the JSON and the declared comparisons: tests/test_docs.py holds the README's paragraph to this text, so
that none of its figures is typed by hand."""

import textwrap

from benchmarks.comparisons import declared
from benchmarks.rows import PTB, PTB_PAPER, WIKITEXT2

from .statements import budget_clause, dead, parameter_clause, shown, weigh
from .tables import one_layout

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


def said(corpus, results, row, baseline, what):
    """One step: ``"the concat layer alone (`single-zero-context` against `lstm`) is ahead on test (-N.N%, means
    of 2 and 2 seeds)"``, or that it has not run."""
    comparison = next(c for c in declared(corpus.name) if (c.row, c.baseline) == (row, baseline))
    w = weigh(corpus, results, comparison)
    rows = f"`{row}` against `{baseline}`"
    if w is None:
        return f"{what} ({rows}) has not run yet"
    if w.failed:
        return f"{what} ({rows}) is not compared: {dead(w)}"
    test = w.spreads["test"]
    whose = "" if test is None or test.corpus is corpus else f", {test.corpus.label}'s seed range"
    caveats = [c for c in (budget_clause(w), comparison.parameters and parameter_clause(w)) if c]
    return (
        f"{what} ({rows}) is {w.verdict('test')} on test ({shown(w, 'test')}, {w.seeds()}; level within "
        f"{w.threshold('test'):.2f}%{whose}" + "".join(f"; {c}" for c in caveats) + ")"
    )


def text():
    kept = {corpus.name: one_layout(corpus, corpus.load(), "lstm")[0] for corpus in (PTB_PAPER, PTB, WIKITEXT2)}
    steps = {corpus.name: [] for corpus, *_ in STEPS}
    for corpus, row, baseline, what in STEPS:
        steps[corpus.name].append(said(corpus, kept[corpus.name], row, baseline, what))
    return (
        "The short answer, on test perplexity (generated from the JSON; every step, its seeds and what counts as "
        f"level: docs/benchmarks.md). On {PTB_PAPER.label}, the paper's size: {'; '.join(steps[PTB_PAPER.name])}. "
        f"On {PTB.label}: {'; '.join(steps[PTB.name])}. On {WIKITEXT2.label}: {'; '.join(steps[WIKITEXT2.name])}."
    )


OPENING = "The short answer, on test perplexity"


def in_readme(readme):
    """``readme`` with its short-answer paragraph (from ``OPENING`` to the blank line) replaced by ``text()``."""
    lines = readme.split("\n")
    start = next((i for i, line in enumerate(lines) if line.startswith(OPENING)), None)
    if start is None:
        return None
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    return "\n".join([*lines[:start], *textwrap.wrap(text(), 100, break_on_hyphens=False), *lines[end:]])
