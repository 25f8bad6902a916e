"""What the generated statements share: the relative change between two figures, the head that says
how many rows a statement stands on, a goal's verdict, the one wording of a declared comparison (two
rows' seed means, where the one stands against the other, credited to the declared difference only), the
note on a pointer whose sentinel gate sits at 1."""

import functools
import re
import subprocess
from dataclasses import dataclass

from benchmarks.comparisons import FLOOR, Comparison, declared
from benchmarks.grid_edge import edge_sides
from benchmarks.rows import CORPORA, ROOT


def pct(value, base):
    """``value`` against ``base``, in percent (a lower perplexity: negative)."""
    return 100 * (value / base - 1)


def gain(r, suffix):
    """What a test-time option (``test_ppl<suffix>``) changes in a row's test ppl, in percent."""
    return pct(r[f"test_ppl{suffix}"], r["test_ppl"])


def head(claim, done, total, rows="rows"):
    """A statement's first line: what it shows and how many of the declared rows it stands on."""
    return f"**{claim} ({done} of {total} {rows}, generated from the JSON).**"


def met(reached):
    return "met" if reached else "not met"


def span(values):
    """The range of ``values`` in whole numbers, ``"87 to 133"``; one figure where they round alike."""
    low, high = f"{min(values):.0f}", f"{max(values):.0f}"
    return low if low == high else f"{low} to {high}"


def standing(change, threshold):
    """Where a figure ``change`` percent from another's stands (lower is better): ahead or behind only past
    ``threshold`` percent."""
    return "level" if abs(change) <= threshold else "ahead" if change < 0 else "behind"


SEED = re.compile(r"-seed\d+$")


def models(corpus):
    """``corpus``'s rows less their seeds (``<row>-seed<k>``): one name a model."""
    return [n for n in corpus.rows if not SEED.search(n)]


def seed_runs(corpus, results, name):
    """The JSON of ``name`` and of its seeds (``<name>-seed<k>``, ``rows.seeded``) that have run."""
    twins = [n for n in corpus.rows if re.fullmatch(rf"{re.escape(name)}-seed\d+", n)]
    return [results[n] for n in (name, *twins) if n in results]


def seed_count(runs):
    """``"2 seeds"``, ``"one seed"``: what a mean stands on."""
    return f"{len(runs)} seeds" if len(runs) > 1 else "one seed"


def mean(runs, key):
    return sum(r[key] for r in runs) / len(runs)


def seed_range(runs, key):
    """How far apart the seeds' ``key`` lie, in percent of their mean (None for one seed)."""
    values = [r[key] for r in runs]
    return 100 * (max(values) - min(values)) / mean(runs, key) if len(values) > 1 else None


@dataclass(frozen=True)
class Spread:
    """The widest seed range measured on one split: what a difference must pass to count as one."""

    value: float  # percent of the seeds' mean
    corpus: object  # rows.Corpus whose seeds span it
    row: str  # the model whose seeds span it
    seeds: int

    def whose(self):
        return f"`{self.row}`'s {self.seeds} seeds"


def widest(corpus, results, key):
    """The widest seed range of ``key`` among ``corpus``'s models in ``results`` (None: no model has two seeds)."""
    found = [
        Spread(seed_range(runs, key), corpus, name, len(runs))
        for name in models(corpus)
        if len(runs := [r for r in seed_runs(corpus, results, name) if key in r]) > 1
    ]
    return max(found, key=lambda s: s.value, default=None)


def level_within(widest_range):
    """What counts as level against ``widest_range`` (a ``Spread`` or None): that range, never under ``FLOOR``."""
    return max(FLOOR, widest_range.value if widest_range else 0)


