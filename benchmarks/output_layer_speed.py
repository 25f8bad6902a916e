#!/usr/bin/env python
"""What the output layer costs: the full softmax against the adaptive softmax, and the pointer.

    python -m benchmarks.output_layer_speed --threads 1,2 --json benchmarks/results/cpu/output_layer_speed.json

**Training step** (``alm_lstm`` 2 x 200, 20 streams x 35 words of each corpus's train split in
stream order, as ``fairseq-train --task document_language_modeling`` feeds it): forward,
``attention_cross_entropy`` (the criterion fairseq-train runs: the target's log probability
alone), backward, clip, SGD. The baseline is PTB's 10k-word full softmax; beside it WikiText-2's
33k words with the full softmax, the tied adaptive softmax at several cutoffs and the untied
one, and the Pointer Sentinel-LSTM (L = 100) on PTB with either output layer.
Goals: WT2 with the tied default >= 1.5x the PTB full-softmax step; the pointer >= 0.85x
``alm_lstm``.

**Evaluation** on WikiText-2's valid split read as one stream, 1 x 35 chunks, what
``fairseq-eval-lm --batch-size 1`` does per batch: forward, ``get_normalized_probs`` (the whole
distribution), the targets' log probs; full against adaptive.

Runs are interleaved and repeated (median); every thread count in the same run; the models are
untrained (speed does not depend on the weights).
"""
import argparse
import os
import sys

import torch

from benchmarks.fairseq_runs import ROOT
from benchmarks.stream_speed import build, scoring_run
from benchmarks.timing import measure_by_threads, timed_training, write_json

STREAMS = 20
PTB, WT2 = os.path.join(ROOT, "data-bin", "ptb"), os.path.join(ROOT, "data-bin", "wikitext-2")
LSTM, POINTER = ["--arch", "alm_lstm"], ["--arch", "pointer_sentinel_lm", "--pointer-window", "100"]
ADAPTIVE = "--adaptive-softmax-cutoff"
BASELINE = "PTB alm_lstm, full softmax"
TRAIN_ROWS = {  # name -> (data, model options)
    BASELINE: (PTB, LSTM),
    "WT2 alm_lstm, full softmax": (WT2, LSTM),
    "WT2 alm_lstm, adaptive 2000,10000 (tied)": (WT2, [*LSTM, ADAPTIVE, "2000,10000"]),
    "WT2 alm_lstm, adaptive 1000,5000,15000 (tied)": (WT2, [*LSTM, ADAPTIVE, "1000,5000,15000"]),
    "WT2 alm_lstm, adaptive 2000,10000 (untied)": (WT2, [*LSTM, ADAPTIVE, "2000,10000", "--adaptive-softmax-untied"]),
    "PTB alm_lstm, adaptive 2000 (tied)": (PTB, [*LSTM, ADAPTIVE, "2000"]),
    "PTB pointer_sentinel_lm L=100, full softmax": (PTB, POINTER),
    "PTB pointer_sentinel_lm L=100, adaptive 2000 (tied)": (PTB, [*POINTER, ADAPTIVE, "2000"]),
}
EVAL_ROWS = {"WT2 eval, full softmax": LSTM, "WT2 eval, adaptive 2000,10000 (tied)": [*LSTM, ADAPTIVE, "2000,10000"]}


def training_runs(args):
    from alm_plugin.criterions.attention_cross_entropy import AttentionCrossEntropyCriterion

    batches, runs = {}, {}
    for name, (data, options) in TRAIN_ROWS.items():
        task, model = build(data, options, args.size, STREAMS)
        if data not in batches:
            task.load_dataset("train")
            dataset = task.dataset("train")
            batches[data] = [task.collate([dataset[i]]) for i in range(args.updates)]
        criterion = AttentionCrossEntropyCriterion(task, sentence_avg=True)

        def run(model=model, criterion=criterion, samples=batches[data]):
            model.decoder.carry.reset()
            return timed_training(model, lambda sample: criterion(model, sample)[0] / STREAMS, samples,
                                  lambda s: s["ntokens"])
        runs[name] = run
    return runs


def eval_runs(args):
    return {name: scoring_run(WT2, options, args.size, args.eval_batches) for name, options in EVAL_ROWS.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", default="200", help="embedding and hidden size (the PTB table's: 200)")
    parser.add_argument("--updates", type=int, default=30, help="training steps per run")
    parser.add_argument("--eval-batches", type=int, default=200, help="35-word chunks scored per eval run")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", default=f"1,{os.cpu_count()}", help="comma-separated thread counts")
    parser.add_argument("--json")
    args = parser.parse_args()
    for data, corpus in ((PTB, "ptb"), (WT2, "wikitext-2")):
        if not os.path.exists(os.path.join(data, "dict.txt")):
            parser.error(f"no {data}: prepare it with python examples/language_model/prepare_lm_data.py --corpus {corpus}")
    result = {"argv": sys.argv[1:], "torch": torch.__version__, "by_threads": measure_by_threads(
        args.threads, lambda: [("train", training_runs(args), BASELINE),
                               ("eval", eval_runs(args), "WT2 eval, full softmax")], args.repeats,
        lambda kind, threads: f"{kind} tokens/s, 2 x {args.size}, {STREAMS if kind == 'train' else 1} x 35 chunks, "
                              f"CPU, {threads} threads, median of {args.repeats}")}
    write_json(args.json, result)


if __name__ == "__main__":
    main()
