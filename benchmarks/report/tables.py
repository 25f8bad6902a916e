"""What the generated tables share: the scripts' JSON under ``benchmarks/results/`` (the rows' own is
read by their corpus, ``rows.Corpus.load``), the cells every table writes the same way, the mark of a
row trained with the old dropout layout, and the pictures' canvas."""

import os
import re
import shlex

from benchmarks.result_files import ADVICE, ResultError, read_result
from benchmarks.rows import ROOT, WIDTH_OPTIONS

from .statements import mean, models, seed_range, seed_runs

RESULTS = os.path.join(ROOT, "benchmarks", "results")
# the test-time options, as a row's JSON names their figures: valid_ppl<suffix>, test_ppl<suffix>
OPTIONS = (("the cache", "_cache"), ("dynamic evaluation", "_dynamic"), ("both", "_cache_dynamic"))


def result_json(*parts):
    """``benchmarks/results/<parts>`` (``"cpu", "stream_speed.json"``), or None before its script ran."""
    path = os.path.join(RESULTS, *parts)
    return read_result(path) if os.path.exists(path) else None  # checked: a broken file refused by name and key


def machine(text):
    """A speed script's ``device`` or title, ``"CPU, 1 thread"`` where an older script wrote ``"1 threads"``."""
    return re.sub(r"\b1 threads\b", "1 thread", text)


def command(module, argv):
    """The command that writes a speed script's JSON, its ``--json`` named from the repository root:
    ``command("benchmarks.eval_speed", result["argv"])``."""
    shown = [
        arg[arg.index("benchmarks/results/") :] if arg.startswith("/") and "benchmarks/results/" in arg else arg
        for arg in argv
    ]
    return f"`{shlex.join(['python', '-m', module, *shown])}`"


def header(*columns):
    """A table's first two lines, one column per ``columns`` (one holding `` | ``: as many as it names)."""
    text = " | ".join(columns)
    return [f"| {text} |", "|---" * (text.count(" | ") + 1) + "|"]


def threads(count):
    """``"1"`` -> ``"1 thread"``, ``"2"`` -> ``"2 threads"``."""
    return f"{count} thread{'s' if count != '1' else ''}"


def speed_table(first_column, columns):
    """Tokens/s and the ratio to the baseline of each measured run, a pair of columns per
    ``(heading, figures)`` of ``columns`` (``figures``: a speed script's ``tokens_per_s`` and ``ratio``)."""
    return "\n".join(
        header(first_column, *(f"tokens/s, {heading}" for heading, _ in columns))
        + [
            f"| {name} | "
            + " | ".join(f"{f['tokens_per_s'][name]:,} | {f['ratio'][name]:.2f}" for _, f in columns)
            + " |"
            for name in columns[0][1]["tokens_per_s"]
        ]
    )


def cell(r, key):
    """A perplexity to one decimal, or a dash where the row has none."""
    return f"{r[key]:.1f}" if key in r else "–"


PARAMS = "params (those that train, where fewer)"  # the header of a column of ``params`` cells


def params(r):
    """The row's parameters, and those that receive a gradient where fewer (``benchmarks.trainable``):
    ``"2.73M (2.69M train)"``, ``"8.39M (200 never train)"`` where the two round alike; ``"(not probed)"``
    where its JSON has no such count."""
    nominal = f"{r['params'] / 1e6:.2f}M"
    if "trainable_params" not in r:
        return f"{nominal} (not probed)"
    trained = f"{r['trainable_params'] / 1e6:.2f}M"
    if r["trainable_params"] == r["params"]:
        return nominal
    if trained == nominal:
        return f"{nominal} ({r['params'] - r['trainable_params']:,} never train)"
    return f"{nominal} ({trained} train)"


def cost(r):
    return f"{params(r)} | {r['train_minutes']:.0f}"


def tokens(r):
    """Training tokens/s, a dash where the log holds no epoch (0: unknown)."""
    return f"{r['train_tokens_per_s']:,}" if r["train_tokens_per_s"] else "–"


def best_epoch(result):
    """The epoch checkpoint_best.pt closed (older JSON: the epoch of the lowest valid ppl)."""
    if "best_epoch" in result:
        return result["best_epoch"]
    logged = [(p, e) for e, p in enumerate(result["valid_ppl_per_epoch"], 1) if p is not None]
    return min(logged)[1] if logged else "?"


def unlogged(result):
    """A note for a row resumed after a kill that lost its first epochs' records (``[1, 2, 3, 6]``: 1-3, 6)."""
    missing, spans = result.get("epochs_without_records"), []
    for e in missing or []:
        if spans and e == spans[-1][1] + 1:
            spans[-1][1] = e
        else:
            spans.append([e, e])
    epochs = ", ".join(f"{a}-{b}" if a != b else f"{a}" for a, b in spans)
    return f" (valid of epoch{'s' if len(missing) > 1 else ''} {epochs} not logged)" if missing else ""


def paper_figures(text):
    """A paper's figures as ``rows.py`` writes them, ``"71.7 / 70.1 (2 x 650)"`` -> ``(71.7, 70.1)``."""
    valid, test = text.split(" (")[0].split(" / ")
    return float(valid), float(test)


