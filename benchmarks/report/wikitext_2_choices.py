"""The short runs that chose the WikiText-2 rows' settings, as notes below the ``wikitext-2`` block:
the adaptive softmax's cutoffs (a slice of the stream LSTM) and the Pointer Sentinel's extra loss
term and sentinel scale (the PTB stream row's first epochs)."""

from benchmarks.comparisons import declared
from benchmarks.rows import PTB, PTB_POINTER_LOSS, WIKITEXT2, WIKITEXT2_CUTOFFS

from .statements import pct, weigh
from .tables import BEFORE_THE_FIX, header, one_layout


def option(args, flag, default=None):
    """The value of ``flag`` in a row's arguments."""
    return args[args.index(flag) + 1] if flag in args else default


def cutoff_note():
    results = WIKITEXT2_CUTOFFS.load()
    if not results:
        return "The cutoffs' slice has not run yet (`python -m benchmarks.table --corpus wikitext-2-cutoffs`)."
    cutoffs = {n: WIKITEXT2_CUTOFFS.rows[n].description.rsplit(" ", 1)[1] for n in results}
    return (
        "The adaptive softmax's cutoffs, chosen on a slice (the stream LSTM's first "
        f"{WIKITEXT2_CUTOFFS.max_update} updates, a fifth of an epoch, valid ppl): "
        + "; ".join(
            f"{cutoffs[n]}: valid {r['valid_ppl']:.1f} at {r['train_tokens_per_s']:,} tokens/s"
            for n, r in results.items()
        )
        + f". Valid picks {cutoffs[min(results, key=lambda n: results[n]['valid_ppl'])]}; the rows use "
        f"`--adaptive-softmax-cutoff {option(WIKITEXT2.rows['lstm'].args, '--adaptive-softmax-cutoff')}`."
    )


def pointer_choice(args):
    """``(--pointer-loss, --sentinel-scale)`` of a row's arguments; absent: off and 1, what a row
    that states neither trained with."""
    return option(args, "--pointer-loss", "off"), option(args, "--sentinel-scale", "1")


def pointer_loss_note():
    """The pointer's gate: ``--pointer-loss`` off / found / all and ``--sentinel-scale`` 1 / 0.1 over
    the PTB stream row's first epochs, chosen by valid ppl after the last of them (within one dropout layout)."""
    epochs = PTB_POINTER_LOSS.epochs
    runs = {pointer_choice(r["args"]): r for r in PTB_POINTER_LOSS.load().values()}
    if len(runs) < 2:
        return (
            "The pointer's extra loss term has not been compared yet "
            "(`python -m benchmarks.table --corpus ptb-pointer-loss`)."
        )
    # compared within one dropout layout: each tensor once where two runs have it
    old = {choice: PTB.rows["ps-lstm-stream"].before_the_dropout_fix(r) for choice, r in runs.items()}
    layout = sum(not o for o in old.values()) < 2
    compared = {choice: r for choice, r in runs.items() if old[choice] == layout}

    def fmt(values, form):
        return ", ".join("–" if v is None else format(v, form) for v in values[:epochs])

    lines = [
        f"The Pointer Sentinel's gate on full PTB, the stream row's first {epochs} epochs (valid after each "
        "epoch). Where the gate g is 1 the extra term -log(g + sum a_i) is 0 and its gradient vanishes with the "
        "pointer's weights: it shapes where a used pointer points but cannot revive a saturated gate. "
        "`--sentinel-scale 0.1` moves the sentinel at 1/100 of SGD's rate (the model unchanged):",
        "",
        *header("`--pointer-loss`", "`--sentinel-scale`", "valid ppl by epoch", "sentinel gate by epoch"),
    ]
    order = ["off", "found", "all"]
    for (loss, scale), r in sorted(runs.items(), key=lambda item: (-float(item[0][1]), order.index(item[0][0]))):
        lines.append(
            f"| {loss}{' ' + BEFORE_THE_FIX if old[loss, scale] else ''} | {scale} | "
            f"{fmt(r['valid_ppl_per_epoch'], '.1f')} | "
            f"{fmt(r.get('pointer_gate_per_epoch', []), '.3g')} |"
        )
    if left := [f"`{loss}` at scale {scale}" for loss, scale in runs if (loss, scale) not in compared]:
        within = "the old one" if layout else "each tensor once"
        lines += [
            "",
            f"{BEFORE_THE_FIX} trained with the old dropout layout (`python -m benchmarks.table --corpus "
            f"ptb-pointer-loss` retrains them); compared within one layout ({within}), left out: "
            f"{', '.join(left)}.",
        ]
    valid = {choice: r["valid_ppl_per_epoch"][epochs - 1] for choice, r in compared.items()}

    def gate(choice):
        return (
            ((compared[choice].get("pointer_gate_per_epoch") or [])[epochs - 1 :] or [None])[0]
            if choice in compared
            else None
        )

    for loss in ("found", "all"):  # the term where the gate is free to move
        for scale in sorted({s for _, s in compared}, key=float):
            off, on = gate(("off", scale)), gate((loss, scale))
            if off not in (None, 1) and on is not None:
                lines += [
                    "",
                    f"With a working gate (scale {scale}) the term `{loss}` moved it from {off:.3g} to "
                    f"{on:.3g} after epoch {epochs} ({'towards' if on > off else 'away from'} the softmax) "
                    f"and valid by {pct(valid[(loss, scale)], valid[('off', scale)]):+.1f}%.",
                ]
    used = pointer_choice(WIKITEXT2.rows["ps-lstm-stream"].args)
    rows = f"the PTB and WikiText-2 rows train with `--pointer-loss {used[0]} --sentinel-scale {used[1]}`"
    if used not in valid:  # the rows' own choice is not among the runs weighed: no pick to set against it
        return "\n".join(
            [
                *lines,
                "",
                f"Not weighed within one layout yet (until the runs of the old dropout layout are retrained); {rows}.",
            ]
        )
    loss, scale = best = min(valid, key=valid.get)
    gap = f" ({pct(valid[best], valid[('off', '1')]):+.1f}% against off at scale 1)" if ("off", "1") in valid else ""
    if best != used:
        rows += f", not the pick ({pct(valid[best], valid[used]):+.1f}% against theirs after epoch {epochs})"
    lines += ["", f"Valid after epoch {epochs} picks `--pointer-loss {loss} --sentinel-scale {scale}`{gap}; {rows}."]
    full, _ = one_layout(PTB, PTB.load(), "lstm-stream")
    found = next(c for c in declared(PTB.name) if c.row == "ps-lstm-stream-found")
    if (w := weigh(PTB, full, found)) is not None:  # the term at full length, as the ptb-stream block weighs it
        off, on = full["ps-lstm-stream"], full["ps-lstm-stream-found"]
        lines += [
            "",
            f"At full length (the PTB stream rows, {off['epochs']} epochs) `found` against `off`, both at "
            f"0.1: test {on['test_ppl']:.1f} against {off['test_ppl']:.1f} ({w.change('test'):+.1f}%), valid "
            f"{w.change('valid'):+.1f}%, the gate {on['valid_pointer_gate']:.3f} against "
            f"{off['valid_pointer_gate']:.3f}: {w.verdict('valid')} on valid, {w.verdict('test')} on test "
            f"({w.seeds()}).",
        ]
    return "\n".join(lines)
