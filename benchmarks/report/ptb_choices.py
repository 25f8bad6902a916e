"""The ``ptb-choices`` block: the dropout layout and the recipe's other choices, each a row one
choice away from its reference on a PTB slice (``--corpus ptb-choices`` in rows.py), valid ppl
after each epoch and the whole-sentence valid / test of the best checkpoint, and a verdict per
choice against its reference."""

from benchmarks.comparisons import declared
from benchmarks.rows import PTB_CHOICES

from .statements import compared, head, pct
from .tables import header

# each row against the row it differs from in one choice (benchmarks/comparisons.py)
REFERENCE = {c.row: c.baseline for c in reversed(declared(PTB_CHOICES.name))}


def table(results):
    epochs = PTB_CHOICES.epochs
    lines = header(
        "row",
        *(f"valid after epoch {e}" for e in range(1, epochs + 1)),
        "valid ppl",
        "test ppl",
        "against",
        "valid / test change",
    )
    for name, row in PTB_CHOICES.rows.items():
        r, base = results.get(name), results.get(REFERENCE.get(name))
        if r is None:
            lines.append(f"| {row.description} | not run yet |" + " |" * (epochs + 3))
            continue
        curve = [f"{p:.1f}" if p is not None else "–" for p in r["valid_ppl_per_epoch"]]
        change = (
            f"{pct(r['valid_ppl'], base['valid_ppl']):+.1f}% / {pct(r['test_ppl'], base['test_ppl']):+.1f}%"
            if base
            else "–"
        )
        lines.append(
            f"| {row.description} | "
            + " | ".join(curve + [""] * (epochs - len(curve)))
            + f" | {r['valid_ppl']:.1f} | {r['test_ppl']:.1f} | {REFERENCE.get(name, '–')} | {change} |"
        )
    return "\n".join(lines)


def statement(results):
    lines = [head("What each choice does", len(results), len(PTB_CHOICES.rows))]
    return "\n".join(lines + compared(PTB_CHOICES, results))


def block():
    results = PTB_CHOICES.load()
    return f"{table(results)}\n\n{statement(results)}"
