"""The ``ptb-stream`` block: full PTB read as document streams, the models with a memory spanning
sentences against the stream LSTM, the test-time options (the neural cache, dynamic evaluation)
and what they cost, with the picture of the cache's gain."""

import os

from benchmarks.comparisons import declared, goal
from benchmarks.rows import PTB, ROOT

from .statements import compared, gain, gate_note, head, level_within, met, pct, spread, standing
from .tables import PARAMS, before_the_fix_note, cost, figure, header, label, one_layout, result_json, threads

PICTURE = os.path.join(ROOT, "docs", "ptb_stream.png")
SENTENCE_BASELINE, STREAM_BASELINE = "lstm", "lstm-stream"  # the main table's LSTM, and the one read as streams
# {name: description} of the stream rows in order (one that only changes the output layer: the adaptive softmax's block)
ROWS = {n: row.description for n, row in PTB.rows.items() if row.reading == "stream" and row.full_softmax_twin is None}


def table(results):
    lines = header(
        "row",
        "valid ppl",
        "test ppl",
        "vs stream LSTM",
        "+ neural cache (chosen on valid)",
        "valid + cache",
        "**test + cache**",
        "cache gain",
        "best epoch",
        "attention (valid)",
        PARAMS,
        "train min",
        "tokens/s",
    )
    base = results.get(STREAM_BASELINE)
    for name, description in ROWS.items():
        if (r := results.get(name)) is None:
            lines.append(f"| {description} | not run yet | | | | | | | | | | | |")
            continue
        versus = f"{pct(r['test_ppl'], base['test_ppl']):+.1f}%" if base and name != STREAM_BASELINE else "–"
        flags = f"N {c['window']}, θ {c['theta']}, λ {c['lambda']}" if (c := r.get("cache")) else "–"
        cached = (
            f"{r['valid_ppl_cache']:.1f} | **{r['test_ppl_cache']:.1f}** | {gain(r, '_cache'):+.1f}%"
            if "test_ppl_cache" in r
            else "– | – | –"
        )
        attention = (
            f"gate {r['valid_pointer_gate']:.3f}"
            if "valid_pointer_gate" in r
            else f"entropy {r['valid_attn_entropy']:.2f}"
            if "valid_attn_entropy" in r
            else "–"
        )
        lines.append(
            f"| {label(PTB, name, r)} | {r['valid_ppl']:.1f} | {r['test_ppl']:.1f} | {versus} | {flags} | "
            f"{cached} | {r.get('best_epoch', '?')}/{r['epochs']} | {attention} | {cost(r)} | "
            f"{r['train_tokens_per_s']:,} |"
        )
    return "\n".join(lines)


def statement(results):
    done = [n for n in ROWS if n in results]
    first_line = head("What document context shows", len(done), len(ROWS), "stream rows")
    stream = results.get(STREAM_BASELINE)
    if stream is None:
        return f"{first_line} The stream LSTM has not run yet: nothing to compare with."
    lines = [first_line, *compared(PTB, results, rows=ROWS)]
    # the rows with a memory spanning sentences: their test ppl against the stream LSTM's
    versus = {n: pct(results[n]["test_ppl"], stream["test_ppl"]) for n in done if n != STREAM_BASELINE}
    if versus:
        # a row one declared step from the stream LSTM (a row two things away credits neither)
        one_step = {c.row for c in declared(PTB.name, ROWS) if c.baseline == STREAM_BASELINE and len(c.things) == 1}
        bound = goal("ptb-stream", "memory across sentences")
        ahead = [f"`{n}`" for n in versus if versus[n] <= -bound and n in one_step]
        lines.append(
            f"The goal of a memory spanning sentences >= {bound:g}% ahead of the stream LSTM on test, one step from it "
            f"({PTB.label}): " + (f"met by {', '.join(ahead)}." if ahead else "**not met by any row**.")
        )
    lines += [note for n in done for note in gate_note(results[n], ROWS[n])]
    lines += cache_sentence(results, [n for n in done if "test_ppl_cache" in results[n]], versus)
    lines += speed_note()
    uncached = [
        PTB.rows[n].description
        for n, r in results.items()
        if n in PTB.rows
        and PTB.rows[n].reading != "stream"
        and PTB.rows[n].has_our_decoder
        and "test_ppl_cache" not in r
    ]
    if uncached:
        lines.append(
            "Sentence-level rows of the main table without cache figures (their checkpoints were not kept; "
            "`alm-cache-grid` gives them from a checkpoint): " + "; ".join(uncached) + "."
        )
    return "\n".join(lines)


