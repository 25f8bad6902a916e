"""The ``char-tables`` block: the character models beside Kawakami et al. (2017, Tables 4-5) on full PTB and full
WikiText-2, the statement of the paper's claims, and which words the cache copies (its Tables 7-8)."""

import re

from benchmarks.comparisons import FLOOR
from benchmarks.rows import PTB_CHARS, WIKITEXT2_CHARS

from .statements import head, pct, standing
from .tables import PARAMS, cost, header, paper_figures, table_command

CORPORA = {"PTB": PTB_CHARS, "WikiText-2": WIKITEXT2_CHARS}
CLAIMS = (("hclm", "char-lstm", "HCLM against the character LSTM"), ("hclm-cache", "hclm", "The cache against HCLM"))


def table(corpus, results):
    """The finished rows of one corpus, bits per character and word perplexity, each split one stream."""
    lines = header(
        "model",
        "valid bpc",
        "test bpc",
        "valid word ppl",
        "test word ppl",
        "cache use (test)",
        "best epoch",
        PARAMS,
        "train min",
        "chars/s",
    )
    for name in (n for n in corpus.rows if n in results):
        r = results[name]
        use = f"{r['test_cache_use']:.3f}" if "test_cache_use" in r else "–"
        speed = f"{r['train_chars_per_s']:,}" if "train_chars_per_s" in r else "–"
        lines.append(
            f"| {corpus.rows[name].description} | {r['valid_bpc']:.4f} | **{r['test_bpc']:.4f}** | "
            f"{r['valid_ppl']:.1f} | {r['test_ppl']:.1f} | {use} | {r.get('best_epoch', '?')}/{r['epochs']} | "
            f"{cost(r)} | {speed} |"
        )
    return "\n".join(lines)


def paper_table():
    return "\n".join(
        header(
            "the paper's Tables 4-5 (Kawakami et al. 2017, 600-d, bpc as printed)",
            "PTB dev / test",
            "WikiText-2 dev / test",
        )
        + [
            f"| {row.description} | {PTB_CHARS.paper[n]} | {WIKITEXT2_CHARS.paper[n]} |"
            for n, row in PTB_CHARS.rows.items()
        ]
    )


def against(corpus_name, rows, ours, base):
    """``(our change, the paper's, the text)``: row ``ours`` against ``base`` in test bpc on one corpus."""

    def test_bpc(name):
        return paper_figures(CORPORA[corpus_name].paper[name])[1]

    change, paper = pct(rows[ours]["test_bpc"], rows[base]["test_bpc"]), pct(test_bpc(ours), test_bpc(base))
    return (
        change,
        paper,
        (
            f"{corpus_name} test {rows[ours]['test_bpc']:.4f} against {rows[base]['test_bpc']:.4f} bpc "
            f"({change:+.1f}%; the paper {paper:+.1f}%), word ppl {rows[ours]['test_ppl']:.1f} "
            f"against {rows[base]['test_ppl']:.1f}"
        ),
    )


