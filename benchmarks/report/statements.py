"""What the generated statements share: the relative change between two figures, the head that says
how many rows a statement stands on, a goal's verdict, the one wording of a declared comparison (two
rows' seed means, where the one stands against the other, credited to the declared difference only), the
note on a pointer whose sentinel gate sits at 1."""

import re
from dataclasses import dataclass

from benchmarks.comparisons import TOLERANCE, Comparison, declared


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


def standing(change, tolerance=TOLERANCE):
    """Where a figure ``change`` percent from another's stands (lower is better): ahead, behind or level."""
    return "level" if abs(change) <= tolerance else "ahead" if change < 0 else "behind"


SEED = re.compile(r"-seed\d+$")


def models(corpus):
    """``corpus``'s rows less their seeds (``<row>-seed<k>``): one name a model."""
    return [n for n in corpus.rows if not SEED.search(n)]


def seed_runs(corpus, results, name):
    """The JSON of ``name`` and of its seeds (``<name>-seed<k>``, ``rows.seeded``) that have run."""
    twins = [n for n in corpus.rows if re.fullmatch(rf"{re.escape(name)}-seed\d+", n)]
    return [results[n] for n in (name, *twins) if n in results]


def mean(runs, key):
    return sum(r[key] for r in runs) / len(runs)


def seed_range(runs, key):
    """How far apart the seeds' ``key`` lie, in percent of their mean (None for one seed)."""
    values = [r[key] for r in runs]
    return 100 * (max(values) - min(values)) / mean(runs, key) if len(values) > 1 else None


@dataclass(frozen=True)
class Weighed:
    """A declared comparison's two rows on the means of their seeds (``suffix``: with a test-time option)."""

    comparison: Comparison
    row: list  # the row's seeds' JSON
    base: list  # the baseline's
    suffix: str = ""

    def key(self, split):
        return f"{split}_ppl{self.suffix}"

    def change(self, split):
        """The row's mean against the baseline's, in percent."""
        return pct(mean(self.row, self.key(split)), mean(self.base, self.key(split)))

    def ranges(self, split):
        return [seed_range(runs, self.key(split)) for runs in (self.row, self.base)]

    def threshold(self, split):
        """What counts as level: the larger of ``TOLERANCE`` and the two rows' seed ranges."""
        return max([TOLERANCE, *(x for x in self.ranges(split) if x is not None)])

    def verdict(self, split):
        return standing(self.change(split), self.threshold(split))

    def seeds(self):
        """``"means of 2 and 2 seeds"``, ``"one seed for `single`"``: what the figures stand on."""
        if len(self.row) > 1 and len(self.base) > 1:
            return f"means of {len(self.row)} and {len(self.base)} seeds"
        return f"one seed for {' and '.join(self.single())}"

    def single(self):
        names = ((self.comparison.row, self.row), (self.comparison.baseline, self.base))
        return [f"`{name}`" for name, runs in names if len(runs) == 1]


def weigh(corpus, results, comparison, suffix=""):
    """``comparison`` weighed on ``results``; None until both rows have valid and test figures (with ``suffix``)."""
    keys = [f"{split}_ppl{suffix}" for split in ("valid", "test")]
    row, base = (
        [r for r in seed_runs(corpus, results, name) if all(k in r for k in keys)]
        for name in (comparison.row, comparison.baseline)
    )
    return Weighed(comparison, row, base, suffix) if row and base else None


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
        else f"{COUNTS[len(things)]} things at once, which no row separates ({'; '.join(things)})"
    )
    valid, test = (w.verdict(split) for split in ("valid", "test"))
    on = f"{valid} on valid and test" if valid == test else f"{valid} on valid, {test} on test"
    figures = [" / ".join(f"{mean(runs, w.key(split)):.1f}" for split in ("valid", "test")) for runs in (w.row, w.base)]
    text = (
        f"{what}, {corpus.label}: `{comparison.row}` against `{comparison.baseline}`"
        + (f" {OPTION_NAMES[suffix]}" if suffix else "")
        + f" (valid / test) {figures[0]} against {figures[1]} "
        f"({shown(w, 'valid')} / {shown(w, 'test')}): {on}"
        + ("" if len(things) == 1 else ", credited to no one of them alone")
        + f". {seed_note(w)}"
    )
    return text + (f" Why: {comparison.note}." if comparison.note else "")


def shown(w, split):
    """A change in percent to one decimal, or two where one would read as its threshold (-1.01% against 1.0%)."""
    change, threshold = w.change(split), w.threshold(split)
    return f"{change:+.2f}%" if round(abs(change), 1) == round(threshold, 1) else f"{change:+.1f}%"


COUNTS = {2: "Two", 3: "Three", 4: "Four"}
OPTION_NAMES = {
    "_cache": "with the cache",
    "_dynamic": "with dynamic evaluation",
    "_cache_dynamic": "with the cache and dynamic evaluation",
}


def seed_note(w):
    """How many seeds a comparison stands on and what counts as level."""
    level = f"level within {w.threshold('valid'):.1f}% / {w.threshold('test'):.1f}%"
    row_range, base_range = w.ranges("test")
    if not w.single():
        return (
            f"Means of {len(w.row)} and {len(w.base)} seeds (test ranges {row_range:.1f}% and {base_range:.1f}%): "
            f"{level}, the larger of {TOLERANCE:g}% and the seed ranges."
        )
    measured = [
        f"`{name}`'s {len(runs)} seeds span {spread:.1f}% on test"
        for name, runs, spread in ((w.comparison.row, w.row, row_range), (w.comparison.baseline, w.base, base_range))
        if len(runs) > 1
    ]
    return (
        f"One seed for {' and '.join(w.single())}, whose seed range is not measured"
        + (f" ({measured[0]})" if measured else "")
        + f": {level}, and a gap a little larger is no firm evidence either."
    )


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