def spread(corpus, results, split, suffix=""):
    """The widest seed range measured on ``split`` (with the test-time option ``suffix``) on ``corpus``, on that
    option's figures where seeds have them; where ``corpus`` has no seeds, the range of the corpus it borrows
    from (``Corpus.spread_from``). None where neither has two seeds of a model."""
    keys = dict.fromkeys([f"{split}_ppl{suffix}", f"{split}_ppl"])
    for source, found in ((corpus, results), (CORPORA.get(corpus.spread_from), None)):
        if source is None:
            continue
        if found is None:  # a borrowed corpus: its rows of today's dropout layout
            found = {n: r for n, r in source.load().items() if not source.rows[n].before_the_dropout_fix(r)}
        for key in keys:
            if (widest_range := widest(source, found, key)) is not None:
                return widest_range
    return None


NO_VERDICT = "still converging: no verdict"
READINGS = {"sentence": "sentences", "stream": "streams", "fairseq": "fairseq's blocks", "characters": "characters"}


@dataclass(frozen=True)
class Weighed:
    """A declared comparison's two rows on the means of their seeds (``suffix``: with a test-time option),
    against the widest seed range measured on their corpus (``spreads``: valid's and test's)."""

    comparison: Comparison
    corpus: object  # rows.Corpus
    row: list  # the row's seeds' JSON
    base: list  # the baseline's
    spreads: dict  # split -> Spread or None
    suffix: str = ""
    failed: list = ()  # the rows among the two that failed to train (``FAILED``): nothing is drawn from them
    best: float = None  # the lowest valid ppl among the corpus's rows, which ``failed`` is measured against

    def key(self, split):
        return f"{split}_ppl{self.suffix}"

    def change(self, split):
        """The row's mean against the baseline's, in percent."""
        return pct(mean(self.row, self.key(split)), mean(self.base, self.key(split)))

    def threshold(self, split):
        """What counts as level on ``split``."""
        return level_within(self.spreads[split])

    def converging(self):
        """Whether either row's valid ppl (its seeds' mean) still fell by more than the level band in its last
        epoch: the budget stopped a curve still moving, so the gap may yet close or open."""
        band = self.threshold("valid")
        return any((f := last_fall(curve(runs))) is not None and -f > band for runs in (self.row, self.base))

    def verdict(self, split):
        return NO_VERDICT if self.converging() else standing(self.change(split), self.threshold(split))

    def seeds(self):
        """``"means of 2 and 2 seeds"``, ``"one seed for `single`"``: what the figures stand on."""
        if not self.single():
            return f"means of {len(self.row)} and {len(self.base)} seeds"
        return f"one seed for {' and '.join(self.single())}"

    def single(self):
        names = ((self.comparison.row, self.row), (self.comparison.baseline, self.base))
        return [f"`{name}`" for name, runs in names if len(runs) == 1]

    def other_reading(self, spread):
        """Where the seeds behind ``spread`` read the text otherwise than a compared row (sentences for a stream
        row): ``", on the rows read as sentences: no row read as streams has seeds"``; "" where they read alike."""
        readings = {self.corpus.rows[name].reading for name in (self.comparison.row, self.comparison.baseline)}
        theirs = spread.corpus.rows[spread.row].reading
        others = sorted(readings - {theirs})
        if not others:
            return ""
        return f", on the rows read as {READINGS[theirs]}: no row read as {READINGS[others[0]]} has seeds"

    def within(self):
        """``"level within V.VV% / T.TT%"`` (valid / test), where the two figures come from and whose seeds
        span them."""
        level = f"level within {self.threshold('valid'):.2f}% / {self.threshold('test'):.2f}%"
        valid, test = self.spreads["valid"], self.spreads["test"]
        if valid is None or test is None:
            borrowed = f" or {CORPORA[self.corpus.spread_from].label}" if self.corpus.spread_from else ""
            return f"{level}, the floor of {FLOOR:g}%: no seed range is measured on {self.corpus.label}{borrowed}"
        whose = (
            f"{valid.whose()} on valid and test"
            if (valid.row, valid.seeds) == (test.row, test.seeds)
            else f"{valid.whose()} on valid, {test.whose()} on test"
        )
        where = (
            f"measured on {valid.corpus.label}"
            if valid.corpus is self.corpus
            else f"borrowed from {valid.corpus.label}, as none is measured on {self.corpus.label}"
        ) + self.other_reading(valid)
        if min(valid.value, test.value) >= FLOOR:
            return f"{level}, the widest seed range {where} ({whose})"
        return (
            f"{level}, the widest seed range {where} ({valid.value:.2f}% / {test.value:.2f}%: {whose}) "
            f"and never under {FLOOR:g}%"
        )


