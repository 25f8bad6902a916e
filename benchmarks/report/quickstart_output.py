"""The README's ``quickstart-output`` block: what ``examples/quickstart.sh`` printed on a committed run,
from the JSON it wrote (``benchmarks/results/quickstart/run.json``, a copy of its ``quickstart.json``)."""

import os

from benchmarks.result_files import read_result
from benchmarks.rows import ROOT

RUN = os.path.join(ROOT, "benchmarks", "results", "quickstart", "run.json")
SAVE = "checkpoints/quickstart"


def block(path=RUN):
    r = read_result(path)
    curve = r["valid_ppl_per_epoch"]
    lines = [
        "Training attentive_lm_small (2 x 256 LSTM, single score) on data-bin/wikitext-2-sample, "
        f"{r['epochs']} epochs on the CPU, from the start (log: {SAVE}/train.log) ...",
        *[f"  epoch {e}: valid perplexity {p:.2f}" for e, p in enumerate(curve, 1)],
        f"  trained in {r['train_seconds']} s",
        f"Done. The model is {SAVE}/checkpoint_best.pt (the best epoch on valid).",
        f"Test perplexity (fairseq-eval-lm, every word and </s> counted): {r['test_ppl']:.2f}",
    ]
    return (
        "```\n"
        + "\n".join(lines)
        + "\n```\n\n"
        + f"(at {r['commit']}, Python {r['python']}, torch {r['torch']}, the install done before; the progress lines "
        "within each epoch left out. The sample is tiny: this shows the pipeline, not the papers' figures.)"
    )