def cache_sentence(results, cached, versus):
    """What the neural cache gains on each stream row, and on the stream LSTM against what the best
    trained memory gains (``versus``: each memory row's test ppl against the stream LSTM's)."""
    if not cached:
        return []
    gains = {n: gain(results[n], "_cache") for n in cached}
    best = min(cached, key=lambda n: results[n]["test_ppl_cache"])
    trained = min(versus, key=lambda n: results[n]["test_ppl"]) if versus else None  # the best trained memory
    how = {
        "level": "gains about as much as",
        "ahead": "gains more than",
        "behind": "gains less than",
    }
    widest = spread(PTB, results, "test")  # one seed each: the gains differ only past the widest seed range
    threshold = level_within(widest)
    return [
        "The neural cache (nothing trained; window, θ and λ chosen on valid): "
        + "; ".join(
            f"{ROWS[n]} {results[n]['test_ppl']:.1f} -> {results[n]['test_ppl_cache']:.1f} ({gains[n]:+.1f}%)"
            for n in cached
        )
        + f". Best overall: {ROWS[best]} with the cache, test {results[best]['test_ppl_cache']:.1f}."
        + f" {sum(g <= -10 for g in gains.values())} of {len(cached)} rows gain >= 10% (Grave et al.: 12% on PTB)."
        + (
            f" On the stream LSTM the cache ({gains[STREAM_BASELINE]:+.1f}%) "
            + how[standing(gains[STREAM_BASELINE] - versus[trained], threshold)]
            + f" the best trained memory, {ROWS[trained]} ({versus[trained]:+.1f}%)."
            if trained and STREAM_BASELINE in gains
            else ""
        )
    ]


def speed_note():
    """What carrying a memory and the cache cost: every thread count of one run of stream_speed.py."""
    if (speed := result_json("cpu", "stream_speed.json")) is None:
        return []
    by_threads = speed["by_threads"]
    counts = sorted(by_threads, key=int)
    first = by_threads[counts[0]]

    def ratio(part, name):
        return " / ".join(f"{by_threads[t][part]['ratio'][name]:.2f}" for t in counts)

    def fast(part, names, goal):
        return met(all(by_threads[t][part]["ratio"][n] >= goal for t in counts for n in names))

    train, cached = ([n for n in first[part]["ratio"] if n != first[part]["baseline"]] for part in ("train", "eval"))
    attention = [n for n in train if n.startswith(("attentive_lm", "amsrn"))]
    repeats = first["train"]["title"].rsplit(", ", 1)[-1]  # "median of N"
    training, scoring = goal("ptb-stream", "attention, training"), goal("ptb-stream", "neural cache, scoring")
    return [
        f"Speed ({' / '.join(counts)} threads, one run of benchmarks/stream_speed.py, {repeats}; "
        "benchmarks/results/cpu/stream_speed.json): the stream training step against `alm_lstm`: "
        + "; ".join(f"{n} {ratio('train', n)}" for n in train)
        + f" (goal for attention >= {training:g}: {fast('train', attention, training)}). "
        "Evaluation (`--batch-size 1`): "
        + "; ".join(f"{n} {ratio('eval', n)} of the speed without it" for n in cached)
        + f" (goal >= {scoring:g}: {fast('eval', cached, scoring)})."
    ]


