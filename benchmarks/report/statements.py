"""What the generated statements share: the relative change between two figures, the head that says
how many rows a statement stands on, a goal's verdict, the one wording of where a row stands against
another (ahead / behind / level), the note on a pointer whose sentinel gate sits at 1."""

TOLERANCE = 1.0  # % either way that counts as level: one seed per row
LEVEL = f"Level: within {TOLERANCE:g}% either way, which one seed per row cannot tell apart."


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
    return "level" if abs(change) < tolerance else "ahead" if change < 0 else "behind"


def changes(r, base, suffix="", tolerance=TOLERANCE):
    """``r`` against ``base`` on valid and test (``suffix``: with a test-time option), in one phrase:
    ``"(-5.0% / +0.5%): ahead on valid, level on test"``."""
    valid, test = (pct(r[f"{split}_ppl{suffix}"], base[f"{split}_ppl{suffix}"]) for split in ("valid", "test"))
    on_valid, on_test = standing(valid, tolerance), standing(test, tolerance)
    return f"({valid:+.1f}% / {test:+.1f}%): " + (
        f"{on_valid} on valid and test" if on_valid == on_test else f"{on_valid} on valid, {on_test} on test"
    )


def figures(r, suffix=""):
    """``r``'s valid / test perplexity, ``"95.0 / 90.2"``."""
    return f"{r[f'valid_ppl{suffix}']:.1f} / {r[f'test_ppl{suffix}']:.1f}"


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


LAYER_ROW = "single-zero-context"  # the concat layer fed c_t = 0: no attention


def layer_and_attention(corpus, results, tolerance=TOLERANCE):
    """What the concat layer does (the context-zeroed row against the LSTM) and what the attention adds on
    top of it (single against the context-zeroed row); nothing until the LSTM and the layer's row have run."""
    lstm, layer, single = (results.get(n) for n in ("lstm", LAYER_ROW, "single"))
    if lstm is None or layer is None:
        return []
    parts = [
        f"{corpus.rows[LAYER_ROW].description} against the LSTM (valid / test): {figures(layer)} against "
        f"{figures(lstm)} {changes(layer, lstm, tolerance=tolerance)}"
    ]
    if single is not None:
        parts.append(
            "the attention on top of the layer (single against the context-zeroed row): "
            f"{figures(single)} {changes(single, layer, tolerance=tolerance)}"
        )
    return ["The layer and the attention apart: " + "; ".join(parts) + "."]
