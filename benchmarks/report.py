"""Every generated table, statement and picture of docs/benchmarks.md, from the rows' JSON
(``benchmarks/results/``): the full-PTB tables (sentence level, document streams, dynamic
evaluation), the adaptive softmax's section, the WikiText-2 table beside the paper's, the
character models' tables beside Kawakami et al.'s, and the training-speed table.

    python benchmarks/report.py                  # print every block, draw the pictures
    python benchmarks/report.py --update-docs    # and write the blocks between their markers

It reads the rows' declarations (``rows.py``) and the JSON, nothing else: what ``table.py``
and the speed scripts wrote is the whole record.
"""
import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from grid_edge import KINDS, edge_sides, picks  # noqa: E402
from rows import (PTB, PTB_CHARS, PTB_POINTER_LOSS, ROOT, SIZE, WIKITEXT2, WIKITEXT2_CHARS,  # noqa: E402
                  WIKITEXT2_CUTOFFS, WIKITEXT2_PAPER)

RESULTS = os.path.join(ROOT, "benchmarks", "results")


def pct(value, base):
    return 100 * (value / base - 1)


def is_stream(corpus, name):
    return corpus.rows[name].reading == "stream"


def fill_markers(path, marker, text):
    """Replace what lies between ``<!-- MARKER:begin -->`` and ``<!-- MARKER:end -->`` in ``path``."""
    begin, end = f"<!-- {marker}:begin -->", f"<!-- {marker}:end -->"
    with open(path) as f:
        page = f.read()
    if begin not in page or end not in page:
        sys.exit(f"{os.path.relpath(path)} has no {begin} ... {end} block to fill")
    head, rest = page.split(begin, 1)
    _, tail = rest.split(end, 1)
    with open(path, "w") as f:
        f.write(f"{head}{begin}\n{text}\n{end}{tail}")



# ---- full PTB, sentence level

def best_epoch(result):
    """The epoch checkpoint_best.pt closed (older JSON: the epoch of the lowest valid ppl)."""
    if "best_epoch" in result:
        return result["best_epoch"]
    logged = [(p, e) for e, p in enumerate(result["valid_ppl_per_epoch"], 1) if p is not None]
    return min(logged)[1] if logged else "?"


def epoch_ranges(epochs):
    """``[1, 2, 3, 6]`` -> ``"1-3, 6"``."""
    spans = []
    for e in epochs:
        if spans and e == spans[-1][1] + 1:
            spans[-1][1] = e
        else:
            spans.append([e, e])
    return ", ".join(f"{a}-{b}" if a != b else f"{a}" for a, b in spans)


def unlogged(result):
    """A note for a row resumed after a kill that lost its first epochs' records."""
    missing = result.get("epochs_without_records")
    return f" (valid of epoch{'s' if len(missing) > 1 else ''} {epoch_ranges(missing)} not logged)" if missing else ""


def ptb_table(results):
    results = {n: r for n, r in results.items() if not is_stream(PTB, n)}  # the streams: stream_table
    lines = ["| row | valid ppl | test ppl | test paper_ppl | best epoch | attention entropy (nats) | "
             "params | train min | tokens/s | paper valid / test |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name, row in PTB.rows.items():
        description = row.description
        r = results.get(name)
        if is_stream(PTB, name):
            continue
        if r is None:
            lines.append(f"| {description} | not run yet | | | | | | | | {PTB.paper.get(name, '')} |")
            continue
        best = best_epoch(r)
        entropy = f"{r['test_attn_entropy']:.2f}" if "test_attn_entropy" in r else "–"
        speed = f"{r['train_tokens_per_s']:,}" if r["train_tokens_per_s"] else "–"  # no epoch logged: unknown
        lines.append(f"| {description} | {r['valid_ppl']:.1f} | **{r['test_ppl']:.1f}** | "
                     f"{r['test_paper_ppl']:.1f} | {best}/{r['epochs']}{unlogged(r)} | {entropy} | "
                     f"{r['params'] / 1e6:.2f}M | {r['train_minutes']:.0f} | {speed} | "
                     f"{PTB.paper.get(name, '')} |")
    return "\n".join(lines)


def entropy_choice(results, base):
    """AMSRN's entropy weight lambda picked on valid among the rows that ran (lambda 0 is `amsrn`)."""
    rows = [n for n in PTB.rows if n in results and (n == "amsrn" or n.startswith("amsrn-entropy-"))]
    if len(rows) < 2:
        return []
    weight = {n: "0" if n == "amsrn" else n.rsplit("-", 1)[1] for n in rows}
    chosen = min(rows, key=lambda n: results[n]["valid_ppl"])
    return ["AMSRN's entropy regularizer: " + "; ".join(
        f"lambda {weight[n]}: valid {results[n]['valid_ppl']:.1f}, test {results[n]['test_ppl']:.1f}, mean "
        f"attention entropy {results[n]['valid_attn_entropy']:.2f} nats" for n in rows)
        + f". Valid picks lambda {weight[chosen]}: test {results[chosen]['test_ppl']:.1f} "
          f"({100 * (results[chosen]['test_ppl'] / base - 1):+.1f}% against the LSTM)."
        + "".join(f" At lambda {weight[n]} the attention has collapsed (entropy {results[n]['valid_attn_entropy']:.2f}: "
                  "every step puts all its weight on one earlier state)."
                  for n in rows if results[n]["valid_attn_entropy"] < 0.1)]


def ptb_statement(results):
    """The plain answer, from the JSON: does any attention row beat the equal LSTM, and by how much?"""
    results = {n: r for n, r in results.items() if not is_stream(PTB, n)}
    lstm = results.get("lstm")
    sentence_rows = [n for n in PTB.rows if not is_stream(PTB, n)]
    head = f"**What it shows ({len(results)} of {len(sentence_rows)} rows, generated from the JSON).**"
    if lstm is None:
        return f"{head} The LSTM baseline has not run yet: nothing to compare with."
    base = lstm["test_ppl"]
    ours = [n for n in PTB.rows if n in results and n != "lstm" and not n.startswith("fairseq")]
    change = {n: 100 * (results[n]["test_ppl"] / base - 1) for n in ours}
    lines = [head, f"Test perplexity against the equal LSTM's {base:.1f}: " + "; ".join(
        f"{PTB.rows[n].description} {results[n]['test_ppl']:.1f} ({change[n]:+.1f}%)" for n in ours) + "."]
    better = [n for n in ours if change[n] < -1.0]
    if better:
        best = min(better, key=change.get)
        lines.append(f"Attention helps here: {PTB.rows[best].description} is {-change[best]:.1f}% below the LSTM.")
    elif ours:
        best, worst = min(ours, key=change.get), max(ours, key=change.get)
        lines.append(f"**No attention row beats the equal LSTM** at this size and budget (closest: "
                     f"{PTB.rows[best].description}, {change[best]:+.1f}%; furthest: {PTB.rows[worst].description}, {change[worst]:+.1f}%). "
                     "One seed per row: differences of a few tenths of a percent are no evidence either way.")
        first = {n: results[n]["valid_ppl_per_epoch"][0] for n in ours}
        first = {n: p for n, p in first.items() if p is not None}
        lstm_first = lstm["valid_ppl_per_epoch"][0]
        if first and lstm_first is not None:
            lines.append(f"The attention rows start slower (valid after epoch 1: {min(first.values()):.0f} to "
                         f"{max(first.values()):.0f}, the LSTM {lstm_first:.0f}); "
                         f"their final valid is {min(results[n]['valid_ppl'] for n in ours):.1f} to "
                         f"{max(results[n]['valid_ppl'] for n in ours):.1f}, the LSTM's {lstm['valid_ppl']:.1f}.")
    if "single" in results and "single-bc" in results:
        with_bc, without = results["single-bc"], results["single"]
        lines.append(f"The bias b_c of Eq. 7 as printed costs the single model {with_bc['test_ppl']:.1f} against "
                     f"{without['test_ppl']:.1f} ({100 * (with_bc['test_ppl'] / without['test_ppl'] - 1):+.1f}%; "
                     f"valid {with_bc['valid_ppl']:.1f} against {without['valid_ppl']:.1f}): through the tied "
                     "output it is a unigram shortcut that takes the clipped SGD steps, which is why "
                     "`--combination-bias` is off by default.")
    lines += entropy_choice(results, base)
    for name in ("fairseq-lstm_lm", "fairseq-transformer_lm"):
        if name in results:
            lines.append(f"{PTB.rows[name].description}: test {results[name]['test_ppl']:.1f} "
                         f"({100 * (results[name]['test_ppl'] / base - 1):+.1f}% against our LSTM).")
    if "fairseq-transformer_lm" in results:
        transformer = results["fairseq-transformer_lm"]["test_ppl"]
        recurrent = {n: results[n]["test_ppl"] for n in ["lstm", *ours]}
        ahead = sum(p < transformer for p in recurrent.values())
        lines.append(f"Against the transformer a user would pick today: {ahead} of {len(recurrent)} of our "
                     f"rows reach a lower test perplexity than its {transformer:.1f}, at this one size and budget "
                     "(2 layers of 200, 10 epochs of 42k sentences; not a verdict on larger settings).")
    last = [n for n, r in results.items() if best_epoch(r) == r["epochs"]]
    if last:
        lines.append(f"{len(last)} of {len(results)} rows had their best epoch last: still improving when the "
                     f"{PTB.epochs}-epoch budget stopped them, so this compares the models at an equal budget, not "
                     "at convergence (the paper trains 2 x 650 for 39+ epochs).")
    minutes = [r["train_minutes"] for r in results.values()]
    lines.append(f"Rows trained with one thread each, two side by side with other work: {min(minutes):.0f} to "
                 f"{max(minutes):.0f} minutes a row (not the 2-core budget).")
    return "\n".join(lines)


def plot_ptb_valid(results, path):
    results = {n: r for n, r in results.items() if not is_stream(PTB, n)}
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for name, r in results.items():
        logged = [(e, p) for e, p in enumerate(r["valid_ppl_per_epoch"], 1) if p is not None]
        if not logged:
            continue
        ax.plot(*zip(*logged), marker="o", markersize=3, label=PTB.rows[name].description.replace("`", ""),
                linestyle="--" if name.startswith("fairseq") else "-")
    ax.set_yscale("log")
    values = [p for r in results.values() for p in r["valid_ppl_per_epoch"] if p is not None] or [100]
    ax.set_yticks([t for t in (100, 110, 120, 130, 150, 175, 200, 250, 300, 400, 600, 1000)
                   if min(values) * 0.9 <= t <= max(values) * 1.1])
    ax.yaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
    ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlabel("epoch")
    ax.set_ylabel("valid perplexity (log scale; sentences cut at 35)")
    ax.set_title(f"Full PTB, 2 x {SIZE}, SGD lr 1 (halved after epoch {PTB.anneal_after}), --sentence-avg")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)