def dynamic(results):
    """Dynamic evaluation on the stream rows that report it: table and statement, with its goals
    (``comparisons.GOALS``: the gain on every row, the stream LSTM with the cache and dynamic evaluation)."""
    done = [n for n in ROWS if n in results and "test_ppl_dynamic" in results[n]]
    if not done:
        return (
            "Dynamic evaluation: no stream row reports it yet (`benchmarks/table.py` computes it in the run "
            "that trains a row)."
        )
    lines = header(
        "row",
        "test ppl",
        "dynamic evaluation (chosen on valid)",
        "valid + dynamic",
        "**test + dynamic**",
        "gain",
        "test + cache",
        "**test + cache + dynamic**",
        "gain",
    )
    for n in done:
        r, d = results[n], results[n]["dynamic"]
        lines.append(
            f"| {ROWS[n]} | {r['test_ppl']:.1f} | SGD lr {d['lr']:g}, decay {d['decay']:g}, segments of "
            f"{d['segment']} | {r['valid_ppl_dynamic']:.1f} | **{r['test_ppl_dynamic']:.1f}** | "
            f"{gain(r, '_dynamic'):+.1f}% | {r['test_ppl_cache']:.1f} | **{r['test_ppl_cache_dynamic']:.1f}** | "
            f"{gain(r, '_cache_dynamic'):+.1f}% |"
        )
    gains = {n: gain(results[n], "_dynamic") for n in done}
    gained = goal("ptb-stream", "dynamic evaluation")
    lines += [
        "",
        "**Dynamic evaluation (generated from the JSON).** "
        + "; ".join(
            f"{ROWS[n]}: {results[n]['test_ppl']:.1f} -> {results[n]['test_ppl_dynamic']:.1f} ({gains[n]:+.1f}%), with "
            f"the cache {results[n]['test_ppl_cache_dynamic']:.1f}"
            for n in done
        )
        + f". The goal of >= {gained:g}% below the static test perplexity on every row is "
        f"{met(all(g <= -gained for g in gains.values()))} (Krause et al.: 11% on AWD-LSTM).",
    ]
    if STREAM_BASELINE in done:
        both = results[STREAM_BASELINE]["test_ppl_cache_dynamic"]
        bound = goal("ptb-stream", "lstm-stream, cache and dynamic")
        lines[-1] += (
            f" The stream LSTM with the cache and dynamic evaluation: {both:.1f} "
            f"({'below' if both < bound else 'not below'} the goal of {bound:g}; the cache alone: "
            f"{results[STREAM_BASELINE]['test_ppl_cache']:.1f})."
        )
    if (speed := result_json("cpu", "dynamic_eval_speed.json")) is not None:
        name = "eval, dynamic SGD, segments of 20"
        lines.append(
            "Its cost, eval tokens/s against static scoring (PTB valid as one stream, `alm_lstm` 2 x 200, "
            "benchmarks/results/cpu/dynamic_eval_speed.json): "
            + ", ".join(
                f"{speed['by_threads'][t]['eval']['ratio'][name]:.2f}x at {threads(t)}"
                for t in sorted(speed["by_threads"], key=int)
            )
            + f" (goal >= {goal('ptb-stream', 'dynamic evaluation, speed'):g}x)."
        )
    return "\n".join(lines)


def block(results):
    """``results``: every full-PTB row's JSON (``PTB.load()``)."""
    kept, notes = one_layout(PTB, results, STREAM_BASELINE)
    shown = {n: r for n, r in results.items() if n in ROWS}
    return "\n\n".join(
        [
            table(results),
            *before_the_fix_note(PTB, shown),
            "\n".join([statement(kept), *notes]),
            "![Test perplexity of the stream rows with and without the cache](ptb_stream.png)",
            dynamic(kept),
        ]
    )


def draw(results, path=PICTURE):
    done = [n for n in ROWS if n in results]
    if not done:
        return
    fig, ax = figure((7, 3.8))
    x = range(len(done))
    plain = [results[n]["test_ppl"] for n in done]
    cached = [results[n].get("test_ppl_cache", float("nan")) for n in done]
    for shift, figures, legend in ((-0.2, plain, "model alone"), (0.2, cached, "+ neural cache")):
        ax.bar([i + shift for i in x], figures, width=0.4, label=legend)
        for i, p in enumerate(figures):
            ax.text(i + shift, p + 1, f"{p:.1f}", ha="center", fontsize=7)
    if SENTENCE_BASELINE in results:
        ax.axhline(
            results[SENTENCE_BASELINE]["test_ppl"],
            color="gray",
            linestyle="--",
            linewidth=1,
            label=f"sentence-level LSTM ({results[SENTENCE_BASELINE]['test_ppl']:.1f})",
        )
    ax.set(
        xticks=list(x),
        xticklabels=[n.replace("-stream", "") for n in done],
        ylabel="test perplexity",
        ylim=(min(c for c in cached + plain if c == c) * 0.8, max(plain) * 1.12),
    )
    ax.set_title("Full PTB, document streams (2 x 200, 10 epochs): with and without the cache", fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
