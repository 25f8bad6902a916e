"""What the output layer costs: the full softmax against the adaptive softmax, and the pointer.

    python -m benchmarks.output_layer_speed --threads 1,2 --json benchmarks/results/cpu/output_layer_speed.json

train: ``stream_speed``'s training step, ``alm_lstm`` 2 x 200: PTB's 10k-word full softmax (the
baseline), WikiText-2's 33k words with the full softmax, the tied adaptive softmax at several cutoffs
and the untied one, and the pointer (L = 100) on PTB with either. eval: ``stream_speed``'s scoring
on WikiText-2's valid split, full against adaptive. Untrained models.
"""

import os

from benchmarks import ROOT
from benchmarks.stream_speed import STREAMS, build, carried_run, chunks, scoring_run
from benchmarks.timing import measure_by_threads, parse, speed_parser, write_figures

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
    batches, runs = {}, {}
    for name, (data, options) in TRAIN_ROWS.items():
        task, model = build(data, options, args.size, STREAMS)
        if data not in batches:  # each corpus's batches, read once
            batches[data] = chunks(task, "train", args.updates, "cpu")
        runs[name] = carried_run(task, model, batches[data])
    return runs


def main():
    parser = speed_parser(
        __doc__,
        device=None,
        size=(200, "embedding and hidden size (the PTB table's: 200)"),
        updates=30,
        repeats=3,
        threads=f"1,{os.cpu_count()}",
    )
    parser.add_argument("--eval-batches", type=int, default=200, help="35-word chunks scored per eval run")
    args = parse(parser)
    for data, corpus in ((PTB, "ptb"), (WT2, "wikitext-2")):
        if not os.path.exists(os.path.join(data, "dict.txt")):
            parser.error(
                f"no {data}: prepare it with python examples/language_model/prepare_lm_data.py --corpus {corpus}"
            )

    def kinds():
        return [
            ("train", training_runs(args), BASELINE),
            (
                "eval",
                {name: scoring_run(WT2, options, args.size, args.eval_batches) for name, options in EVAL_ROWS.items()},
                "WT2 eval, full softmax",
            ),
        ]

    write_figures(
        args.json,
        {
            "by_threads": measure_by_threads(
                args.threads,
                kinds,
                args.repeats,
                lambda kind, threads: (
                    f"{kind} tokens/s, 2 x {args.size}, "
                    f"{STREAMS if kind == 'train' else 1} x 35 chunks, CPU, {threads} threads, median of {args.repeats}"
                ),
            )
        },
    )


if __name__ == "__main__":
    main()