# ---- full PTB, document streams and the test-time options

SENTENCE_BASELINE = "lstm"  # the sentence-level LSTM of the main table
STREAM_BASELINE = "lstm-stream"


def cache_flags(r):
    c = r.get("cache")
    return f"N {c['window']}, θ {c['theta']}, λ {c['lambda']}" if c else "–"


def attention_note(r):
    if "valid_pointer_gate" in r:
        return f"gate {r['valid_pointer_gate']:.3f}"
    if "valid_attn_entropy" in r:
        return f"entropy {r['valid_attn_entropy']:.2f}"
    return "–"


def gate_note(r, description):
    """A pointer whose sentinel gate sits at 1 is unused (its gradient is scaled by 1 - g): say for
    which epochs, from the gate logged on valid after each epoch (docs/models.md)."""
    gates = r.get("pointer_gate_per_epoch") or []
    stuck = [e for e, g in enumerate(gates, 1) if g is not None and g > 0.99]
    if r.get("valid_pointer_gate", 0) > 0.99:
        return [f"{description}: the sentinel gate is {r['valid_pointer_gate']:.3f} on valid, so the pointer "
                "carries almost no mass and the model is the LSTM under another name (docs/models.md)."]
    if not stuck:
        return []
    # the recipe halves SGD's step after epoch ``anneal_after``
    annealed = r.get("recipe", {}).get("anneal_after") == stuck[-1]
    return [f"{description}: the sentinel gate sat at 1 (pointer unused) after epoch"
            f"{'s' if len(stuck) > 1 else ''} {stuck[0]}" + (f"-{stuck[-1]}" if len(stuck) > 1 else "")
            + f", left it in epoch {stuck[-1] + 1}" + (" when SGD's step halved (lr 1 -> 0.5)" if annealed else "")
            + " and ends at "
            f"{r['valid_pointer_gate']:.3f} on valid: the pointer trained for {len(gates) - len(stuck)} of "
            f"{len(gates)} epochs (docs/models.md)."]


