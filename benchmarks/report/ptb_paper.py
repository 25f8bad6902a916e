"""The ``ptb-paper`` block: our rows at 2 x 650 with the Attentive LM paper's recipe (``--corpus ptb-paper``,
``bash benchmarks/gpu/run.sh paper``) beside its figures (they stand beside our ``paper_ppl``) and our 2 x 200
rows: does attention beat the same-code LSTM there, and what do the cache and dynamic evaluation add."""

from benchmarks.rows import PAPER_QUEUE, PTB, PTB_PAPER, SIZE

from .statements import compared, grid_note, head, mean, models, pct, seed_count, seed_runs, span
from .tables import (
    OPTIONS,
    PARAMS,
    before_the_fix_note,
    best_epoch,
    cell,
    cost,
    cut,
    cut_note,
    header,
    label,
    one_layout,
    paper_figures,
    provenance,
    seed_table,
    tokens,
    trained_size,
    unlogged,
)

BASELINE = "lstm"
# the rows that read one sentence at a time (the stream rows: ``ptb_paper_stream``)
SENTENCE = [n for n, row in PTB_PAPER.rows.items() if row.reading != "stream"]
SENTENCE_MODELS = [n for n in models(PTB_PAPER) if n in SENTENCE]
PAPER_SIZE = "2 x 650"  # the rows' archs, alm_lstm_ptb and attentive_lm_ptb
ROWS_A_COMMAND = 2  # rows one `run.sh paper` command trains side by side (its PAPER_ROWS_PER_COMMAND)
SETTLED = 0.5  # % of valid ppl over the last epochs under which a curve counts as flat


def table_row(corpus, name, size, r):
    description = label(corpus, name, r)
    paper = PTB_PAPER.paper.get(name, "") if corpus is PTB_PAPER else ""  # the 2 x 200 rows: the ptb-table block
    if r is None:
        return f"| {description} | {size} | not run yet | | | | | | | | | | {paper} |"
    size = trained_size(r, size)
    stopped = " (cut after epoch {} of {})".format(*cut(r, PTB_PAPER.epochs)) if cut(r, PTB_PAPER.epochs) else ""
    return (
        f"| {description} | {size}, {r.get('device', 'CPU').replace('cpu', 'CPU')} | {r['valid_ppl']:.1f} | "
        f"**{r['test_ppl']:.1f}** | {r['valid_paper_ppl']:.1f} / {r['test_paper_ppl']:.1f} | "
        + " | ".join(cell(r, f"test_ppl{suffix}") for _, suffix in OPTIONS)
        + f" | {best_epoch(r)}/{r['epochs']}{unlogged(r)}{stopped} | {cost(r)} | {tokens(r)} | {paper} |"
    )


def table(paper, small):
    """Each model at 2 x 650 (a row not run yet: no figures), then at 2 x 200 where it has run."""
    lines = header(
        "row",
        "size, trained on",
        "valid ppl",
        "test ppl",
        "valid / test paper_ppl",
        "test + cache",
        "test + dynamic eval",
        "test + both",
        "best epoch",
        PARAMS,
        "train min",
        "tokens/s",
        "the paper's valid / test (its count: our paper_ppl)",
    )
    for name in SENTENCE:
        lines.append(table_row(PTB_PAPER, name, PAPER_SIZE, paper.get(name)))
        if name in small:
            lines.append(table_row(PTB, name, f"2 x {SIZE}", small[name]))
    return "\n".join(lines)


