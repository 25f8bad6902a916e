"""The ``ptb-table`` block: full PTB at the sentence level (2 x 200, 10 epochs, one recipe), each
declared step from the LSTM to the attentive models stated from the JSON, and the valid curves' picture."""

import os

from benchmarks.comparisons import BEST_DROPOUT
from benchmarks.rows import PTB, ROOT, SIZE

from .statements import (
    at_best_setting,
    compared,
    curve,
    head,
    last_fall,
    level_within,
    mean,
    models,
    pct,
    seed_runs,
    span,
    spread,
    standing,
)
from .tables import (
    PARAMS,
    before_the_fix_note,
    best_epoch,
    cost,
    figure,
    header,
    label,
    one_layout,
    seed_table,
    tokens,
    unlogged,
)

PICTURE = os.path.join(ROOT, "docs", "ptb_valid_ppl.png")


def sentence_level(by_name):
    """The entries of ``by_name`` for the rows that read one sentence at a time (the stream rows: ``ptb_stream``)."""
    return {n: r for n, r in by_name.items() if PTB.rows[n].reading != "stream"}


def table(results):
    lines = header(
        "row",
        "valid ppl",
        "test ppl",
        "test paper_ppl",
        "best epoch",
        "attention entropy (nats)",
        PARAMS,
        "train min",
        "tokens/s",
        "paper valid / test",
    )
    for name, row in sentence_level(PTB.rows).items():
        r, paper = results.get(name), PTB.paper.get(name, "")
        if r is None:
            lines.append(f"| {row.description} | not run yet | | | | | | | | {paper} |")
            continue
        entropy = f"{r['test_attn_entropy']:.2f}" if "test_attn_entropy" in r else "–"
        lines.append(
            f"| {label(PTB, name, r)} | {r['valid_ppl']:.1f} | **{r['test_ppl']:.1f}** | "
            f"{r['test_paper_ppl']:.1f} | {best_epoch(r)}/{r['epochs']}{unlogged(r)} | {entropy} | "
            f"{cost(r)} | {tokens(r)} | {paper} |"
        )
    return "\n".join(lines)


def entropy_choice(results):
    """AMSRN's entropy weight lambda picked on valid among the rows that ran (lambda 0 is `amsrn`)."""
    rows = [n for n in PTB.rows if n in results and (n == "amsrn" or n.startswith("amsrn-entropy-"))]
    if len(rows) < 2:
        return []
    weight = {n: "0" if n == "amsrn" else n.rsplit("-", 1)[1] for n in rows}
    chosen = min(rows, key=lambda n: results[n]["valid_ppl"])
    return [
        "AMSRN's entropy regularizer: "
        + "; ".join(
            f"lambda {weight[n]}: valid {results[n]['valid_ppl']:.1f}, test {results[n]['test_ppl']:.1f}, mean "
            f"attention entropy {results[n]['valid_attn_entropy']:.2f} nats"
            for n in rows
        )
        + f". Valid picks lambda {weight[chosen]}: test {results[chosen]['test_ppl']:.1f}."
        + "".join(
            f" At lambda {weight[n]} the attention has collapsed (entropy {results[n]['valid_attn_entropy']:.2f}: "
            "every step puts all its weight on one earlier state)."
            for n in rows
            if results[n]["valid_attn_entropy"] < 0.1
        )
    ]


RECIPE_FLAGS = ("--optimizer", "--lr", "--lr-scheduler", "--warmup-updates")  # what the transformer's run sets


