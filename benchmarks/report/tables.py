"""What the generated tables share: the JSON that the benchmark scripts wrote under
``benchmarks/results/`` (the rows' own JSON is read by their corpus, ``rows.Corpus.load``) and the
cells every table writes the same way: a figure or a dash, a row's best epoch, the paper's figures."""
import os

from benchmarks.result_files import read_result
from benchmarks.rows import ROOT

RESULTS = os.path.join(ROOT, "benchmarks", "results")


def result_json(*parts):
    """``benchmarks/results/<parts>`` (``"cpu", "stream_speed.json"``), or None before its script ran."""
    path = os.path.join(RESULTS, *parts)
    if not os.path.exists(path):
        return None
    return read_result(path)  # checked: a broken file refused by name and key


def threads(count):
    """``"1"`` -> ``"1 thread"``, ``"2"`` -> ``"2 threads"``."""
    return f"{count} thread{'s' if count != '1' else ''}"


def speed_table(first_column, columns):
    """Tokens/s and the ratio to the baseline of each measured run, a pair of columns per
    ``(heading, figures)`` of ``columns`` (``figures``: a speed script's ``tokens_per_s`` and ``ratio``)."""
    lines = [f"| {first_column} | " + " | ".join(f"tokens/s, {heading}" for heading, _ in columns) + " |",
             "|---" * (1 + 2 * len(columns)) + "|"]
    for name in columns[0][1]["tokens_per_s"]:
        lines.append(f"| {name} | " + " | ".join(f"{figures['tokens_per_s'][name]:,} | {figures['ratio'][name]:.2f}"
                                                 for _, figures in columns) + " |")
    return "\n".join(lines)


def is_stream(corpus, name):
    return corpus.rows[name].reading == "stream"


def cell(r, key):
    """A perplexity to one decimal, or a dash where the row has none."""
    return f"{r[key]:.1f}" if key in r else "–"


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


def paper_figures(text):
    """A paper's figures as ``rows.py`` writes them, ``"71.7 / 70.1 (2 x 650)"`` -> ``(71.7, 70.1)``."""
    valid, test = text.split(" (")[0].split(" / ")
    return float(valid), float(test)


BEFORE_THE_FIX = "‡"


def before_the_fix_note(corpus, results):
    """The footnote of a table holding a row marked ``BEFORE_THE_FIX`` (none otherwise)."""
    if not any(corpus.rows[n].before_the_dropout_fix(r) for n, r in results.items() if n in corpus.rows):
        return []
    return [f"{BEFORE_THE_FIX} trained before every tensor was dropped once (the LSTM and the pointer dropped h_t "
            "twice, the attention read dropped states: docs/models.md, \"Dropout\"); `python -m benchmarks.table` "
            "retrains such a row and replaces its JSON."]


def label(corpus, name, r):
    """A row's description, marked where its JSON was trained before the dropout fix."""
    description = corpus.rows[name].description
    stale = r is not None and corpus.rows[name].before_the_dropout_fix(r)
    return f"{description} {BEFORE_THE_FIX}" if stale else description


def one_layout(corpus, results, base):
    """``(kept, notes)``: the rows trained under the dropout layout of ``base`` (the statement's
    baseline; the fixed layout where it has not run) and fairseq's own rows, which any layout may
    be compared with; ``notes`` name the rows left out and say when the statement stands on rows
    trained before the fix. A statement compares only rows of one layout."""
    stale = lambda n: corpus.rows[n].before_the_dropout_fix(results[n])
    reference = stale(base) if base in results else False
    kept = {n: r for n, r in results.items() if not corpus.rows[n].has_our_decoder or stale(n) == reference}
    left = [n for n in results if n not in kept]
    notes = []
    if reference:
        notes.append(f"These figures stand on rows trained before the dropout fix ({BEFORE_THE_FIX}), compared "
                     "among themselves.")
    if left:
        why = ("until the baseline is retrained (they were trained after the dropout fix)" if reference else
               f"until retrained (trained before the dropout fix, {BEFORE_THE_FIX})")
        notes.append(f"Left out of the comparison {why}: " + "; ".join(corpus.rows[n].description for n in left) + ".")
    return kept, notes
