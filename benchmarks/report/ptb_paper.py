"""The ``ptb-paper`` block: the Attentive LM paper's question at its own scale. Our rows at 2 x 650
with the paper's recipe on full PTB (``--corpus ptb-paper`` in rows.py), trained on a lent GPU by
``bash benchmarks/gpu/run.sh paper``, beside the paper's figures and our 2 x 200 rows of the
``ptb-table`` block; the statement says whether attention beats the same-code LSTM there, by how
much, and what the neural cache and dynamic evaluation add. A row whose JSON is not committed yet
is named with the command that fills it and given no figure.

The paper counts its perplexity without each sentence's first word: its figures stand beside our
``paper_ppl`` (docs/models.md), while every other figure here is ``ppl``, every word counted."""
from benchmarks.rows import PTB, PTB_PAPER, SIZE

from .statements import head, layer_and_attention, pct, span, standing_on_both
from .tables import before_the_fix_note, best_epoch, cell, label, one_layout, paper_figures, unlogged

BASELINE, ATTENTION = "lstm", ("single", "combined")
PAPER_SIZE = "2 x 650"  # the rows' archs, alm_lstm_ptb and attentive_lm_ptb
TOLERANCE = 1.0  # % either way that counts as level: one seed per row
ROWS_A_SESSION = 2  # rows that one session's GPU time trains and scores (issue 56)
# the test-time options, as the rows' JSON names their figures: valid_ppl<suffix>, test_ppl<suffix>
OPTIONS = (("the cache", "_cache"), ("dynamic evaluation", "_dynamic"), ("both", "_cache_dynamic"))


def cut(r):
    """``(epoch, planned)`` for a row whose training the clock stopped after ``epoch`` of the recipe's
    ``planned``; None for a row that trained its whole recipe."""
    if "cut_at_epoch" not in r:
        return None
    return r["cut_at_epoch"], r.get("recipe", {}).get("epochs", PTB_PAPER.epochs)


def table_row(corpus, name, size, r):
    description = label(corpus, name, r)
    paper = PTB_PAPER.paper.get(name, "") if corpus is PTB_PAPER else ""  # the 2 x 200 rows: the ptb-table block
    if r is None:
        return f"| {description} | {size} | not run yet | | | | | | | | | | {paper} |"
    stopped = " (cut after epoch {} of {})".format(*cut(r)) if cut(r) else ""
    speed = f"{r['train_tokens_per_s']:,}" if r["train_tokens_per_s"] else "–"
    return (f"| {description} | {size}, {r.get('device', 'CPU').replace('cpu', 'CPU')} | {r['valid_ppl']:.1f} | **{r['test_ppl']:.1f}** | "
            f"{r['valid_paper_ppl']:.1f} / {r['test_paper_ppl']:.1f} | {cell(r, 'test_ppl_cache')} | "
            f"{cell(r, 'test_ppl_dynamic')} | {cell(r, 'test_ppl_cache_dynamic')} | "
            f"{best_epoch(r)}/{r['epochs']}{unlogged(r)}{stopped} | {r['params'] / 1e6:.2f}M | "
            f"{r['train_minutes']:.0f} | {speed} | {paper} |")


def table(paper, small):
    """Each model at 2 x 650 (a row not run yet: no figures), then at 2 x 200 where it has run."""
    lines = ["| row | size, trained on | valid ppl | test ppl | valid / test paper_ppl | test + cache | "
             "test + dynamic eval | test + both | best epoch | params | train min | tokens/s | "
             "the paper's valid / test (its count: our paper_ppl) |", "|---" * 13 + "|"]
    for name in PTB_PAPER.rows:
        lines.append(table_row(PTB_PAPER, name, PAPER_SIZE, paper.get(name)))
        if name in small:
            lines.append(table_row(PTB, name, f"2 x {SIZE}", small[name]))
    return "\n".join(lines)