def statement(results):
    """The plain answer, from the JSON: each declared comparison of the sentence rows, one step at a time."""
    lstm = results.get("lstm")
    first_line = head("What it shows", len(results), len(sentence_level(PTB.rows)))
    if lstm is None:
        return f"{first_line} The LSTM baseline has not run yet: nothing to compare with."
    steps = compared(PTB, results, rows=sentence_level(PTB.rows))
    lines = [
        first_line,
        *(
            steps
            or [f"The LSTM's test perplexity is {lstm['test_ppl']:.1f}; no row compared with it has finished yet."]
        ),
        *entropy_choice(results),
        *at_best_setting(PTB, results, BEST_DROPOUT),
    ]
    if "fairseq-transformer_lm" in results:
        transformer = results["fairseq-transformer_lm"]["test_ppl"]
        ours = {
            n: seed_runs(PTB, results, n)
            for n in models(PTB)
            if n in results and not n.startswith("fairseq") and "-dropout-" not in n
        }
        widest = spread(PTB, results, "test")
        threshold = level_within(widest)
        ahead = [
            n for n, runs in ours.items() if standing(pct(mean(runs, "test_ppl"), transformer), threshold) == "ahead"
        ]
        args = PTB.rows["fairseq-transformer_lm"].args
        recipe = ", ".join(f"{flag} {args[args.index(flag) + 1]}" for flag in RECIPE_FLAGS if flag in args)
        lines.append(
            f"Against the transformer a user would pick today ({PTB.label}): {len(ahead)} of our {len(ours)} models "
            f"(a mean where a model has seeds) are ahead of its test perplexity, {transformer:.1f}, by more than "
            f"{threshold:.2f}% (the widest seed range), at this one "
            f"size and budget ({PTB.epochs} epochs; not a verdict on larger settings). It differs from our rows in "
            f"its optimiser and schedule as well as its model (`{recipe}`), on one run of a recipe not tuned here."
        )
    if last := [n for n, r in results.items() if best_epoch(r) == r["epochs"]]:
        falls = [f for n in last if (f := last_fall(curve([results[n]]))) is not None]
        lines.append(
            f"{len(last)} of {len(results)} rows had their best epoch last: still improving when the "
            f"{PTB.epochs}-epoch budget stopped them"
            + (f" (valid {max(falls):+.2f}% to {min(falls):+.2f}% in the last epoch)" if falls else "")
            + ", so this compares the models at an equal budget, not "
            "at convergence (the paper trains 2 x 650 until valid has not improved for 10 epochs; the "
            "authors' released code for at most 100)."
        )
    lines.append(
        f"Rows trained with one thread each, two side by side with other work: "
        f"{span([r['train_minutes'] for r in results.values()])} minutes a row (not the 2-core budget)."
    )
    return "\n".join(lines)


def block(results):
    """``results``: every full-PTB row's JSON (``PTB.load()``), the stream rows' too."""
    results = sentence_level(results)
    kept, notes = one_layout(PTB, results, "lstm")
    return "\n\n".join(
        [
            table(results),
            *seed_table(PTB, kept),
            *before_the_fix_note(PTB, results),
            "\n".join([statement(kept), *notes]),
        ]
    )


def draw(results, path=PICTURE):
    import matplotlib.ticker

    results = sentence_level(results)
    fig, ax = figure((7, 4.2))
    for name, r in results.items():
        if logged := [(e, p) for e, p in enumerate(r["valid_ppl_per_epoch"], 1) if p is not None]:
            ax.plot(
                *zip(*logged),
                marker="o",
                markersize=3,
                label=PTB.rows[name].description.replace("`", ""),
                linestyle="--" if name.startswith("fairseq") else "-",
            )
    values = [p for r in results.values() for p in r["valid_ppl_per_epoch"] if p is not None] or [100]
    ax.set(
        yscale="log",
        xlabel="epoch",
        ylabel="valid perplexity (log scale; sentences cut at 35)",
        title=f"Full PTB, 2 x {SIZE}, SGD lr 1 (halved after epoch {PTB.anneal_after}), --sentence-avg",
    )
    ax.set_yticks(
        [
            t
            for t in (100, 110, 120, 130, 150, 175, 200, 250, 300, 400, 600, 1000)
            if min(values) * 0.9 <= t <= max(values) * 1.1
        ]
    )
    ax.yaxis.set(major_formatter=matplotlib.ticker.ScalarFormatter(), minor_formatter=matplotlib.ticker.NullFormatter())
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
