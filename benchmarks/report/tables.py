"""What the generated tables share: the JSON that the benchmark scripts wrote under
``benchmarks/results/`` (the rows' own JSON is read by their corpus, ``rows.Corpus.load``) and the
cells every table writes the same way: a figure or a dash, a row's best epoch, the paper's figures."""
import json
import os

from rows import ROOT

RESULTS = os.path.join(ROOT, "benchmarks", "results")


def result_json(*parts):
    """``benchmarks/results/<parts>`` (``"cpu", "stream_speed.json"``), or None before its script ran."""
    path = os.path.join(RESULTS, *parts)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


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