def seed_table(corpus, results):
    """Each model with more than one seed run: how many, and its valid / test ppl's mean and range."""
    seeded = {n: runs for n in models(corpus) if len(runs := seed_runs(corpus, results, n)) > 1}
    if not seeded:
        return []

    def spread(runs, key):
        values = [r[key] for r in runs]
        return f"{mean(runs, key):.2f} ({min(values):.2f} to {max(values):.2f}, {seed_range(runs, key):.1f}%)"

    return [
        "\n".join(
            header("row", "seeds run", "valid ppl: mean (range, % of the mean)", "test ppl: mean (range)")
            + [
                f"| `{n}` | {len(runs)} | {spread(runs, 'valid_ppl')} | {spread(runs, 'test_ppl')} |"
                for n, runs in seeded.items()
            ]
        )
    ]


def trained_size(r, size):
    """The size a row trained at, as ``size`` writes it (``"2 x 650"``): the width its own arguments give (a
    folder of 2 x 200 rows read in the paper's place keeps theirs), else the declared one; a recorded
    ``recipe.size`` that is neither is refused, not published."""
    if r is None or " x " not in size:
        return size
    layers, declared = size.split(" x ", 1)
    args = [str(a) for a in r.get("args", [])]
    given = [(flag, args[args.index(flag) + 1]) for flag in WIDTH_OPTIONS if flag in args[:-1]]  # as table.py reads it
    width = given[0][1] if given else declared
    recorded = str(r.get("recipe", {}).get("size", width))
    if recorded != width:
        where = "its args give {} {}".format(*given[0]) if given else f"its args give none, and the row is {size}"
        raise ResultError(f"{getattr(r, 'path', 'a row')}: 'recipe.size' is {recorded}, but {where}: {ADVICE}")
    return f"{layers} x {width}"


def cut(r, planned_epochs):
    """``(epoch, planned)`` for a row the clock stopped after ``epoch`` of its recipe's epochs, else None."""
    return (r["cut_at_epoch"], r.get("recipe", {}).get("epochs", planned_epochs)) if "cut_at_epoch" in r else None


def cut_note(corpus, results):
    """The rows of ``results`` scored short of their recipe's epochs, named in one sentence (none: no sentence)."""
    stopped = [n for n in corpus.rows if n in results and cut(results[n], corpus.epochs)]
    if not stopped:
        return []
    return [
        "Cut by the clock, so scored short of the recipe's budget: "
        + "; ".join(
            "{} after epoch {} of {}".format(corpus.rows[n].description, *cut(results[n], corpus.epochs))
            for n in stopped
        )
        + "."
    ]


def provenance(results):
    """Which commit and device trained which rows: ``"`lstm`, `single` at 5939087 on NVIDIA H200; ..."``."""
    trained = {}
    for name, r in results.items():
        trained.setdefault((r.get("commit", "?"), r.get("device", "CPU")), []).append(f"`{name}`")
    return "; ".join(f"{', '.join(names)} at {commit} on {device}" for (commit, device), names in trained.items())


def table_command(corpus_name, names):
    return f"`python -m benchmarks.table --corpus {corpus_name} --rows {','.join(names)} --threads 1`"


# The old dropout layout of our word decoders drops h_t twice (alm_lstm, the pointer) and feeds the
# attention dropped states: a row trained with it is marked, and a statement compares rows of one layout only.
BEFORE_THE_FIX = "‡"


def stale(corpus, name, r):
    return r is not None and corpus.rows[name].before_the_dropout_fix(r)


def label(corpus, name, r):
    """A row's description, marked where its JSON comes from the old dropout layout."""
    return corpus.rows[name].description + (f" {BEFORE_THE_FIX}" if stale(corpus, name, r) else "")


def before_the_fix_note(corpus, results):
    """The footnote of a table holding a marked row (none otherwise)."""
    if not any(stale(corpus, n, r) for n, r in results.items() if n in corpus.rows):
        return []
    return [
        f"{BEFORE_THE_FIX} trained with the old dropout layout (the LSTM and the pointer drop h_t twice, the "
        'attention reads dropped states: docs/models.md, "Dropout"); `python -m benchmarks.table` '
        "retrains such a row and replaces its JSON."
    ]


def one_layout(corpus, results, base):
    """``(kept, notes)``: the rows of ``base``'s dropout layout (each tensor once where it has not run) and
    fairseq's own, which any may be compared with; ``notes`` name the rows left out and the layout."""
    reference = base in results and stale(corpus, base, results[base])
    kept = {n: r for n, r in results.items() if not corpus.rows[n].has_our_decoder or stale(corpus, n, r) == reference}
    left = [corpus.rows[n].description for n in results if n not in kept]
    notes = (
        [
            f"These figures stand on rows trained with the old dropout layout ({BEFORE_THE_FIX}), compared among "
            "themselves."
        ]
        if reference
        else []
    )
    if left:
        why = (
            "until the baseline is retrained (they are trained with each tensor dropped once)"
            if reference
            else f"until retrained (trained with the old dropout layout, {BEFORE_THE_FIX})"
        )
        notes.append(f"Left out of the comparison {why}: " + "; ".join(left) + ".")
    return kept, notes


def figure(size):
    """A picture's ``(figure, axes)``, drawn without a display; its ``savefig(path)`` writes through
    ``alm_plugin.cli.output_files.save_figure`` (a temporary file renamed onto the picture)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    from alm_plugin.cli.output_files import save_figure

    class SavedWhole(Figure):
        def savefig(self, fname, **options):
            if isinstance(fname, (str, os.PathLike)):
                return save_figure(self, fname, **options)
            return super().savefig(fname, **options)  # the open file save_figure gives

    return plt.subplots(figsize=size, FigureClass=SavedWhole)