def weigh(corpus, results, comparison, suffix=""):
    """``comparison`` weighed on ``results``; None until both rows have valid and test figures (with ``suffix``)."""
    keys = [f"{split}_ppl{suffix}" for split in ("valid", "test")]
    row, base = (
        [r for r in seed_runs(corpus, results, name) if all(k in r for k in keys)]
        for name in (comparison.row, comparison.baseline)
    )
    if not (row and base):
        return None
    spreads = {split: spread(corpus, results, split, suffix) for split in ("valid", "test")}
    best = min(r["valid_ppl"] for r in results.values() if "valid_ppl" in r)
    failed = [
        name
        for name, runs in ((comparison.row, row), (comparison.baseline, base))
        if mean(runs, "valid_ppl") > FAILED * best
    ]
    return Weighed(comparison, corpus, row, base, spreads, suffix, failed, best)


def versus(corpus, results, comparison, suffix=""):
    """``comparison``'s row against its baseline on the means of their seeds, valid and test (``suffix``: with a
    test-time option), in one sentence that credits the change to the declared difference only; None until both
    rows have those figures."""
    if (w := weigh(corpus, results, comparison, suffix)) is None:
        return None
    things = comparison.things
    what = (
        things[0][0].upper() + things[0][1:]
        if len(things) == 1
        else f"{COUNTS.get(len(things), len(things))} things at once, which no row separates ({'; '.join(things)})"
    )
    if w.failed:
        return f"{what}, {corpus.label}: `{comparison.row}` against `{comparison.baseline}` not compared, as {dead(w)}."
    valid, test = (w.verdict(split) for split in ("valid", "test"))
    on = (
        NO_VERDICT
        if w.converging()
        else f"{valid} on valid and test"
        if valid == test
        else f"{valid} on valid, {test} on test"
    )
    figures = [" / ".join(f"{mean(runs, w.key(split)):.1f}" for split in ("valid", "test")) for runs in (w.row, w.base)]
    text = (
        f"{what}, {corpus.label}: `{comparison.row}` against `{comparison.baseline}`"
        + (f" {OPTION_NAMES[suffix]}" if suffix else "")
        + f" (valid / test) {figures[0]} against {figures[1]} "
        f"({shown(w, 'valid')} / {shown(w, 'test')}): {on}"
        + ("" if len(things) == 1 or "ahead" not in on and "behind" not in on else ", credited to no one of them alone")
        + f". {seed_note(w)}"
        + interval_note(w)
        + (commit_note(w) if corpus.names_commits else "")
        + budget_note(w)
        + (parameter_note(w) if comparison.parameters else "")
    )
    return text + (f" Why: {comparison.note}." if comparison.note else "")


def shown(w, split):
    """A change in percent to one decimal, or two where one would read as its threshold (a change of -1.01
    against a threshold of 1.00 shows both decimals)."""
    change, threshold = w.change(split), w.threshold(split)
    return f"{change:+.2f}%" if round(abs(change), 1) == round(threshold, 1) else f"{change:+.1f}%"


def dead(w):
    """``"`single` (valid 634.9) failed to train, ending over 2 times the best row's valid ppl (286.5)"``."""
    names = " and ".join(
        f"`{name}` (valid {mean(runs, 'valid_ppl'):.1f})"
        for name, runs in ((w.comparison.row, w.row), (w.comparison.baseline, w.base))
        if name in w.failed
    )
    return f"{names} failed to train, ending over {FAILED:g} times the best row's valid ppl ({w.best:.1f})"