def pending(paper):
    """The 2 x 650 rows without their JSON and the command that fills them, the queue's next rows each time."""
    missing = [n for n in PAPER_QUEUE if n not in paper]
    if not missing:
        return []
    commands = -(-len(missing) // ROWS_A_COMMAND)
    return [
        f"Not run yet at {PAPER_SIZE}, so no figures: {'; '.join(f'`{n}`' for n in missing)}. Filled by "
        f"`bash benchmarks/gpu/run.sh paper` on a lent GPU: with no rows named it trains the queue's next "
        f"{ROWS_A_COMMAND} rows without their JSON, in this order (`PAPER_QUEUE` in benchmarks/rows.py; about "
        f"{commands} commands for these; run it again while it says they still train; "
        "`bash benchmarks/gpu/run.sh --help`), and the JSON it returns is committed to "
        f"`benchmarks/results/{PTB_PAPER.name}/`."
    ]


def against_the_paper(paper):
    """Our 2 x 650 models' paper_ppl (their seeds' means) against the paper's figures (the same count), and our
    rows without attention against the paper's best: a margin they share is the recipe's, not the attention's."""
    done = {n: seed_runs(PTB_PAPER, paper, n) for n in SENTENCE_MODELS}
    done = {n: runs for n, runs in done.items() if runs}
    ours = {n: runs for n, runs in done.items() if n in PTB_PAPER.paper}
    if not ours:
        return []

    def against(n, valid, test):
        runs = done[n]
        figures = [mean(runs, f"{split}_paper_ppl") for split in ("valid", "test")]
        return (
            f"`{n}` ({seed_count(runs)}) {figures[0]:.1f} / {figures[1]:.1f} against {valid:.1f} / {test:.1f} "
            f"({pct(figures[0], valid):+.1f}% / {pct(figures[1], test):+.1f}%)"
        )

    text = [against(n, *paper_figures(PTB_PAPER.paper[n])) for n in ours]
    best = min(ours, key=lambda n: paper_figures(PTB_PAPER.paper[n])[1])  # the paper's lowest test figure
    plain = [n for n in ("lstm", "single-zero-context") if n in done]
    below = [n for n in plain if mean(done[n], "test_paper_ppl") < paper_figures(PTB_PAPER.paper[best])[1]]
    return [
        "Against the paper's figures, counted as it counts (`paper_ppl`, valid / test; a mean where a row has seeds): "
        + "; ".join(text)
        + "."
        + (
            f" Our rows without attention against the paper's `{best}` too: "
            + "; ".join(against(n, *paper_figures(PTB_PAPER.paper[best])) for n in plain)
            + (
                f": {' and '.join(f'`{n}`' for n in below)} already below the paper's test figure without the "
                "attention, so that much of the margin is our recipe's and code's (and the concat layer's), not the "
                "attention's (the steps above weigh the attention)."
                if below
                else "."
            )
            if plain
            else ""
        ),
        *settled(paper),
    ]


def settled(paper, last=4):
    """Whether more epochs could move the rows: their valid ppl over the ``last`` epochs (lr already small)."""
    curves = {n: [v for v in paper[n].get("valid_ppl_per_epoch", []) if v] for n in PTB_PAPER.rows if n in paper}
    curves = {n: c for n, c in curves.items() if len(c) > last}
    if not curves:
        return []
    moved = {n: pct(c[-1], c[-1 - last]) for n, c in curves.items()}
    epochs = max(len(c) for c in curves.values())
    lr = f"1/{2 ** (epochs - PTB_PAPER.anneal_after)}" if epochs > PTB_PAPER.anneal_after else "1"
    return [
        f"Valid ppl over the last {last} epochs (lr down to {lr}): "
        + "; ".join(f"{PTB_PAPER.rows[n].description} {m:+.2f}%" for n, m in moved.items())
        + ": "
        + (
            f"flat (under {SETTLED:g}%): more epochs of this schedule would not move these figures."
            if all(abs(m) < SETTLED for m in moved.values())
            else "still falling: the epoch budget sets these figures."
        )
    ]


def test_time(paper):
    """What each test-time option adds to each 2 x 650 model's test ppl (its seeds' means), the lowest figure
    with both, and each declared comparison with both."""
    done = {n: runs for n in SENTENCE_MODELS if (runs := [r for r in seed_runs(PTB_PAPER, paper, n) if has_all(r)])}
    if not done:
        return []

    lowest = min(done, key=lambda n: mean(done[n], "test_ppl_cache_dynamic"))
    return [
        f"What the neural cache and dynamic evaluation add at {PAPER_SIZE} (test ppl, settings chosen on "
        "valid; a mean where a row has seeds): "
        + "; ".join(
            f"`{n}` ({seed_count(runs)}) {mean(runs, 'test_ppl'):.1f}: "
            + ", ".join(
                f"{option} {pct(mean(runs, 'test_ppl' + s), mean(runs, 'test_ppl')):+.1f}% "
                f"({mean(runs, 'test_ppl' + s):.1f})"
                for option, s in OPTIONS
            )
            for n, runs in done.items()
        )
        + f". The lowest with both: `{lowest}` ({seed_count(done[lowest])}), "
        f"{mean(done[lowest], 'test_ppl_cache_dynamic'):.1f}.",
        *compared(PTB_PAPER, paper, "_cache_dynamic", rows=SENTENCE),
        *grid_note(PTB_PAPER, {n: r for n, r in paper.items() if n in SENTENCE}),
    ]


def has_all(r):
    return all(f"{split}_ppl{s}" in r for split in ("valid", "test") for _, s in OPTIONS)


def statement(paper, small):
    """``paper``: the 2 x 650 rows' JSON; ``small``: the 2 x 200 rows', compared the same way."""
    at_paper = compared(PTB_PAPER, paper, rows=SENTENCE)
    lines = [
        head("What it shows at the paper's scale", len(paper), len(SENTENCE)),
        *(
            at_paper
            or [f"No declared comparison has both rows at {PAPER_SIZE}: nothing to compare at the paper's scale yet."]
        ),
        *compared(PTB, small, rows=SENTENCE_MODELS),
        *against_the_paper(paper),
        *test_time(paper),
    ]
    lines += cut_note(PTB_PAPER, paper)
    lines.append(
        f"The {PAPER_SIZE} rows train with the paper's recipe for {PTB_PAPER.epochs} epochs (lr halved "
        f"every epoch after epoch {PTB_PAPER.anneal_after})"
        + (
            f", {span([r['train_minutes'] for r in paper.values()])} minutes of training a row; trained: "
            f"{provenance(paper)}"
            if paper
            else ""
        )
        + "."
    )
    return "\n".join(lines)


def block(every, small):
    """``every``: the 2 x 650 rows' JSON, the stream rows' too (the queue); ``small``: every full-PTB row's."""
    paper = {n: r for n, r in every.items() if n in SENTENCE}
    shown = {n: r for n, r in small.items() if n in SENTENCE}
    (paper_kept, paper_notes), (small_kept, small_notes) = (
        one_layout(PTB_PAPER, paper, BASELINE),
        one_layout(PTB, shown, BASELINE),
    )
    footnote = before_the_fix_note(PTB_PAPER, paper) or before_the_fix_note(PTB, shown)
    return "\n\n".join(
        [
            table(paper, small),
            *seed_table(PTB_PAPER, paper_kept),
            *footnote,
            *pending(every),
            "\n".join([statement(paper_kept, small_kept), *dict.fromkeys(paper_notes + small_notes)]),
        ]
    )