def pending(paper):
    """The 2 x 650 rows without their JSON and the commands that fill them, a session's rows each."""
    missing = [n for n in PTB_PAPER.rows if n not in paper]
    if not missing:
        return []
    sessions = [missing[i:i + ROWS_A_SESSION] for i in range(0, len(missing), ROWS_A_SESSION)]
    return [f"Not run yet at {PAPER_SIZE}, so no figures: {'; '.join(PTB_PAPER.rows[n].description for n in missing)}. "
            "Filled by " + ", then ".join(f"`bash benchmarks/gpu/run.sh paper {' '.join(rows)}`" for rows in sessions)
            + f", {'each ' if len(sessions) > 1 else ''}on a lent GPU ({ROWS_A_SESSION} rows fit one session; run it "
              "again while it says they still train; `bash benchmarks/gpu/run.sh --help`), and the JSON it returns "
              f"committed to `benchmarks/results/{PTB_PAPER.name}/`."]


def versus(corpus, results, suffix=""):
    """Each attention row against the LSTM on valid and test (``suffix``: with a test-time option):
    the figures, the relative changes and where it stands."""
    valid, test = f"valid_ppl{suffix}", f"test_ppl{suffix}"
    base = results[BASELINE]
    parts = [f"the LSTM {base[valid]:.1f} / {base[test]:.1f}"]
    for name in ATTENTION:
        r = results.get(name, {})
        if valid in r and test in r:
            change = pct(r[valid], base[valid]), pct(r[test], base[test])
            parts.append(f"{corpus.rows[name].description} {r[valid]:.1f} / {r[test]:.1f} ({change[0]:+.1f}% / "
                         f"{change[1]:+.1f}%): {standing_on_both(*change, TOLERANCE)}")
    return "; ".join(parts)


def comparable(results, suffix=""):
    """Whether the LSTM and an attention row both have the figures ``versus`` compares."""
    have = lambda name: {f"valid_ppl{suffix}", f"test_ppl{suffix}"} <= set(results.get(name, {}))
    return have(BASELINE) and any(have(n) for n in ATTENTION)


def against_the_paper(paper):
    """Our 2 x 650 rows' paper_ppl against the paper's figures (the same count)."""
    done = [n for n in PTB_PAPER.rows if n in paper and n in PTB_PAPER.paper]
    if not done:
        return []
    parts = []
    for name in done:
        r, (valid, test) = paper[name], paper_figures(PTB_PAPER.paper[name])
        parts.append(f"{PTB_PAPER.rows[name].description} {r['valid_paper_ppl']:.1f} / {r['test_paper_ppl']:.1f} "
                     f"against {valid:.1f} / {test:.1f} ({pct(r['valid_paper_ppl'], valid):+.1f}% / "
                     f"{pct(r['test_paper_ppl'], test):+.1f}%)")
    return ["Against the paper's figures, counted as it counts (`paper_ppl`, valid / test): " + "; ".join(parts) + ".",
            *settled(paper)]


SETTLED = 0.5  # % of valid ppl over the last epochs under which a curve counts as flat


def settled(paper, last=4):
    """Whether more epochs of the recipe could move the rows: their valid ppl over the ``last`` epochs
    (fairseq-train's per-epoch validation), where the halving lr is already small."""
    curves = {n: [v for v in paper[n].get("valid_ppl_per_epoch", []) if v] for n in PTB_PAPER.rows if n in paper}
    curves = {n: c for n, c in curves.items() if len(c) > last}
    if not curves:
        return []
    moved = {n: pct(c[-1], c[-1 - last]) for n, c in curves.items()}
    flat = all(abs(m) < SETTLED for m in moved.values())
    epochs = max(len(c) for c in curves.values())
    lr = f"1/{2 ** (epochs - PTB_PAPER.anneal_after)}" if epochs > PTB_PAPER.anneal_after else "1"
    return [f"Valid ppl over the last {last} epochs (lr down to {lr}): " + "; ".join(
        f"{PTB_PAPER.rows[n].description} {m:+.2f}%" for n, m in moved.items()) + ": " + (
        f"flat (under {SETTLED:g}%): more epochs of this schedule would not move these figures."
        if flat else "still falling: the epoch budget sets these figures.")]