COUNTS = {2: "Two", 3: "Three", 4: "Four", 5: "Five"}
OPTION_NAMES = {
    "_cache": "with the cache",
    "_dynamic": "with dynamic evaluation",
    "_cache_dynamic": "with the cache and dynamic evaluation",
}


def parameter_counts(w):
    """The row's parameters against the baseline's, held and trained, in percent (None until both are probed)."""
    row, base = w.row[0], w.base[0]
    if not all("trainable_params" in r for r in (row, base)):
        return None
    return pct(row["params"], base["params"]), pct(row["trainable_params"], base["trainable_params"])


def more_or_fewer(change):
    return f"{abs(change):.1f}% {'more' if change > 0 else 'fewer'}" if round(change, 1) else "as many"


def parameter_clause(w):
    """``"`single-zero-context` holds as many and trains N.N% fewer parameters than `lstm-matched`"``; "" until
    both rows are probed."""
    if (counts := parameter_counts(w)) is None:
        return ""
    return (
        f"`{w.comparison.row}` holds {more_or_fewer(counts[0])} and trains {more_or_fewer(counts[1])} parameters "
        f"than `{w.comparison.baseline}`"
    )


def parameter_note(w):
    """Both rows' parameters, held and trained (``benchmarks.trainable``), and how far apart each count lies."""
    if not (clause := parameter_clause(w)):
        return " Parameters that train: not probed yet (`python -m benchmarks.trainable`)."
    rows = ((w.comparison.row, w.row[0]), (w.comparison.baseline, w.base[0]))
    held = "; ".join(f"`{n}` {r['params']:,} held, {r['trainable_params']:,} trained" for n, r in rows)
    return f" Parameters: {held}: {clause}."


# the files that define what a row trains (its arguments are in its JSON)
TRAINING_CODE = (
    "alm_plugin/models",
    "alm_plugin/modules",
    "alm_plugin/tasks",
    "alm_plugin/criterions",
    "alm_plugin/data",
    "alm_plugin/options",
    "alm_plugin/mends/device.py",
)