def statement(by_corpus):
    """HCLM against the character LSTM and the cache against HCLM, on each corpus where both rows finished,
    beside the paper's change; the rows not finished are named with the command that runs them."""
    lines = [head("What it shows", sum(map(len, by_corpus.values())), sum(len(c.rows) for c in CORPORA.values()))]
    for ours, base, claim in CLAIMS:
        found = {
            name: against(name, by_corpus[name], ours, base)
            for name in CORPORA
            if ours in by_corpus[name] and base in by_corpus[name]
        }
        if found:
            # no character row has a second seed: a change within the floor is level, as for the word rows
            sides = {name: standing(change, FLOOR) for name, (change, _, _) in found.items()}
            verdict = "; ".join(
                f"{side} on {' and '.join(n for n in sides if sides[n] == side)}"
                for side in dict.fromkeys(sides.values())
            )
            lines.append(
                f"{claim}: "
                + "; ".join(text for _, _, text in found.values())
                + f": {verdict} (no character row has a second seed: ahead or behind past the {FLOOR:g}% floor)."
            )
        if ours == "hclm-cache" and len(found) == 2:
            (ptb, ptb_paper, _), (wt2, wt2_paper, _) = found["PTB"], found["WikiText-2"]
            lines.append(
                f"The paper's claim that the cache gains more on WikiText-2 than on PTB: here "
                f"{wt2:+.1f}% against {ptb:+.1f}% (the paper {wt2_paper:+.1f}% against {ptb_paper:+.1f}%)"
                + (": it holds here." if wt2 < min(ptb, 0) else ": **it does not hold here**.")
            )

    def last_change(r):
        return r["bpc_per_epoch"][-1] - r["bpc_per_epoch"][-2]  # an undertrained row still falls

    falling = [
        f"{name} {CORPORA[name].rows[n].description} ({last_change(r):+.4f})"
        for name, rows in by_corpus.items()
        for n, r in rows.items()
        if len(r.get("bpc_per_epoch") or []) > 1 and last_change(r) < -0.005
    ]
    if falling:
        lines.append(
            "Valid bpc was still falling in the last epoch (its change from the one before) for "
            + "; ".join(falling)
            + ": the epoch budget, not the model, sets these figures."
        )
    missing = {name: [n for n in corpus.rows if n not in by_corpus[name]] for name, corpus in CORPORA.items()}
    queued = [
        f"{name} {', '.join(rows)} ({table_command(CORPORA[name].name, rows)})"
        for name, rows in missing.items()
        if rows
    ]
    if queued:
        lines.append("Not in the tables yet, queued: " + "; ".join(queued) + ".")
    return "\n".join(lines)


def markdown_text(word):
    """A corpus word as table text (``<unk>`` would read as an HTML tag, ``|`` as a column)."""
    word = word.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return re.sub(r"([|*_`\\])", r"\\\1", word)  # a column, emphasis, code


def listed(column, i):
    """Word, p(z|w) and n of a list's ``i``-th type; three blank cells past its end (few rare types)."""
    if i >= len(column):
        return " |  | "
    word, posterior, count = column[i]
    return f"{markdown_text(word)} | {posterior:.3f} | {count}"


def copy_lists(corpus_name, posterior, top=10):
    """The paper's Tables 7-8 for one cache row: the test word types with the highest and lowest
    mean posterior of having been copied (over their occurrences after the first), every repeated
    type and those rare in train side by side (``alm-cache-posterior --rare-in-train 5``)."""
    every, rare = posterior["tables"]
    columns, few = [every["copied"], every["spelled"], rare["copied"], rare["spelled"]], posterior["rare_in_train"]
    lines = [
        f"Which words the cache copies, {corpus_name} test (`alm-cache-posterior`; p(z|w): the mean posterior "
        f"of the cache over a type's occurrences after the first, n: its occurrences in test; mean over every "
        f"word {posterior['mean_posterior']:.3f}):",
        "",
        *header(
            f"copied most ({every['types']:,} repeated types) | p(z\\|w) | n | spelled most | p(z\\|w) | n",
            f"copied most, < {few} in train ({rare['types']:,} types) | p(z\\|w) | n",
            f"spelled most, < {few} in train | p(z\\|w) | n",
        ),
    ]
    lines += [
        "| " + " | ".join(listed(column, i) for column in columns) + " |"
        for i in range(min(top, max(map(len, columns))))
    ]
    return "\n".join(lines)


def block():
    by_corpus = {name: corpus.load() for name, corpus in CORPORA.items()}
    parts = [
        f"{name} ({corpus.streams} streams x 35 words, {corpus.epochs} epochs):\n\n" + table(corpus, by_corpus[name])
        for name, corpus in CORPORA.items()
        if by_corpus[name]
    ]
    lists = [
        copy_lists(name, rows["hclm-cache"]["test_cache_posterior"])
        for name, rows in by_corpus.items()
        if "test_cache_posterior" in rows.get("hclm-cache", {})
    ]
    if lists:
        lists.append(
            "The paper's Tables 7-8 (its English test text): the cache serves frequent words (*the*, *of*) "
            "and proper nouns (*Lesnar*, *Gore*); basic words and numbers (*300*, *act*, *however*) are spelled."
        )
    return "\n\n".join([*parts, statement(by_corpus), paper_table(), *lists])