def test_time(paper):
    """What each test-time option adds to each 2 x 650 row's test ppl, and attention against the LSTM
    with both."""
    done = [n for n in PTB_PAPER.rows if n in paper and any(f"test_ppl{s}" in paper[n] for _, s in OPTIONS)]
    if not done:
        return []
    lines = [f"What the neural cache and dynamic evaluation add at {PAPER_SIZE} (test ppl, settings chosen on "
             "valid): " + "; ".join(
                 f"{PTB_PAPER.rows[n].description} {paper[n]['test_ppl']:.1f}: " + ", ".join(
                     f"{label} {pct(paper[n]['test_ppl' + s], paper[n]['test_ppl']):+.1f}% "
                     f"({paper[n]['test_ppl' + s]:.1f})" for label, s in OPTIONS if f"test_ppl{s}" in paper[n])
                 for n in done) + "."]
    if comparable(paper, "_cache_dynamic"):
        lines.append("With both, attention against the same-code LSTM (valid / test): "
                     + versus(PTB_PAPER, paper, "_cache_dynamic") + ".")
    return lines


def statement(paper, small):
    """``paper``: the 2 x 650 rows' JSON (``PTB_PAPER.load()``); ``small``: the full-PTB rows'
    (``PTB.load()``), of which the LSTM and the attention rows are compared the same way."""
    lines = [head("What it shows at the paper's scale", len(paper), len(PTB_PAPER.rows))]
    if comparable(paper):
        lines.append(f"Attention against the same-code LSTM at {PAPER_SIZE} (valid / test ppl): "
                     + versus(PTB_PAPER, paper) + ".")
    else:
        lines.append(f"The LSTM and an attention row have not both run at {PAPER_SIZE}: nothing to compare at the "
                     "paper's scale yet.")
    if comparable(small):
        lines.append(f"At 2 x {SIZE} on a CPU ({PTB.epochs} epochs, the full-PTB table above): "
                     + versus(PTB, small) + ".")
    lines += layer_and_attention(PTB_PAPER, paper, TOLERANCE)
    lines.append(f"Level: within {TOLERANCE:g}% either way, which one seed per row cannot tell apart.")
    lines += against_the_paper(paper)
    lines += test_time(paper)
    stopped = [n for n in PTB_PAPER.rows if n in paper and cut(paper[n])]
    if stopped:
        lines.append("Cut by the clock, so scored short of the recipe's budget: " + "; ".join(
            "{} after epoch {} of {}".format(PTB_PAPER.rows[n].description, *cut(paper[n])) for n in stopped) + ".")
    devices = sorted({r.get("device", "CPU") for r in paper.values()})
    lines.append(f"The {PAPER_SIZE} rows train with the paper's recipe for {PTB_PAPER.epochs} epochs (lr halved "
                 f"every epoch after epoch {PTB_PAPER.anneal_after})" + (
                     f"; on {', '.join(devices)}, {span([r['train_minutes'] for r in paper.values()])} minutes of "
                     "training a row" if paper else "") + ".")
    return "\n".join(lines)


def block(paper, small):
    """``paper``: the 2 x 650 rows' JSON; ``small``: every full-PTB row's (``PTB.load()``)."""
    shown = {n: r for n, r in small.items() if n in PTB_PAPER.rows}
    (paper_kept, paper_notes), (small_kept, small_notes) = one_layout(PTB_PAPER, paper, BASELINE), one_layout(PTB, shown, BASELINE)
    footnote = before_the_fix_note(PTB_PAPER, paper) or before_the_fix_note(PTB, shown)
    return "\n\n".join([table(paper, small), *footnote,
                        *pending(paper), "\n".join([statement(paper_kept, small_kept), *dict.fromkeys(paper_notes + small_notes)])])
