"""The ``ptb-slice`` block: the AMSRN paper's rows (a)-(d) and the Attentive LM's score functions and
concat activations on a PTB slice with Adam (``--corpus ptb-slice``), each declared comparison stated
from the rows' JSON; a row not run yet is named with the command that runs it."""

from benchmarks.rows import PTB_SLICE

from .statements import compared, head
from .tables import PARAMS, before_the_fix_note, cost, header, label, one_layout, table_command


def table(results):
    lines = header("row", "valid ppl", "test ppl", "attention entropy (valid, nats)", PARAMS, "train min")
    for name in (n for n in PTB_SLICE.rows if n in results):
        r = results[name]
        entropy = f"{r['valid_attn_entropy']:.2f}" if "valid_attn_entropy" in r else "–"
        lines.append(
            f"| {label(PTB_SLICE, name, r)} | {r['valid_ppl']:.1f} | {r['test_ppl']:.1f} | {entropy} | {cost(r)} |"
        )
    return "\n".join(lines)


def block():
    results = PTB_SLICE.load()
    queued = [n for n in PTB_SLICE.rows if n not in results]
    parts = [table(results)] if results else []
    if queued:
        parts.append(
            f"Not run yet with today's code, so no figures: {'; '.join(PTB_SLICE.rows[n].description for n in queued)} "
            f"({table_command(PTB_SLICE.name, queued)})."
        )
    kept, notes = one_layout(PTB_SLICE, results, "fairseq-lstm_lm")
    steps = compared(PTB_SLICE, kept) or ["No declared comparison has both its rows yet."]
    lines = [head("What it shows", len(results), len(PTB_SLICE.rows)), *steps, *notes]
    return "\n\n".join([*parts, *before_the_fix_note(PTB_SLICE, results), "\n".join(lines)])
