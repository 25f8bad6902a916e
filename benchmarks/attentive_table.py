#!/usr/bin/env python
"""Salton et al. (2017) Table 1 rows at one size and one budget: the Attentive LM with the
single and the combined score, beside fairseq's lstm_lm, on a PTB slice. Same recipe as
``amsrn_table.py`` (whose row (a) is this table's LSTM), so the two tables line up.

    python benchmarks/attentive_table.py                       # PTB slice, 2 x 256, 3 epochs (CPU)
    python benchmarks/attentive_table.py --optimizer sgd --rows lstm,single,single-linear   # the paper's SGD
    python benchmarks/attentive_table.py --rows lstm,single,combined --sentences 0 --size 650 --epochs 40
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from amsrn_table import best_valid_ppl, prepare_slice, rows as amsrn_rows, slice_arguments  # noqa: E402


def rows(size, dropout):
    ours = ["--arch", "attentive_lm", "--embed-dim", size, "--hidden-size", size, "--dropout", dropout]
    return {"lstm": ("LSTM (fairseq lstm_lm)", amsrn_rows(size, dropout, "0")["(a) LSTM (fairseq lstm_lm)"]),
            "single": ("attentive_lm single (Eq. 9)", ours + ["--attention-score", "single"]),
            "combined": ("attentive_lm combined (Eq. 10)", ours + ["--attention-score", "combined"]),
            "single-linear": ("single, --concat-activation linear", ours + ["--attention-score", "single",
                                                                         "--concat-activation", "linear"]),
            "combined-linear": ("combined, --concat-activation linear", ours + ["--attention-score", "combined",
                                                                             "--concat-activation", "linear"])}


def main():
    parser = slice_arguments(argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter))
    parser.add_argument("--rows", default="single,combined",
                        help="any of lstm,single,combined,single-linear,combined-linear")
    args = parser.parse_args()
    data = prepare_slice(args)
    print(f"{'row':38s} {'valid ppl':>9s} {'attn entropy':>12s}")
    table = rows(args.size, args.dropout)
    for key in args.rows.split(","):
        name, row_args = table[key]
        ppl, entropy = best_valid_ppl(data, row_args, args.epochs, args.lr, args.optimizer)
        print(f"{name:38s} {ppl:9.1f} {entropy:>12}", flush=True)


if __name__ == "__main__":
    main()