def stream_table(results, rows):
    """``rows``: {name: description} of the stream rows, in order."""
    lines = ["| row | valid ppl | test ppl | vs stream LSTM | + neural cache (chosen on valid) | valid + cache | "
             "**test + cache** | cache gain | best epoch | attention (valid) | params | train min | tokens/s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    base = results.get(STREAM_BASELINE)
    for name, description in rows.items():
        r = results.get(name)
        if r is None:
            lines.append(f"| {description} | not run yet | | | | | | | | | | | |")
            continue
        versus = f"{pct(r['test_ppl'], base['test_ppl']):+.1f}%" if base and name != STREAM_BASELINE else "–"
        cached = "test_ppl_cache" in r
        lines.append(
            f"| {description} | {r['valid_ppl']:.1f} | {r['test_ppl']:.1f} | {versus} | {cache_flags(r)} | "
            + (f"{r['valid_ppl_cache']:.1f} | **{r['test_ppl_cache']:.1f}** | "
               f"{pct(r['test_ppl_cache'], r['test_ppl']):+.1f}% | " if cached else "– | – | – | ")
            + f"{r.get('best_epoch', '?')}/{r['epochs']} | {attention_note(r)} | {r['params'] / 1e6:.2f}M | "
              f"{r['train_minutes']:.0f} | {r['train_tokens_per_s']:,} |")
    return "\n".join(lines)


def dynamic_block(results, rows):
    """Dynamic evaluation on the stream rows that report it: table and statement (goals: >= 10% below
    the static test ppl on every row; the stream LSTM with the cache and dynamic evaluation below 80)."""
    done = [n for n in rows if n in results and "test_ppl_dynamic" in results[n]]
    if not done:
        return ("Dynamic evaluation: no stream row reports it yet (`benchmarks/table.py` computes it in the run "
                "that trains a row).")
    lines = ["| row | test ppl | dynamic evaluation (chosen on valid) | valid + dynamic | **test + dynamic** | gain | "
             "test + cache | **test + cache + dynamic** | gain |", "|---|---|---|---|---|---|---|---|---|"]
    for n in done:
        r, d = results[n], results[n]["dynamic"]
        lines.append(f"| {rows[n]} | {r['test_ppl']:.1f} | SGD lr {d['lr']:g}, decay {d['decay']:g}, segments of "
                     f"{d['segment']} | {r['valid_ppl_dynamic']:.1f} | **{r['test_ppl_dynamic']:.1f}** | "
                     f"{pct(r['test_ppl_dynamic'], r['test_ppl']):+.1f}% | {r['test_ppl_cache']:.1f} | "
                     f"**{r['test_ppl_cache_dynamic']:.1f}** | {pct(r['test_ppl_cache_dynamic'], r['test_ppl']):+.1f}% |")
    gains = {n: pct(results[n]["test_ppl_dynamic"], results[n]["test_ppl"]) for n in done}
    met = all(g <= -10 for g in gains.values())
    lines += ["", "**Dynamic evaluation (generated from the JSON).** " + "; ".join(
        f"{rows[n]}: {results[n]['test_ppl']:.1f} -> {results[n]['test_ppl_dynamic']:.1f} ({gains[n]:+.1f}%), with "
        f"the cache {results[n]['test_ppl_cache_dynamic']:.1f}" for n in done)
        + f". The goal of >= 10% below the static test perplexity on every row is {'met' if met else 'not met'}"
        " (Krause et al.: 11% on AWD-LSTM)."]
    if STREAM_BASELINE in done:
        both = results[STREAM_BASELINE]["test_ppl_cache_dynamic"]
        lines[-1] += (f" The stream LSTM with the cache and dynamic evaluation: {both:.1f} "
                      f"({'below' if both < 80 else 'not below'} the goal of 80; the cache alone: "
                      f"{results[STREAM_BASELINE]['test_ppl_cache']:.1f}).")
    speed = os.path.join(RESULTS, "cpu", "dynamic_eval_speed.json")
    if os.path.exists(speed):
        with open(speed) as f:
            figures = json.load(f)["by_threads"]
        name = "eval, dynamic SGD, segments of 20"
        lines.append("Its cost, eval tokens/s against static scoring (PTB valid as one stream, `alm_lstm` 2 x 200, "
                     "benchmarks/results/cpu/dynamic_eval_speed.json): " + ", ".join(
                         f"{figures[t]['eval']['ratio'][name]:.2f}x at {t} thread{'s' if t != '1' else ''}"
                         for t in sorted(figures, key=int)) + " (goal >= 0.35x).")
    return "\n".join(lines)


def stream_statement(results, rows):
    done = [n for n in rows if n in results]
    head = f"**What document context shows ({len(done)} of {len(rows)} stream rows, generated from the JSON).**"
    stream = results.get(STREAM_BASELINE)
    if stream is None:
        return f"{head} The stream LSTM has not run yet: nothing to compare with."
    lines = [head]
    sentence = results.get(SENTENCE_BASELINE)
    if sentence:
        change = pct(stream["test_ppl"], sentence["test_ppl"])
        lines.append(f"Document context {'helps' if change < -1 else 'does not help'} the equal LSTM: read as 20 "
                     f"streams with its state carried, test {stream['test_ppl']:.1f} against "
                     f"{sentence['test_ppl']:.1f} reset at every sentence ({change:+.1f}%), same size, recipe and "
                     "10 epochs.")
    others = [n for n in done if n != STREAM_BASELINE]
    if others:
        change = {n: pct(results[n]["test_ppl"], stream["test_ppl"]) for n in others}
        ahead = [n for n in others if change[n] <= -3.0]
        verdict = ("ahead of the stream LSTM by >= 3%: " + ", ".join(rows[n] for n in ahead) if ahead else
                   "**no model with a memory spanning sentences beats the stream LSTM** here (the goal was >= 3%)")
        lines.append("Against the stream LSTM's test " + f"{stream['test_ppl']:.1f}: " + "; ".join(
            f"{rows[n]} {results[n]['test_ppl']:.1f} ({change[n]:+.1f}%)" for n in others) + f". So {verdict}. "
            "One seed per row: a difference under ~1% is no evidence either way.")
    for n in done:
        lines.extend(gate_note(results[n], rows[n]))
    cached = [n for n in done if "test_ppl_cache" in results[n]]
    if cached:
        gains = {n: pct(results[n]["test_ppl_cache"], results[n]["test_ppl"]) for n in cached}
        best = min(cached, key=lambda n: results[n]["test_ppl_cache"])
        best_trained = min(others, key=lambda n: results[n]["test_ppl"]) if others else None
        lines.append("The neural cache (nothing trained; window, θ and λ chosen on valid): " + "; ".join(
            f"{rows[n]} {results[n]['test_ppl']:.1f} -> {results[n]['test_ppl_cache']:.1f} ({gains[n]:+.1f}%)"
            for n in cached) + f". Best overall: {rows[best]} with the cache, test {results[best]['test_ppl_cache']:.1f}"
            + (f" ({pct(results[best]['test_ppl_cache'], sentence['test_ppl']):+.1f}% against the sentence-level "
               f"LSTM)." if sentence else ".")
            + f" {sum(g <= -10 for g in gains.values())} of {len(cached)} rows gain >= 10% (Grave et al.: 12% on PTB)."
            + (f" On the stream LSTM the cache ({gains[STREAM_BASELINE]:+.1f}%) "
               + ("gains about as much as" if abs(gains[STREAM_BASELINE] - change[best_trained]) < 1 else
                  "gains more than" if gains[STREAM_BASELINE] < change[best_trained] else "gains less than")
               + f" the best trained memory, {rows[best_trained]} ({change[best_trained]:+.1f}%)."
               if best_trained and STREAM_BASELINE in gains else ""))
    lines.extend(speed_note())
    lines.append("The sentence-level rows of the main table have no cache figures: their checkpoints were not "
                 "kept (they trained on an earlier machine); `alm-cache-grid` gives them from a checkpoint.")
    return "\n".join(lines)


def speed_note():
    """What carrying a memory and the cache cost, from benchmarks/stream_speed.py's JSON: every
    thread count of one run."""
    path = os.path.join(RESULTS, "cpu", "stream_speed.json")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        by_threads = json.load(f)["by_threads"]
    counts = sorted(by_threads, key=int)
    ratio = lambda part, name: " / ".join(f"{by_threads[t][part]['ratio'][name]:.2f}" for t in counts)
    train = [n for n in by_threads[counts[0]]["train"]["ratio"] if n != by_threads[counts[0]]["train"]["baseline"]]
    cached = [n for n in by_threads[counts[0]]["eval"]["ratio"] if n != by_threads[counts[0]]["eval"]["baseline"]]
    attention = [n for n in train if n.startswith(("attentive_lm", "amsrn"))]
    met = all(by_threads[t]["train"]["ratio"][n] >= 0.85 for t in counts for n in attention)
    fast = all(by_threads[t]["eval"]["ratio"][n] >= 0.8 for t in counts for n in cached)
    repeats = by_threads[counts[0]]["train"]["title"].rsplit(", ", 1)[-1]  # "median of N"
    return [f"Speed ({' / '.join(counts)} threads, one run of benchmarks/stream_speed.py, {repeats}; "
            "benchmarks/results/cpu/stream_speed.json): the stream training step against `alm_lstm`: "
            + "; ".join(f"{n} {ratio('train', n)}" for n in train)
            + f" (goal for attention >= 0.85: {'met' if met else 'not met'}). Evaluation (`--batch-size 1`): "
            + "; ".join(f"{n} {ratio('eval', n)} of the speed without it" for n in cached)
            + f" (goal >= 0.8: {'met' if fast else 'not met'})."]


def plot_streams(results, rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    done = [n for n in rows if n in results]
    if not done:
        return
    fig, ax = plt.subplots(figsize=(7, 3.8))
    x = range(len(done))
    plain = [results[n]["test_ppl"] for n in done]
    cached = [results[n].get("test_ppl_cache", float("nan")) for n in done]
    ax.bar([i - 0.2 for i in x], plain, width=0.4, label="model alone")
    ax.bar([i + 0.2 for i in x], cached, width=0.4, label="+ neural cache")
    for i, (p, c) in enumerate(zip(plain, cached)):
        ax.text(i - 0.2, p + 1, f"{p:.1f}", ha="center", fontsize=7)
        ax.text(i + 0.2, c + 1, f"{c:.1f}", ha="center", fontsize=7)
    if SENTENCE_BASELINE in results:
        ax.axhline(results[SENTENCE_BASELINE]["test_ppl"], color="gray", linestyle="--", linewidth=1,
                   label=f"sentence-level LSTM ({results[SENTENCE_BASELINE]['test_ppl']:.1f})")
    ax.set_xticks(list(x))
    ax.set_xticklabels([n.replace("-stream", "") for n in done])
    ax.set_ylabel("test perplexity")
    ax.set_ylim(min(c for c in cached + plain if c == c) * 0.8, max(plain) * 1.12)
    ax.set_title("Full PTB, document streams (2 x 200, 10 epochs): with and without the cache", fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)

# ---- the adaptive softmax

SPEED_GOAL, POINTER_GOAL, QUALITY_GOAL = 1.5, 0.85, 3.0  # x PTB full step; x alm_lstm; % test ppl


def speed_table(speed, kind):
    threads = sorted(speed["by_threads"], key=int)
    first = speed["by_threads"][threads[0]][kind]
    lines = ["| " + " | ".join(["run"] + [f"tokens/s, {t} thread{'s' if t != '1' else ''} | vs baseline"
                                          for t in threads]) + " |",
             "|---|" + "---|---|" * len(threads)]
    for name in first["tokens_per_s"]:
        cells = []
        for t in threads:
            figures = speed["by_threads"][t][kind]
            cells += [f"{figures['tokens_per_s'][name]:,}", f"{figures['ratio'][name]:.2f}"]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + f"\n\n(baseline: {first['baseline']}; {first['title'].split(', CPU')[0]})"


def speed_statement(speed):
    lines = []
    for t in sorted(speed["by_threads"], key=int):
        ratio = speed["by_threads"][t]["train"]["ratio"]
        tied = {n: r for n, r in ratio.items() if n.startswith("WT2") and "(tied)" in n}
        best = max(tied, key=tied.get)
        full = ratio["WT2 alm_lstm, full softmax"]
        pointer = {n: r / ratio[base] for n, r, base in (
            (n, r, "PTB alm_lstm, adaptive 2000 (tied)" if "adaptive" in n else "PTB alm_lstm, full softmax")
            for n, r in ratio.items() if "pointer" in n)}
        evaluation = speed["by_threads"][t]["eval"]["ratio"]
        lines.append(
            f"- {t} thread{'s' if t != '1' else ''}: a WikiText-2 step with the full softmax runs at {full:.2f}x a PTB "
            f"full-softmax step; with the tied default (2000,10000) at "
            f"{ratio['WT2 alm_lstm, adaptive 2000,10000 (tied)']:.2f}x (goal >= {SPEED_GOAL}x: "
            f"{'met' if ratio['WT2 alm_lstm, adaptive 2000,10000 (tied)'] >= SPEED_GOAL else 'not met'}), best tied "
            f"{best.split(', ')[1]} {tied[best]:.2f}x, untied {ratio['WT2 alm_lstm, adaptive 2000,10000 (untied)']:.2f}x. "
            "The pointer's step against `alm_lstm` with the same output layer: "
            + ", ".join(f"{n.split(', ')[1]} {r:.2f}x" for n, r in pointer.items())
            + f" (goal >= {POINTER_GOAL}x: {'met' if min(pointer.values()) >= POINTER_GOAL else 'not met'}). "
            f"Evaluation on WikiText-2 (1 x 35 chunks, the whole distribution formed): adaptive "
            f"{evaluation['WT2 eval, adaptive 2000,10000 (tied)']:.2f}x the full softmax.")
    return "\n".join(lines)


def adaptive_quality(results):
    full, adaptive = results.get("lstm-stream"), results.get("lstm-stream-adaptive")
    if adaptive is None or full is None:
        return "The PTB row with the adaptive softmax (`lstm-stream-adaptive`) has not finished yet."
    lines = ["| row | valid ppl | test ppl | test + neural cache | params | train min | tokens/s |",
             "|---|---|---|---|---|---|---|"]
    for name, r in (("lstm-stream", full), ("lstm-stream-adaptive", adaptive)):
        lines.append(f"| `{name}`: {r['description']} | {r['valid_ppl']:.1f} | {r['test_ppl']:.1f} | "
                     f"{r.get('test_ppl_cache', float('nan')):.1f} | {r['params'] / 1e6:.2f}M | {r['train_minutes']:.0f} | "
                     f"{r['train_tokens_per_s']:,} |")
    change = 100 * (adaptive["test_ppl"] / full["test_ppl"] - 1)
    verdict = "within" if change <= QUALITY_GOAL else "outside"
    lines += ["", f"On full PTB, same recipe and budget (10 epochs, 20 streams x 35 words, one thread), the tied "
                  f"adaptive softmax changes the stream LSTM's test perplexity by {change:+.1f}% ({full['test_ppl']:.1f} "
                  f"-> {adaptive['test_ppl']:.1f}): {verdict} the {QUALITY_GOAL:.0f}% goal. Rows recorded at commits "
                  f"{full['commit']} and {adaptive['commit']}; their tokens/s were measured beside other work on the "
                  "machine (the speed table above is the side-by-side measurement)."]
    return "\n".join(lines)


def adaptive_block(results):
    path = os.path.join(RESULTS, "cpu", "output_layer_speed.json")
    parts = []
    if os.path.exists(path):
        with open(path) as f:
            speed = json.load(f)
        command = "python benchmarks/output_layer_speed.py " + " ".join(speed["argv"])
        parts += ["Training step (forward, `attention_cross_entropy`, backward, clip, SGD), `alm_lstm` 2 x 200, "
                  "20 streams x 35 words:", "", speed_table(speed, "train"), "",
                  "Evaluation, WikiText-2 valid as one stream:", "", speed_table(speed, "eval"), "",
                  speed_statement(speed), "", f"(`{command}`)"]
    else:
        parts.append("The speed benchmark has not run yet (`python benchmarks/output_layer_speed.py`).")
    parts += ["", adaptive_quality(results)]
    return "\n".join(parts)

# ---- WikiText-2: the Attentive LM paper's Table 2 at our size

WT2_GOALS = {"cache": 25, "dynamic": 15, "pointer": 10, "best": 40}  # % below: stream rows; vs stream LSTM; vs lstm


def cell(r, key):
    return f"{r[key]:.1f}" if key in r else "–"


def wt2_table(results):
    lines = ["| row | reads | valid ppl | test ppl | + cache | + dynamic eval | + both | best epoch | params | "
             "train min | tokens/s | the paper's valid / test |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, row in WIKITEXT2.rows.items():
        r = results.get(name)
        if r is None:  # named below the table with the command that runs it
            continue
        lines.append(f"| {row.description} | {row.reading} | {r['valid_ppl']:.1f} | **{r['test_ppl']:.1f}** | "
                     f"{cell(r, 'test_ppl_cache')} | {cell(r, 'test_ppl_dynamic')} | {cell(r, 'test_ppl_cache_dynamic')} | "
                     f"{r.get('best_epoch', '?')}/{r['epochs']}{unlogged(r)} | {r['params'] / 1e6:.2f}M | "
                     f"{r['train_minutes']:.0f} | {r['train_tokens_per_s'] or '–'} | {WIKITEXT2.paper.get(name, '')} |")
    queued = [name for name in WIKITEXT2.rows if name not in results]
    if queued:
        lines.append(f"\nQueued, not in the table: {'; '.join(WIKITEXT2.rows[n].description for n in queued)} "
                     f"(`python benchmarks/table.py --corpus wikitext-2 --rows {','.join(queued)} --threads 1`; each "
                     "costs about a finished row's training and evaluation minutes, below).")
    return "\n".join(lines)


def paper_table():
    lines = ["| the paper's Table 2 (Salton et al. 2017, as printed) | params | valid | test |", "|---|---|---|---|"]
    lines += [f"| {system} | {params} | {valid} | {test} |" for system, params, valid, test in WIKITEXT2_PAPER]
    return "\n".join(lines)


def best_option(r):
    """The lowest test ppl a row reaches and with what: (ppl, label)."""
    options = [("alone", "test_ppl"), ("with the cache", "test_ppl_cache"), ("with dynamic evaluation",
               "test_ppl_dynamic"), ("with the cache and dynamic evaluation", "test_ppl_cache_dynamic")]
    return min((r[key], label) for label, key in options if key in r)


def grid_edge_note(results, rows, edge):
    """Where dynamic evaluation's pick on valid (alone or with the cache) sits at the grid's strongest
    adaptation (its largest lr or smallest decay), the best setting may lie outside it: say so, and
    what ``grid_edge.py`` found one step beyond (``edge``: dynamic-edge.json) or that it has not looked."""
    sides = {n: {s for pick in picks(results[n]).values() for s in edge_sides(WIKITEXT2, pick)}
             for n in rows if n in results and "dynamic" in results[n]}
    edged = {n: [text for side, text in (("lr", "the largest lr"), ("decay", "the smallest decay")) if side in hit]
             for n, hit in sides.items() if hit}
    if not edged:
        return []
    lines = [f"Dynamic evaluation's pick on valid sits at the grid's strongest adaptation (SGD lr "
             f"{WIKITEXT2.dynamic_lrs.replace(',', ', ')} x decay {WIKITEXT2.dynamic_decays.replace(',', ', ')}) for "
             + "; ".join(f"{rows[n]} ({' and '.join(texts)})" for n, texts in edged.items()) + "."]
    # a probe answers to the picks it saw: one made before the row was evaluated again counts as not run
    probed = [n for n in edged if n in edge and edge[n]["picks"] == picks(results[n])]
    setting = lambda p: f"lr {p['lr']:g} decay {p['decay']:g}"
    if probed:
        lines.append("One step beyond, on valid alone / with the cache (`benchmarks/grid_edge.py`; the table keeps "
                     "the grid's figures): " + "; ".join(
                         f"{rows[n]}: " + ", ".join(f"{setting(p)} {p['valid_ppl_dynamic']:.1f} / "
                                                    f"{p['valid_ppl_cache_dynamic']:.1f}" for p in edge[n]["beyond"])
                         + f" against the picks' {results[n]['valid_ppl_dynamic']:.1f} / "
                           f"{results[n]['valid_ppl_cache_dynamic']:.1f}" for n in probed) + ".")
        wins = []
        for n in probed:
            for p in edge[n]["beyond"]:
                for kind, valid, test in KINDS:
                    if f"test_ppl_{kind}" in p:
                        change = pct(p[f"test_ppl_{kind}"], results[n][test])
                        how = " with the cache" if kind == "both" else ""
                        wins.append(f"{rows[n]} at {setting(p)}{how}: valid {p[valid]:.1f} against "
                                    f"{results[n][valid]:.1f}, test {p[f'test_ppl_{kind}']:.1f} against the table's "
                                    f"{results[n][test]:.1f} ({change:+.1f}%, "
                                    + ("better on test too" if change < 0 else "**not better on test**") + ")")
        if wins:
            lines.append("**A step beyond wins on valid** (one step was tried; further is untried): " + "; ".join(wins) + ".")
        standing = [n for n in probed if not any(f"test_ppl_{kind}" in p for p in edge[n]["beyond"]
                                                 for kind, _, _ in KINDS)]
        if standing:
            lines.append("No step beyond beats the picks, alone or with the cache, for "
                         + "; ".join(rows[n] for n in standing) + ": their grid picks stand.")
    unprobed = [n for n in edged if n not in probed]
    if unprobed:
        lines.append("Not tried beyond the grid yet for " + "; ".join(rows[n] for n in unprobed)
                     + " (on PTB's stream LSTM lr 3 and decay 0.003 lost, which narrowed the grid): "
                       "`python benchmarks/grid_edge.py --save-dir <table.py's>` does.")
    return [" ".join(lines)]


def wt2_statement(results, edge=None):
    """``edge``: grid_edge.py's probe beyond dynamic evaluation's grid (dynamic-edge.json), if run."""
    rows = {n: WIKITEXT2.rows[n].description for n in WIKITEXT2.rows}
    head = f"**What it shows ({len(results)} of {len(rows)} rows, generated from the JSON).**"
    lstm, stream = results.get("lstm"), results.get("lstm-stream")
    if not results:
        return f"{head} No row has finished yet."
    lines = [head]
    if lstm:
        attention = [n for n in ("single", "combined", "amsrn") if n in results]
        if attention:
            change = {n: pct(results[n]["test_ppl"], lstm["test_ppl"]) for n in attention}
            beats = [n for n in attention if change[n] < -1]
            lines.append("Attention within the sentence against the equal LSTM's test "
                         f"{lstm['test_ppl']:.1f}: " + "; ".join(f"{rows[n]} {results[n]['test_ppl']:.1f} "
                                                               f"({change[n]:+.1f}%)" for n in attention)
                         + (". It beats the LSTM on WikiText-2 (on PTB it tied)." if beats else
                            ". **It does not beat the equal LSTM on WikiText-2 either** (on PTB it tied); the "
                            "paper's 69.7 against 99.3 compares a 50M-parameter model with another paper's LSTM."))
        if stream:
            lines.append(f"Document streams: the same LSTM reading the articles in order with its state carried, "
                         f"test {stream['test_ppl']:.1f} against {lstm['test_ppl']:.1f} reset at every sentence "
                         f"({pct(stream['test_ppl'], lstm['test_ppl']):+.1f}%).")
    ours = [n for n in rows if n in results and not n.startswith("fairseq")]
    stream_rows = [n for n in ours if WIKITEXT2.rows[n].reading == "stream"]
    for option, key, goal in (("The neural cache", "test_ppl_cache", WT2_GOALS["cache"]),
                              ("Dynamic evaluation", "test_ppl_dynamic", WT2_GOALS["dynamic"])):
        done = [n for n in ours if key in results[n]]
        if done:
            gain = {n: pct(results[n][key], results[n]["test_ppl"]) for n in done}
            met = [n for n in stream_rows if n in gain and gain[n] <= -goal]
            lines.append(f"{option} (settings chosen on valid): " + "; ".join(
                f"{rows[n]} {gain[n]:+.1f}%" for n in done) + f". Goal >= {goal}% below each stream row's test "
                + (f"ppl: {'met' if len(met) == len(stream_rows) else 'not met'} ({len(met)} of {len(stream_rows)} "
                   "stream rows)." if stream_rows else "ppl: no stream row has finished yet."))
    lines.extend(grid_edge_note(results, rows, edge or {}))
    if stream and "ps-lstm-stream" in results:
        change = pct(results["ps-lstm-stream"]["test_ppl"], stream["test_ppl"])
        lines.append(f"The Pointer Sentinel-LSTM against the stream LSTM: {results['ps-lstm-stream']['test_ppl']:.1f} "
                     f"against {stream['test_ppl']:.1f} ({change:+.1f}%; goal >= {WT2_GOALS['pointer']}% ahead: "
                     f"{'met' if change <= -WT2_GOALS['pointer'] else 'not met'}).")
        lines.extend(gate_note(results["ps-lstm-stream"], rows["ps-lstm-stream"]))
    if ours:
        best = min(ours, key=lambda n: best_option(results[n])[0])
        ppl, how = best_option(results[best])
        lines.append(f"Best combination: {rows[best]} {how}, test {ppl:.1f}"
                     + (f" ({pct(ppl, lstm['test_ppl']):+.1f}% against the sentence-level LSTM; goal >= "
                        f"{WT2_GOALS['best']}% below: {'met' if pct(ppl, lstm['test_ppl']) <= -WT2_GOALS['best'] else 'not met'})"
                        if lstm else "") + ".")
    peer = results.get("fairseq-lstm_lm")
    if peer and stream:
        change = pct(stream["test_ppl"], peer["test_ppl"])
        lines.append(f"Against fairseq's `lstm_lm` (same size and recipe, its untied adaptive softmax, shuffled "
                     f"35-token blocks with no state carried, scored with 35 tokens of context): our stream LSTM "
                     f"{stream['test_ppl']:.1f}, the peer {peer['test_ppl']:.1f} ({change:+.1f}%; goal: at or ahead, "
                     f"{'met' if change <= 0 else 'not met'}). Comparable: the data, the token count, the size, the "
                     f"optimizer and budget; not: the peer has {peer['params'] / 1e6:.1f}M parameters (untied tails) "
                     "and sees at most 70 tokens of context where the stream reads the whole article.")
    span = lambda values: f"{min(values):.0f} to {max(values):.0f}" if len(values) > 1 else f"{values[0]:.0f}"
    # our rows' evaluation, the grid included (the peer's is two eval-lm passes)
    evaluated = [r["eval_minutes"] for r in results.values()
                 if "eval_minutes" in r and "cache" in r and not r["cache"].get("grid_points_reused")]
    points = len(WIKITEXT2.dynamic_lrs.split(",")) * len(WIKITEXT2.dynamic_decays.split(","))
    lines.append(f"Cost at one thread, two jobs side by side: {span([r['train_minutes'] for r in results.values()])} "
                 f"training minutes a row for {WIKITEXT2.epochs} epochs"
                 + (f", then {span(evaluated)} minutes of evaluation (our rows: {points} dynamic-evaluation passes "
                    "over valid to choose on, two over test)" if evaluated else "") + ".")
    return "\n".join(lines)


def option_value(row, flag, default=None):
    return row.args[row.args.index(flag) + 1] if flag in row.args else default


def cutoff_note():
    results = WIKITEXT2_CUTOFFS.load()
    if not results:
        return "The cutoffs' slice has not run yet (`python benchmarks/table.py --corpus wikitext-2-cutoffs`)."
    choice = min(results, key=lambda n: results[n]["valid_ppl"])
    return ("The adaptive softmax's cutoffs, chosen on a slice (the stream LSTM's first "
            f"{WIKITEXT2_CUTOFFS.max_update} updates, a fifth of an epoch, valid ppl): " + "; ".join(
                f"{WIKITEXT2_CUTOFFS.rows[n].description.rsplit(' ', 1)[1]}: valid {r['valid_ppl']:.1f} at "
                f"{r['train_tokens_per_s']:,} tokens/s" for n, r in results.items())
            + f". Valid picks {WIKITEXT2_CUTOFFS.rows[choice].description.rsplit(' ', 1)[1]}; the rows use "
              f"`--adaptive-softmax-cutoff {option_value(WIKITEXT2.rows['lstm'], '--adaptive-softmax-cutoff')}`.")


def pointer_choice(args):
    """``(--pointer-loss, --sentinel-scale)`` of a row's arguments; absent: off and 1, what the rows
    trained before the scale's default became 0.1 used (every row now states both)."""
    row = type("Args", (), {"args": list(args)})
    return option_value(row, "--pointer-loss", "off"), option_value(row, "--sentinel-scale", "1")


def pointer_loss_block():
    """The pointer's gate: ``--pointer-loss`` off / found / all and ``--sentinel-scale`` 1 / 0.1 over
    the PTB stream row's first epochs ('off' at scale 1: the full-PTB row's own first epochs, the same
    run up to there), chosen by valid ppl after the last of them."""
    epochs = PTB_POINTER_LOSS.epochs
    runs = {pointer_choice(r["args"]): r for r in (PTB.load().get("ps-lstm-stream"), *PTB_POINTER_LOSS.load().values())
            if r}
    if len(runs) < 2:
        return ("The pointer's extra loss term has not been compared yet "
                "(`python benchmarks/table.py --corpus ptb-pointer-loss`).")
    fmt = lambda values, form: ", ".join("–" if v is None else format(v, form) for v in values[:epochs])
    lines = [f"The Pointer Sentinel's gate on full PTB, the stream row's first {epochs} epochs (valid after each "
             "epoch; `off` at scale 1 is the full-PTB row's own first epochs). Where the gate g is 1 the extra "
             "term -log(g + sum a_i) is 0 and its gradient vanishes with the pointer's weights: it shapes where a "
             "used pointer points but cannot revive a saturated gate. `--sentinel-scale 0.1` moves the sentinel "
             "at 1/100 of SGD's rate (the model unchanged):", "",
             "| `--pointer-loss` | `--sentinel-scale` | valid ppl by epoch | sentinel gate by epoch |", "|---|---|---|---|"]
    order = ["off", "found", "all"]
    for (loss, scale), r in sorted(runs.items(), key=lambda item: (-float(item[0][1]), order.index(item[0][0]))):
        lines.append(f"| {loss} | {scale} | {fmt(r['valid_ppl_per_epoch'], '.1f')} | "
                     f"{fmt(r.get('pointer_gate_per_epoch', []), '.3g')} |")
    valid = {choice: r["valid_ppl_per_epoch"][epochs - 1] for choice, r in runs.items()}
    gate = lambda choice: ((runs[choice].get("pointer_gate_per_epoch") or [])[epochs - 1:] or [None])[0]
    for loss in ("found", "all"):  # the term where the gate is free to move
        for scale in sorted({s for _, s in runs}, key=float):
            if ((loss, scale) in runs and ("off", scale) in runs and gate(("off", scale)) not in (None, 1)
                    and gate((loss, scale)) is not None):
                lines += ["", f"With a working gate (scale {scale}) the term `{loss}` moved it from "
                              f"{gate(('off', scale)):.3g} to {gate((loss, scale)):.3g} after epoch {epochs} "
                              f"({'towards' if gate((loss, scale)) > gate(('off', scale)) else 'away from'} the "
                              f"softmax) and valid by {100 * (valid[(loss, scale)] / valid[('off', scale)] - 1):+.1f}%."]
    loss, scale = best = min(valid, key=valid.get)
    gap = f" ({100 * (valid[best] / valid[('off', '1')] - 1):+.1f}% against off at scale 1)" if ("off", "1") in valid else ""
    used = pointer_choice(WIKITEXT2.rows["ps-lstm-stream"].args)
    lines += ["", f"Valid after epoch {epochs} picks `--pointer-loss {loss} --sentinel-scale {scale}`{gap}; the "
                  f"WikiText-2 row trains with `--pointer-loss {used[0]} --sentinel-scale {used[1]}`."]
    return "\n".join(lines)


def wt2_block():
    results = WIKITEXT2.load()
    edge_path = os.path.join(WIKITEXT2.results, "dynamic-edge.json")
    edge = json.load(open(edge_path)) if os.path.exists(edge_path) else {}
    return "\n\n".join([wt2_table(results), wt2_statement(results, edge), paper_table(), cutoff_note(),
                        pointer_loss_block()])


# ---- the character models (Kawakami et al. 2017, Tables 4-5)

CHAR_CORPORA = {"PTB": PTB_CHARS, "WikiText-2": WIKITEXT2_CHARS}


def char_table(corpus, results):
    """The finished rows of one corpus, bits per character and word perplexity, each split one stream."""
    lines = ["| model | valid bpc | test bpc | valid word ppl | test word ppl | cache use (test) | best epoch | "
             "params | train min | chars/s |", "|---|---|---|---|---|---|---|---|---|---|"]
    for name, row in corpus.rows.items():
        r = results.get(name)
        if r is not None:
            use = f"{r['test_cache_use']:.3f}" if "test_cache_use" in r else "–"
            speed = f"{r['train_chars_per_s']:,}" if "train_chars_per_s" in r else "–"
            lines.append(f"| {row.description} | {r['valid_bpc']:.4f} | **{r['test_bpc']:.4f}** | "
                         f"{r['valid_ppl']:.1f} | {r['test_ppl']:.1f} | {use} | {r.get('best_epoch', '?')}/{r['epochs']} | "
                         f"{r['params'] / 1e6:.2f}M | {r['train_minutes']:.0f} | {speed} |")
    return "\n".join(lines)


def char_paper_table():
    names = list(PTB_CHARS.rows)
    lines = ["| the paper's Tables 4-5 (Kawakami et al. 2017, 600-d, bpc as printed) | PTB dev / test | "
             "WikiText-2 dev / test |", "|---|---|---|"]
    lines += [f"| {PTB_CHARS.rows[n].description} | {PTB_CHARS.paper[n]} | {WIKITEXT2_CHARS.paper[n]} |" for n in names]
    return "\n".join(lines)


def paper_test_bpc(corpus, name):
    return float(corpus.paper[name].split("/")[1])


def char_statement(by_corpus):
    """HCLM against the character LSTM and the cache against HCLM, on each corpus where both rows finished,
    beside the paper's change; the rows not finished are named with the command that runs them."""
    lines = [f"**What it shows ({sum(map(len, by_corpus.values()))} of "
             f"{sum(len(c.rows) for c in CHAR_CORPORA.values())} rows, generated from the JSON).**"]
    for label, (ours, base, claim) in {"hclm": ("hclm", "char-lstm", "HCLM against the character LSTM"),
                                       "cache": ("hclm-cache", "hclm", "The cache against HCLM")}.items():
        found = {}  # corpus -> (our change, the paper's change, the text)
        for corpus_name, corpus in CHAR_CORPORA.items():
            r = by_corpus[corpus_name]
            if ours in r and base in r:
                change = pct(r[ours]["test_bpc"], r[base]["test_bpc"])
                paper = pct(paper_test_bpc(corpus, ours), paper_test_bpc(corpus, base))
                found[corpus_name] = (change, paper, f"{corpus_name} test {r[ours]['test_bpc']:.4f} against "
                                      f"{r[base]['test_bpc']:.4f} bpc ({change:+.1f}%; the paper {paper:+.1f}%), word "
                                      f"ppl {r[ours]['test_ppl']:.1f} against {r[base]['test_ppl']:.1f}")
        if found:
            better = [name for name, (change, _, _) in found.items() if change < 0]
            verdict = ("better on " + " and ".join(better) if len(better) == len(found) else
                       f"**better on {' and '.join(better)} only**" if better else "**not better on any corpus measured**")
            lines.append(f"{claim}: " + "; ".join(text for _, _, text in found.values()) + f": {verdict}.")
            if label == "cache" and len(found) == 2:
                (ptb, ptb_paper, _), (wt2, wt2_paper, _) = found["PTB"], found["WikiText-2"]
                lines.append(f"The paper's claim that the cache gains more on WikiText-2 than on PTB: here "
                             f"{wt2:+.1f}% against {ptb:+.1f}% (the paper {wt2_paper:+.1f}% against {ptb_paper:+.1f}%)"
                             + (": it holds here." if wt2 < min(ptb, 0) else ": **it does not hold here**."))
    last_change = lambda r: r["bpc_per_epoch"][-1] - r["bpc_per_epoch"][-2]  # an undertrained row still falls
    falling = [f"{corpus_name} {CHAR_CORPORA[corpus_name].rows[n].description} ({last_change(r):+.4f})"
               for corpus_name, rows in by_corpus.items() for n, r in rows.items()
               if len(r.get("bpc_per_epoch") or []) > 1 and last_change(r) < -0.005]
    if falling:
        lines.append("Valid bpc was still falling in the last epoch (its change from the one before) for "
                     + "; ".join(falling) + ": the epoch budget, not the model, sets these figures.")
    missing = {corpus_name: [n for n in corpus.rows if n not in by_corpus[corpus_name]]
               for corpus_name, corpus in CHAR_CORPORA.items()}
    queued = [f"{corpus_name} {', '.join(names)} (`python benchmarks/table.py --corpus {CHAR_CORPORA[corpus_name].name} "
              f"--rows {','.join(names)} --threads 1`)" for corpus_name, names in missing.items() if names]
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
    columns = [every["copied"], every["spelled"], rare["copied"], rare["spelled"]]
    lines = [f"Which words the cache copies, {corpus_name} test (`alm-cache-posterior`; p(z|w): the mean posterior "
             f"of the cache over a type's occurrences after the first, n: its occurrences in test; mean over every "
             f"word {posterior['mean_posterior']:.3f}):", "",
             f"| copied most ({every['types']:,} repeated types) | p(z\\|w) | n | spelled most | p(z\\|w) | n "
             f"| copied most, < {posterior['rare_in_train']} in train ({rare['types']:,} types) | p(z\\|w) | n "
             f"| spelled most, < {posterior['rare_in_train']} in train "
             "| p(z\\|w) | n |", "|---" * 12 + "|"]
    for i in range(min(top, max(map(len, columns)))):
        lines.append("| " + " | ".join(listed(column, i) for column in columns) + " |")
    return "\n".join(lines)


def char_block():
    by_corpus = {name: corpus.load() for name, corpus in CHAR_CORPORA.items()}
    parts = []
    for name, corpus in CHAR_CORPORA.items():
        if by_corpus[name]:
            parts.append(f"{name} ({corpus.streams} streams x 35 words, {corpus.epochs} epochs):\n\n"
                         + char_table(corpus, by_corpus[name]))
    lists = [copy_lists(name, rows["hclm-cache"]["test_cache_posterior"]) for name, rows in by_corpus.items()
             if "test_cache_posterior" in rows.get("hclm-cache", {})]
    if lists:
        lists.append("The paper's Tables 7-8 (its English test text): the cache serves frequent words (*the*, *of*) "
                     "and proper nouns (*Lesnar*, *Gore*); basic words and numbers (*300*, *act*, *however*) are spelled.")
    return "\n\n".join([*parts, char_statement(by_corpus), char_paper_table(), *lists])


# ---- every block

def train_speed_block():
    """The training step against a bare nn.LSTM LM at each thread count of one run
    (``train_speed.py --mode model --json benchmarks/results/cpu/train_speed_model.json``)."""
    with open(os.path.join(RESULTS, "cpu", "train_speed_model.json")) as f:
        result = json.load(f)
    by_threads = result.get("by_threads") or {result["device"]: result}
    counts = list(by_threads)
    first = by_threads[counts[0]]
    head = " | ".join(f"tokens/s, {by_threads[c]['device']} | vs {first['baseline']}" for c in counts)
    lines = [f"| model | {head} |", "|---" * (1 + 2 * len(counts)) + "|"]
    for name in first["tokens_per_s"]:
        lines.append(f"| {name} | " + " | ".join(f"{by_threads[c]['tokens_per_s'][name]:,} | "
                                                 f"{by_threads[c]['ratio'][name]:.2f}" for c in counts) + " |")
    # the table is written by this module now, no longer by the script's old --update-docs
    command = " ".join(["python benchmarks/train_speed.py", *(a for a in first["argv"] if a != "--update-docs")])
    return "\n".join(lines) + f"\n\n({first['title'].rsplit(', CPU', 1)[0]}; `{command}`)"


def blocks(ptb_results_dir=None, draw=True):
    """{marker: text} for every generated block of docs/benchmarks.md; ``draw``: the pictures too."""
    results = PTB.load(ptb_results_dir)
    streams = {n: row.description for n, row in PTB.rows.items()
               if is_stream(PTB, n) and row.full_softmax_twin is None}
    if results and draw:
        plot_ptb_valid(results, os.path.join(ROOT, "docs", "ptb_valid_ppl.png"))
        plot_streams(results, streams, os.path.join(ROOT, "docs", "ptb_stream.png"))
    return {"ptb-table": f"{ptb_table(results)}\n\n{ptb_statement(results)}",
            "train-speed": train_speed_block(),
            "ptb-stream": f"{stream_table(results, streams)}\n\n{stream_statement(results, streams)}"
                          "\n\n![Test perplexity of the stream rows with and without the cache](ptb_stream.png)"
                          f"\n\n{dynamic_block(results, streams)}",
            "adaptive-softmax": adaptive_block(results),
            "wikitext-2": wt2_block(),
            "char-tables": char_block()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--update-docs", action="store_true", help="write every block into docs/benchmarks.md "
                                                                   "between its markers")
    parser.add_argument("--ptb-results", help="read the PTB rows' JSON from here (default: benchmarks/results/ptb)")
    args = parser.parse_args(argv)
    generated = blocks(args.ptb_results)
    for marker, text in generated.items():
        print(f"<!-- {marker} -->\n{text}\n")
    if args.update_docs:
        for marker, text in generated.items():
            fill_markers(os.path.join(ROOT, "docs", "benchmarks.md"), marker, text)


if __name__ == "__main__":
    main()
