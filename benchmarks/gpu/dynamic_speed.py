#!/usr/bin/env python
"""Evaluation tokens/s on a GPU: static scoring, the neural cache and dynamic evaluation, side by side.

    python -m benchmarks.gpu.dynamic_speed --data data-bin/ptb --json benchmarks/results/gpu/dynamic_speed.json
    python -m benchmarks.gpu.dynamic_speed --device cpu --batches 20 --repeats 1      # a quick look here

The GPU counterpart of ``benchmarks/results/cpu/dynamic_eval_speed.json`` (``benchmarks/stream_speed.py
--kinds eval``): ``alm_lstm`` 2 x ``--size`` (200, the PTB table's) on the first ``--batches`` 1 x 35
chunks of the valid split read as one stream, what ``fairseq-eval-lm --batch-size 1`` does per batch
(``timing.scoring_speed``): static, with ``--neural-cache-window 2000``, and with dynamic evaluation
(SGD, segments of 20 tokens: a forward with its graph, a backward and a step per segment). Runs are
interleaved and repeated (median); each run starts the stream, the cache and the weights afresh.
Untrained models: the speed does not depend on the weights.
"""
import argparse
import os
import statistics
import sys
import time

import torch

from benchmarks.fairseq_runs import ROOT
from benchmarks.stream_speed import ARCHS, build
from benchmarks.timing import device_name, measure, print_ratios, scoring_speed, write_json

KINDS = {"eval, no cache": (), "eval, cache N=2000": ("--neural-cache-window", "2000"),
         "eval, dynamic SGD, segments of 20": ("--dynamic-eval-lr", "0.1", "--dynamic-eval-segment", "20")}


def run_of(data, extra, size, batches, device):
    from fairseq import utils
    task, model = build(data, [*ARCHS["alm_lstm"], *extra], size, 1)
    model.to(device)
    task.load_dataset("valid")
    dataset = task.dataset("valid")
    samples = [task.collate([dataset[i]]) for i in range(min(len(dataset), batches))]
    if device.type == "cuda":
        samples = [utils.move_to_cuda(s) for s in samples]

    tokens = sum(s["ntokens"] for s in samples)

    def run():  # timed here, to the GPU's last kernel (scoring_speed stops its clock before a sync)
        start = time.perf_counter()
        scoring_speed(model, samples)
        if device.type == "cuda":
            torch.cuda.synchronize()
        return tokens / (time.perf_counter() - start)
    return run


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=os.path.join(ROOT, "data-bin", "ptb"))
    parser.add_argument("--size", default="200")
    parser.add_argument("--batches", type=int, default=300, help="35-word chunks scored per run")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cuda", choices=["cpu", "cuda"],
                        help="cuda (default; a GPU benchmark) or cpu (a quick look on a machine without one)")
    parser.add_argument("--json")
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():  # one line, not torch's CUDA traceback
        parser.exit(2, f"{parser.prog}: error: --device cuda (the default): this benchmark needs a GPU and torch sees "
                       "none: run it on a GPU machine, or pass --device cpu for a quick look here\n")
    if not os.path.exists(os.path.join(args.data, "dict.txt")):
        parser.error(f"--data {args.data}: no dict.txt")
    device = torch.device(args.device)
    runs = {name: run_of(args.data, extra, args.size, args.batches, device) for name, extra in KINDS.items()}
    for run in runs.values():  # warm-up
        run()
    speeds = measure(runs, args.repeats)
    baseline = "eval, no cache"
    title = (f"eval tokens/s, {os.path.basename(os.path.normpath(args.data))}, 2 x {args.size}, 1 x 35 chunks, "
             f"{args.batches} chunks, {device_name(device, torch.get_num_threads())}, median of {args.repeats}")
    print_ratios(speeds, baseline, title)
    medians = {name: statistics.median(v) for name, v in speeds.items()}
    write_json(args.json, {"title": title, "argv": sys.argv[1:], "torch": torch.__version__, "baseline": baseline,
                           "tokens_per_s": {n: round(v) for n, v in medians.items()},
                           "ratio": {n: round(v / medians[baseline], 3) for n, v in medians.items()},
                           "runs": {n: [round(v) for v in vs] for n, vs in speeds.items()}})


if __name__ == "__main__":
    main()
