"""The ``ptb-table`` block: full PTB at the sentence level, every attention row against the equal
LSTM (2 x 200, 10 epochs, one recipe), the statement that answers it, and the valid curves' picture."""

import os

from benchmarks.rows import PTB, ROOT, SIZE

from .statements import LAYER_ROW, head, layer_and_attention, pct, span
from .tables import before_the_fix_note, best_epoch, cost, figure, header, label, one_layout, tokens, unlogged

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
        "params",
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


def entropy_choice(results, base):
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
        + f". Valid picks lambda {weight[chosen]}: test {results[chosen]['test_ppl']:.1f} "
        f"({pct(results[chosen]['test_ppl'], base):+.1f}% against the LSTM)."
        + "".join(
            f" At lambda {weight[n]} the attention has collapsed (entropy {results[n]['valid_attn_entropy']:.2f}: "
            "every step puts all its weight on one earlier state)."
            for n in rows
            if results[n]["valid_attn_entropy"] < 0.1
        )
    ]


def statement(results):
    """The plain answer, from the JSON: does any attention row beat the equal LSTM, and by how much?"""
    lstm = results.get("lstm")
    first_line = head("What it shows", len(results), len(sentence_level(PTB.rows)))
    if lstm is None:
        return f"{first_line} The LSTM baseline has not run yet: nothing to compare with."
    base = lstm["test_ppl"]
    # the attention rows (the context-zeroed one has none: layer_and_attention says what it shows)
    ours = [n for n in PTB.rows if n in results and n not in ("lstm", LAYER_ROW) and not n.startswith("fairseq")]
    change = {n: pct(results[n]["test_ppl"], base) for n in ours}
    lines = [
        first_line,
        f"Test perplexity against the equal LSTM's {base:.1f}: "
        + "; ".join(f"{PTB.rows[n].description} {results[n]['test_ppl']:.1f} ({change[n]:+.1f}%)" for n in ours)
        + "."
        if ours
        else f"The equal LSTM's test perplexity is {base:.1f}; no attention row of its layout has finished yet.",
    ]
    if better := [n for n in ours if change[n] < -1.0]:
        best = min(better, key=change.get)
        lines.append(f"Attention helps here: {PTB.rows[best].description} is {-change[best]:.1f}% below the LSTM.")
    elif ours:
        best, worst = min(ours, key=change.get), max(ours, key=change.get)
        lines.append(
            f"**No attention row beats the equal LSTM** at this size and budget (closest: "
            f"{PTB.rows[best].description}, {change[best]:+.1f}%; furthest: {PTB.rows[worst].description}, "
            f"{change[worst]:+.1f}%). One seed per row: differences of a few tenths of a percent are no "
            "evidence either way."
        )
        first = [p for p in (results[n]["valid_ppl_per_epoch"][0] for n in ours) if p is not None]
        final = [results[n]["valid_ppl"] for n in ours]
        if first and lstm["valid_ppl_per_epoch"][0] is not None:
            lines.append(
                f"The attention rows start slower (valid after epoch 1: {min(first):.0f} to {max(first):.0f}, "
                f"the LSTM {lstm['valid_ppl_per_epoch'][0]:.0f}); their final valid is {min(final):.1f} to "
                f"{max(final):.1f}, the LSTM's {lstm['valid_ppl']:.1f}."
            )
    if "single" in results and "single-bc" in results:
        with_bc, without = results["single-bc"], results["single"]
        lines.append(
            f"The bias b_c of Eq. 7 as printed costs the single model {with_bc['test_ppl']:.1f} against "
            f"{without['test_ppl']:.1f} ({pct(with_bc['test_ppl'], without['test_ppl']):+.1f}%; "
            f"valid {with_bc['valid_ppl']:.1f} against {without['valid_ppl']:.1f}): through the tied "
            "output it is a unigram shortcut that takes the clipped SGD steps, which is why "
            "`--combination-bias` is off by default."
        )
    lines += layer_and_attention(PTB, results) + entropy_choice(results, base)
    lines += [
        f"{PTB.rows[n].description}: test {results[n]['test_ppl']:.1f} ({pct(results[n]['test_ppl'], base):+.1f}% "
        "against our LSTM)."
        for n in ("fairseq-lstm_lm", "fairseq-transformer_lm")
        if n in results
    ]
    if "fairseq-transformer_lm" in results:
        transformer = results["fairseq-transformer_lm"]["test_ppl"]
        ahead = sum(results[n]["test_ppl"] < transformer for n in ["lstm", *ours])
        lines.append(
            f"Against the transformer a user would pick today: {ahead} of {len(ours) + 1} of our "
            f"rows reach a lower test perplexity than its {transformer:.1f}, at this one size and budget "
            "(2 layers of 200, 10 epochs of 42k sentences; not a verdict on larger settings)."
        )
    if last := [n for n, r in results.items() if best_epoch(r) == r["epochs"]]:
        lines.append(
            f"{len(last)} of {len(results)} rows had their best epoch last: still improving when the "
            f"{PTB.epochs}-epoch budget stopped them, so this compares the models at an equal budget, not "
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
    return "\n\n".join([table(results), *before_the_fix_note(PTB, results), "\n".join([statement(kept), *notes])])


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
