#!/usr/bin/env python
"""The AMSRN paper's rows (a)-(d) on PTB, at one size and one budget for every row:

    (a) LSTM                      fairseq's lstm_lm
    (b) LSTM + att                amsrn --memory-selection none
    (c) LSTM + att + select       amsrn --memory-selection tied
    (d) LSTM + att + select + R   (c) with --attention-entropy-weight

    python benchmarks/amsrn_table.py                        # a PTB slice sized for a 2-core CPU
    python benchmarks/amsrn_table.py --sentences 0 --size 650 --epochs 40   # full PTB (GPU)

Prints the best validation perplexity of each row (standard per-token perplexity).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fairseq_runs import ROOT, fairseq, prepare, records  # noqa: E402


def rows(size, dropout, entropy_weight):
    ours = ["--arch", "amsrn", "--embed-dim", size, "--hidden-size", size, "--dropout", dropout]
    return {
        "(a) LSTM (fairseq lstm_lm)": ["--arch", "lstm_lm", "--decoder-embed-dim", size,
                                       "--decoder-hidden-size", size, "--decoder-out-embed-dim", size,
                                       "--decoder-layers", "2", "--share-decoder-input-output-embed",
                                       "--decoder-dropout-in", dropout, "--decoder-dropout-out", dropout],
        "(b) LSTM+att": ours + ["--memory-selection", "none"],
        "(c) LSTM+att+select (tied)": ours + ["--memory-selection", "tied"],
        f"(d) (c) + entropy, lambda={entropy_weight}": ours + ["--memory-selection", "tied",
                                                              "--attention-entropy-weight", entropy_weight],
    }


def best_valid_ppl(data, args, epochs, lr, optimizer="adam"):
    output = fairseq("train", data, "--user-dir", "alm_plugin", "--task", "sentence_language_modeling", "--cpu",
                     "--criterion", "attention_cross_entropy", "--optimizer", optimizer, "--lr", lr,
                     "--clip-norm", "5", "--batch-size", "32", "--max-epoch", str(epochs), "--no-save",
                     "--log-format", "json", "--log-interval", "1000", "--seed", "1", "--num-workers", "0", *args)
    valid = records(output, "valid")
    if not valid:
        sys.exit(f"fairseq-train logged no validation:\n{output[-3000:]}")
    return min(float(v["valid_ppl"]) for v in valid), valid[-1].get("valid_attn_entropy", "-")


def slice_arguments(parser):
    """The PTB slice and the recipe every row shares (also used by attentive_table.py)."""
    parser.add_argument("--sentences", type=int, default=10000,
                        help="training sentences of PTB to use (valid: a tenth as many); 0 = all")
    parser.add_argument("--size", default="256", help="embedding and hidden size of every row")
    parser.add_argument("--dropout", default="0.3")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--optimizer", choices=["adam", "sgd"], default="adam",
                        help="adam (default, lr 0.002) or sgd (the Attentive LM paper's, lr 1.0)")
    parser.add_argument("--lr", help="learning rate (default: 0.002 with adam, 1.0 with sgd)")
    return parser


def prepare_slice(args):
    """Binarise the slice (once) and print the recipe line; returns the data-bin path."""
    if not os.path.exists(os.path.join(ROOT, "..", "shared", "data", "ptb")):
        sys.exit("needs ../shared/data/ptb (the Penn Treebank text)")
    data = prepare("ptb", "ptb" if args.sentences == 0 else f"ptb-{args.sentences // 1000}k", args.sentences)
    args.lr = args.lr or {"adam": "0.002", "sgd": "1.0"}[args.optimizer]
    print(f"PTB ({'all' if args.sentences == 0 else args.sentences} training sentences), 2 x {args.size}, "
          f"dropout {args.dropout}, {args.optimizer} lr {args.lr}, clip 5, {args.epochs} epochs, batch 32 sentences")
    return data


def main():
    parser = slice_arguments(argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter))
    parser.add_argument("--entropy-weight", default="1.0")
    parser.add_argument("--rows", default="abcd", help="which rows to run, e.g. 'cd'")
    args = parser.parse_args()
    data = prepare_slice(args)
    print(f"{'row':40s} {'valid ppl':>9s} {'attn entropy':>12s}")
    for name, row_args in rows(args.size, args.dropout, args.entropy_weight).items():
        if name[1] not in args.rows:
            continue
        ppl, entropy = best_valid_ppl(data, row_args, args.epochs, args.lr, args.optimizer)
        print(f"{name:40s} {ppl:9.1f} {entropy:>12}", flush=True)


if __name__ == "__main__":
    main()