@functools.lru_cache(maxsize=None)
def code_change(a, b):
    """``git diff --shortstat a b`` of ``TRAINING_CODE`` ("" where those files are the same at both commits), or
    None where either commit is not in this checkout's history."""
    proc = subprocess.run(
        ["git", "diff", "--shortstat", f"{a}^{{commit}}", f"{b}^{{commit}}", "--", *TRAINING_CODE],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    return proc.stdout.strip() if proc.returncode == 0 else None


def commit_note(w):
    """The commits the two rows (their seeds) trained at, and whether the code that defines what they train
    differs between them: a difference credited to the declared change assumes it does not, or says so."""
    trained = {}
    for runs in (w.row, w.base):
        for r in runs:
            trained.setdefault(r.get("commit", "?"), []).append(f"`{r.get('row', '?')}`")
    text = "Trained at " + "; ".join(f"{c} ({', '.join(names)})" for c, names in trained.items())
    first, *others = trained
    if not others:
        return f" {text}."
    changes = []
    for other in others:
        change = code_change(first, other)
        changes.append(
            f"not known at {other} (not in this checkout's history)"
            if change is None
            else f"the same at {other}"
            if not change
            else f"changed at {other} ({change})"
        )
    code = ", ".join(TRAINING_CODE)
    return f" {text}: the code that defines what they train ({code}), against {first}, is {'; '.join(changes)}."


BOOTSTRAP = 1000  # resamples of the split's sentences


def sentence_scores(runs, split):
    """``(NLL, tokens)`` a sentence of ``split`` (its seeds' mean NLL where seeds record them), or None where no
    seed records them."""
    import numpy

    found = [r for r in runs if f"{split}_sentence_nll" in r]
    if not found:
        return None
    nll = numpy.mean([numpy.asarray(r[f"{split}_sentence_nll"], dtype=float) for r in found], axis=0)
    return nll, numpy.asarray(found[0][f"{split}_sentence_tokens"], dtype=float)


def paired_interval(w, split="test"):
    """The paired bootstrap interval (the middle 95 of every 100 draws) of the row's perplexity against the
    baseline's on ``split``, in percent:
    the same sentences drawn for both rows, ``BOOTSTRAP`` times (seeded). None until both rows record each
    sentence's NLL on the same sentences. It says how large an effect the split's sentences leave room for;
    the seed band says how far training alone moves a row."""
    import numpy

    row, base = sentence_scores(w.row, split), sentence_scores(w.base, split)
    if row is None or base is None or len(row[0]) != len(base[0]) or (row[1] != base[1]).any():
        return None
    (nll, tokens), base_nll = row, base[0]
    draws = numpy.random.default_rng(0).integers(0, len(nll), size=(BOOTSTRAP, len(nll)))
    changes = 100 * numpy.expm1((nll - base_nll)[draws].sum(axis=1) / tokens[draws].sum(axis=1))
    low, high = numpy.percentile(changes, [2.5, 97.5])
    return float(low), float(high), len(nll)


def interval_note(w):
    """The paired bootstrap interval on test, where both rows record their sentences' NLL."""
    if (found := paired_interval(w)) is None:
        return ""
    low, high, count = found
    return (
        f" A paired bootstrap over the {count:,} test sentences ({BOOTSTRAP:,} resamples) puts the test difference "
        f"between {low:+.1f}% and {high:+.1f}% (95%): the sentences' share of the uncertainty, beside the seeds'."
    )


def seed_note(w):
    """How many seeds a comparison stands on and what counts as level."""
    return sentence(f"{w.seeds()}; {w.within()}")


def picks(corpus, results, tuned):
    """``{model: value}``: the setting of ``tuned`` whose row has the lowest valid ppl for each model (the rows of
    one seed, the setting alone differing), and the rows still missing; no picks until every row has run."""
    missing = [row for rows in tuned.choices.values() for row in rows.values() if row not in results]
    if missing:
        return {}, missing
    return {
        model: min(rows, key=lambda value: results[rows[value]]["valid_ppl"]) for model, rows in tuned.choices.items()
    }, []


def tuned_comparisons(tuned, chosen):
    """``tuned``'s steps as comparisons of each model's picked row (``chosen``: ``picks``)."""
    return [
        Comparison(
            tuned.corpus,
            tuned.choices[base][chosen[base]],
            tuned.choices[model][chosen[model]],
            (f"{thing}, each model at its own best valid {tuned.setting}",),
        )
        for base, model, thing in tuned.steps
    ]


def at_best_setting(corpus, results, tuned):
    """Each model at its own best valid setting: the picks, each step between the picks, and whether each
    step's verdict at the shared setting survives them."""
    chosen, missing = picks(corpus, results, tuned)
    values = sorted({v for rows in tuned.choices.values() for v in rows})
    if missing:
        return [
            f"Each model at its own best valid {tuned.setting} ({', '.join(values)}): waits for "
            f"{len(missing)} of {sum(map(len, tuned.choices.values()))} rows ({', '.join(f'`{r}`' for r in missing)}; "
            "`python -m benchmarks.table --corpus ptb --threads 1`)."
        ]
    tried = "; ".join(
        f"`{model}` {chosen[model]} ("
        + ", ".join(f"{v}: {results[row]['valid_ppl']:.1f}" for v, row in rows.items())
        + ")"
        for model, rows in tuned.choices.items()
    )
    lines = [
        f"Each model at its own best valid {tuned.setting} (valid ppl of one seed at each of {', '.join(values)}, "
        f"the {tuned.setting} alone differing): {tried}."
    ]
    shared = {}
    for (base, model, thing), comparison in zip(tuned.steps, tuned_comparisons(tuned, chosen)):
        lines.append(versus(corpus, results, comparison))
        at_shared = weigh(corpus, results, Comparison(tuned.corpus, base, model, (thing,)))
        at_best = weigh(corpus, results, comparison)
        shared[thing] = (at_shared.verdict("test"), at_best.verdict("test"))
    lines.append(
        "Against the shared recipe, on test: "
        + "; ".join(
            f"{thing[0].lower()}{thing[1:]}: {before} at the shared {tuned.setting}, {after} at each model's best"
            + (" (the answer holds)" if before == after else " (the answer changes)")
            for thing, (before, after) in shared.items()
        )
        + "."
    )
    return lines


def compared(corpus, results, suffix="", rows=None):
    """One sentence per declared comparison of ``corpus`` (``rows``: those whose row is among them) that has run."""
    found = (versus(corpus, results, c, suffix) for c in declared(corpus.name, rows))
    return [line for line in found if line]


def gate_note(r, description):
    """A pointer whose sentinel gate sits at 1 is unused (its gradient is scaled by 1 - g): say for
    which epochs, from the gate logged on valid after each epoch (docs/models.md)."""
    gates = r.get("pointer_gate_per_epoch") or []
    stuck = [e for e, g in enumerate(gates, 1) if g is not None and g > 0.99]
    if r.get("valid_pointer_gate", 0) > 0.99:
        return [
            f"{description}: the sentinel gate is {r['valid_pointer_gate']:.3f} on valid, so the pointer "
            "carries almost no mass and the model is the LSTM under another name (docs/models.md)."
        ]
    if not stuck:
        return []
    # the recipe halves SGD's step after epoch ``anneal_after``
    annealed = r.get("recipe", {}).get("anneal_after") == stuck[-1]
    return [
        f"{description}: the sentinel gate sat at 1 (pointer unused) after epoch"
        f"{'s' if len(stuck) > 1 else ''} {stuck[0]}"
        + (f"-{stuck[-1]}" if len(stuck) > 1 else "")
        + f", left it in epoch {stuck[-1] + 1}"
        + (" when SGD's step halved (lr 1 -> 0.5)" if annealed else "")
        + f" and ends at {r['valid_pointer_gate']:.3f} on valid: the pointer trained for "
        f"{len(gates) - len(stuck)} of {len(gates)} epochs (docs/models.md)."
    ]


FAILED = 2  # a row whose valid ppl ends over this many times its corpus's best row's failed to train
STILL_FALLING = 1.0  # % its last epoch still took off a row's valid ppl: the budget ended the curve, not the model


def curve(runs):
    """The seeds' mean valid ppl by epoch (1-based), over the epochs every seed logged."""
    curves = [r.get("valid_ppl_per_epoch") or [] for r in runs]
    return {
        e + 1: sum(c[e] for c in curves) / len(curves)
        for e in range(min(map(len, curves)))
        if all(c[e] is not None for c in curves)
    }


@dataclass(frozen=True)
class Unsettled:
    """Two rows whose valid ppl still fell when the budget stopped them."""

    falls: tuple  # each row's valid ppl change in its last logged epoch, in percent (the row's, the baseline's)
    gaps: list  # the row against the baseline on each epoch both logged, in percent

    @property
    def narrowing(self):
        return all(abs(b) < abs(a) for a, b in zip(self.gaps, self.gaps[1:]))

    def gap_text(self):
        return ", ".join(f"{g:+.1f}%" for g in self.gaps) + (", narrowing every epoch" if self.narrowing else "")


def last_fall(curve):
    """The valid ppl change of a curve's last logged epoch against the one before, in percent (None: too short)."""
    epochs = sorted(curve)
    return pct(curve[epochs[-1]], curve[epochs[-2]]) if len(epochs) > 1 else None


def unsettled(w):
    """Where either row of ``w`` still lost more than ``STILL_FALLING`` of its valid ppl in its last epoch: by how
    much, and the gap between the two on each epoch both logged (None where both curves had flattened)."""
    row, base = curve(w.row), curve(w.base)
    falls = (last_fall(row), last_fall(base))
    if None in falls or max(-f for f in falls) <= STILL_FALLING:
        return None
    return Unsettled(falls, [pct(row[e], base[e]) for e in sorted(row.keys() & base.keys())])


def budget_clause(w):
    """The budget's part in a verdict on rows still improving (``unsettled``), as a clause; "" where both had
    flattened."""
    if (u := unsettled(w)) is None:
        return ""
    return (
        f"still improving when the budget stopped them, valid {u.falls[0]:+.1f}% (`{w.comparison.row}`) / "
        f"{u.falls[1]:+.1f}% (`{w.comparison.baseline}`) in their last epoch, the gap by epoch {u.gap_text()}"
    )


def budget_note(w):
    return f" {sentence(clause)}" if (clause := budget_clause(w)) else ""


def sentence(clause):
    return f"{clause[0].upper()}{clause[1:]}."


def grid_text(grid):
    lrs, decays = grid
    return f"SGD lr {', '.join(f'{v:g}' for v in lrs)} x decay {', '.join(f'{v:g}' for v in decays)}"


def grid_note(corpus, results):
    """Which grid each row's dynamic evaluation chose from on valid (as its JSON records; a row that records
    none, ``corpus.unrecorded_grid``), the grid the rows still to score choose from, and the picks at an end
    of their own grid: the best setting may lie beyond, so such a figure is a floor of what it gives."""
    if not corpus.test_time:
        return []
    declared = corpus.declared_grid
    grids, at_edge = {}, {}
    names = {
        "lr": "its largest lr",
        "decay": "its smallest decay",
        "lr-low": "its smallest lr",
        "decay-high": "its largest decay",
    }
    model_grids = {}  # a model (its seeds) -> the grids its seeds chose from
    for name, r in results.items():
        if "dynamic" not in r:
            continue
        grid = corpus.dynamic_grid(r)
        grids.setdefault(grid, []).append(f"`{name}`")
        model_grids.setdefault(SEED.sub("", name), set()).add(grid)
        for kind in ("dynamic", "both"):
            sides = edge_sides(grid, r[kind], both_ends=True) if kind in r else []
            for axis, values in (("lr", grid[0]), ("decay", grid[1])):
                if len(values) == 1:  # a value tried alone is both ends of its axis: no side of the grid to name
                    sides = [side for side in sides if side != axis]
            for side in sides:
                at_edge.setdefault(side, []).append(f"`{name}`" + (" with the cache" if kind == "both" else ""))
    grids.setdefault(declared, [])

    def users(grid, rows):
        later = "every row scored from here on (`dynamic_lrs` x `dynamic_decays` in rows.py)"
        if grid != declared:
            return ", ".join(rows)
        return f"{', '.join(rows)} and {later}" if rows else later

    text = (
        "Dynamic evaluation's grid on valid: "
        + "; ".join(f"{grid_text(grid)} for {users(grid, rows)}" for grid, rows in grids.items())
        + "."
    )
    if len(grids) > 1:
        points = [{(lr, decay) for lr in g[0] for decay in g[1]} for g in grids]
        nested = all(a <= b or b <= a for a in points for b in points)
        text += " A row's figures with dynamic evaluation come from its own grid" + (
            ": the wider holds every point of the narrower, so its pick on valid is at least as good; "
            if nested
            else "; "
        )
        text += "a comparison of rows scored on different grids differs in that too"
        mixed = [f"`{model}`" for model, used in model_grids.items() if len(used) > 1]
        text += f", and so does the seeds' mean of {', '.join(mixed)}." if mixed else "."
    if any(len(g[1]) == 1 for g in grids):
        text += " Where a grid has one decay, that decay is tried alone, not chosen."
    lines = [text]
    if at_edge:
        lines.append(
            "Picks at an end of their row's grid: "
            + "; ".join(f"at {names[side]}: {', '.join(rows)}" for side, rows in at_edge.items())
            + ". A setting beyond it may do better, so these figures are a floor of what dynamic evaluation "
            "gives at this size."
        )
    return lines
