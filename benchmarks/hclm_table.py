#!/usr/bin/env python
"""Kawakami et al. (2017) Tables 4-5 at one budget for every row: bits per character of a
character-level LSTM, HCLM and HCLM + cache on WikiText-2 (or PTB), open vocabulary.

    python benchmarks/hclm_table.py                          # a WikiText-2 slice for a 2-core CPU
    python benchmarks/hclm_table.py --sentences 0 --size 600 --epochs 20 --batch-size 10  # paper size (GPU)

Every row: the same data, chunks of 35 words in --batch-size parallel streams, Adam, clip 10,
the same number of epochs; the best checkpoint by validation loss is then scored on valid
and test as one stream each (``fairseq-validate --batch-size 1``), |c| counting every
character plus one space or line break per word.
"""
import argparse
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fairseq_runs import ROOT, fairseq, prepare  # noqa: E402

PAPER = {"wikitext-2": {"LSTM": "1.758 / 1.803", "HCLM": "1.625 / 1.670", "HCLM + cache": "1.480 / 1.500"},
         "ptb": {"LSTM": "1.369 / 1.331", "HCLM": "1.308 / 1.276", "HCLM + cache": "1.266 / 1.247"}}


def rows(size, embed, dropout):
    common = ["--char-embed-dim", embed, "--hidden-size", size, "--dropout", dropout]
    return {"LSTM": ["--arch", "char_lstm_lm"] + common,
            "HCLM": ["--arch", "hclm"] + common,
            "HCLM + cache": ["--arch", "char_cache_lm"] + common}


def bpc(data, checkpoint, split):
    output = fairseq("validate", data, "--user-dir", "alm_plugin", "--task", "open_vocabulary_language_modeling",
                     "--path", checkpoint, "--valid-subset", split, "--batch-size", "1", "--cpu")
    values = dict(re.findall(r"\| (bpc|ppl|cache_use) ([\d.]+)", output))
    return float(values["bpc"]), float(values["ppl"]), values.get("cache_use", "-")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", choices=sorted(PAPER), default="wikitext-2")
    parser.add_argument("--sentences", type=int, default=12000,
                        help="training sentences to use (valid and test: a tenth as many); 0 = all")
    parser.add_argument("--size", default="256", help="LSTM size of every row (paper: 600; its LSTM 1000)")
    parser.add_argument("--embed", default="128", help="character embedding size")
    parser.add_argument("--dropout", default="0.3")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", default="10", help="parallel streams (paper: 10 WT2, 25 PTB)")
    parser.add_argument("--lr", default="0.002", help="Adam learning rate (paper: 0.002)")
    parser.add_argument("--rows", default="LSTM,HCLM,HCLM + cache")
    parser.add_argument("--save-dir", default=os.path.join(ROOT, "checkpoints", "hclm_table"))
    args = parser.parse_args()
    if not os.path.exists(os.path.join(ROOT, "..", "shared", "data", args.corpus)):
        sys.exit(f"needs ../shared/data/{args.corpus}")

    name = f"{args.corpus}-open" + (f"-{args.sentences // 1000}k" if args.sentences else "")
    data = prepare(args.corpus, name, args.sentences, open_vocabulary=True)
    print(f"{args.corpus} ({'all' if not args.sentences else args.sentences} training sentences, open "
          f"vocabulary), LSTMs of {args.size}, chars {args.embed}, dropout {args.dropout}, Adam {args.lr}, "
          f"{args.epochs} epochs, {args.batch_size} streams x 35 words")
    print(f"{'row':14s} {'valid bpc':>9s} {'test bpc':>9s} {'test word ppl':>13s} {'cache use':>9s} "
          f"{'train min':>9s}   paper dev / test")
    for name, row_args in rows(args.size, args.embed, args.dropout).items():
        if name not in args.rows.split(","):
            continue
        save_dir = os.path.join(args.save_dir, name.replace(" + ", "_").lower())
        start = time.time()
        fairseq("train", data, "--user-dir", "alm_plugin", "--task", "open_vocabulary_language_modeling",
                "--criterion", "open_vocabulary_cross_entropy", "--optimizer", "adam", "--lr", args.lr,
                "--clip-norm", "10", "--batch-size", args.batch_size, "--max-epoch", args.epochs,
                "--save-dir", save_dir, "--no-epoch-checkpoints", "--no-last-checkpoints", "--seed", "1",
                "--log-format", "json", "--log-interval", "1000", "--num-workers", "0", "--cpu", *row_args)
        minutes = (time.time() - start) / 60
        checkpoint = os.path.join(save_dir, "checkpoint_best.pt")
        valid, _, _ = bpc(data, checkpoint, "valid")
        test, ppl, cache_use = bpc(data, checkpoint, "test")
        print(f"{name:14s} {valid:9.4f} {test:9.4f} {ppl:13.1f} {cache_use:>9} {minutes:9.1f}   "
              f"{PAPER[args.corpus][name]}", flush=True)


if __name__ == "__main__":
    main()
