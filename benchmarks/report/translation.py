"""The ``translation`` block: Multi30k German -> English, the translation model's BLEU, n-best rescoring
with a target-side language model and shallow fusion, from one run of the example
(``python -m benchmarks.translation``, ``benchmarks/results/multi30k/<arch>.json``)."""

import os

from .tables import RESULTS, command, result_json

COMMAND = "python -m benchmarks.translation"


def signed(change):
    return f"{change:+.2f}"


def record(result):
    rescoring, fusion = result["rescoring"], result["fusion"]
    weights = ", ".join(f"{name}={value:g}" for name, value in rescoring["weights"].items())
    grid = " / ".join(f"{bleu:.2f}" for bleu in fusion["valid_bleu_by_weight"].values())
    points = " / ".join(fusion["valid_bleu_by_weight"])
    beam5, nbest = result["test_bleu_beam5"], result["test_bleu_beam10_1best"]
    # a weight of 0 chosen on valid is no use of the LM: said so, not shown as a gain of 0
    reranked = (
        f"**{rescoring['test_bleu']:.2f}** | {signed(rescoring['test_bleu'] - nbest)} on the 1-best of beam 10"
        if rescoring["weights"]["LM"]
        else f"{rescoring['test_bleu']:.2f} | valid chose no LM (LM=0)"
    )
    fused = (
        f"**{fusion['test_bleu']:.2f}** | {signed(fusion['test_bleu'] - beam5)} on beam 5"
        if fusion["weight"]
        else f"{fusion['test_bleu']:.2f} | valid chose no LM (weight 0)"
    )
    return "\n".join(
        [
            f"`{result['arch']}` (valid ppl {result['valid_ppl']:.2f}) with the language model `{result['lm_arch']}` "
            f"(valid ppl {result['lm_valid_ppl']:.1f}), trained in one run of the example at {result['commit']} "
            f"({result['device']}; {result['example_minutes']:.0f} min, fusion {result['fusion_minutes']:.0f} min):",
            "",
            "| test_2016_flickr (1,000 sentences) | BLEU | against |",
            "|---|---|---|",
            f"| beam 5 | {beam5:.2f} | |",
            f"| 1-best of beam 10 | {nbest:.2f} | |",
            f"| beam 10, reranked with the LM (`alm-rescore`, {weights}) | {reranked} |",
            f"| beam 5, shallow fusion (`--lm-weight {fusion['weight']:g}`) | {fused} |",
            "",
            f"The weights are chosen on the 1,014 validation sentences: rescoring's took valid BLEU from "
            f"{rescoring['valid_bleu_before']:.2f} to {rescoring['valid_bleu_after']:.2f}"
            + ("" if rescoring["weights"]["LM"] else " (with LM=0: the length weight alone)")
            + f"; fusion's valid BLEU at `--lm-weight` {points} was {grid}. One run, one seed: a difference "
            "under a BLEU point is no firm ranking of the two ways to use the LM.",
        ]
    )


def block():
    folder = os.path.join(RESULTS, "multi30k")
    names = sorted(
        name
        for name in (os.listdir(folder) if os.path.isdir(folder) else [])
        if name.endswith(".json") and not name.startswith(("lm-", "pairs-"))  # translation_pairs.py's rows
    )
    if not names:
        return f"The translation figures have not been measured yet (`{COMMAND}`)."
    results = [result_json("multi30k", name) for name in names]
    commands = sorted({command("benchmarks.translation", r.get("argv", [])) for r in results})
    return "\n\n".join(record(r) for r in results) + f"\n\n({', '.join(commands)})"
