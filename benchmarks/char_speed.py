#!/usr/bin/env python
"""Characters/s of char_cache_lm (HCLM + cache) and the char LSTM against hclm of the same
size, and fairseq's word-level lstm_lm of that size on the same words as a reference:
training (fairseq-train) and scoring (fairseq-eval-lm), side by side on the same data and
machine (runs interleaved, median of the repeats).

    python -m benchmarks.char_speed                        # shipped sample, LSTMs of 600 (paper)
    python -m benchmarks.char_speed --size 256 --embed 128

fairseq reports words/s; characters/s is that times the split's characters per word (|c|
as bpc counts it). The target: the cache costs well under 2x (ratio above 0.5).
"""
import argparse
import os
import re
import shutil
import statistics
import sys

import torch

from benchmarks.fairseq_runs import ROOT, characters_per_word, fairseq, records
from benchmarks.timing import measure, write_json



OPEN_VOCABULARY = (["--task", "open_vocabulary_language_modeling"], "open_vocabulary_cross_entropy")
# fairseq's own word LM on the same 10 streams x 35 words (a closed vocabulary: the sample's
# 6,208 types, with a full softmax over them)
WORD_STREAMS = (["--task", "language_modeling", "--tokens-per-sample", "35", "--sample-break-mode", "none"],
                "cross_entropy")


def model_args(size, embed):
    """name -> (task arguments, criterion, model arguments)."""
    common = ["--char-embed-dim", embed, "--hidden-size", size, "--dropout", "0.5"]
    return {"hclm": (*OPEN_VOCABULARY, ["--arch", "hclm"] + common),
            "char_cache_lm (K=100)": (*OPEN_VOCABULARY, ["--arch", "char_cache_lm", "--cache-size", "100"] + common),
            "char_lstm_lm": (*OPEN_VOCABULARY, ["--arch", "char_lstm_lm"] + common),
            "lstm_lm (word level)": (*WORD_STREAMS, [
                "--arch", "lstm_lm", "--decoder-embed-dim", size, "--decoder-hidden-size", size,
                "--decoder-out-embed-dim", size, "--decoder-layers", "1", "--share-decoder-input-output-embed",
                "--decoder-dropout-in", "0.5", "--decoder-dropout-out", "0.5"])}


def speeds(data, task, criterion, margs, updates, save_dir, threads, device="cpu"):
    shutil.rmtree(save_dir, ignore_errors=True)  # else fairseq resumes the last run and trains nothing
    task = ["--user-dir", "alm_plugin", *(["--cpu"] if device == "cpu" else []), *task]
    output = fairseq("train", data, *task, "--criterion", criterion, "--optimizer", "adam", "--lr", "0.002",
                     "--clip-norm", "10", "--batch-size", "10", "--max-update", updates,
                     "--disable-validation", "--save-dir", save_dir, "--no-epoch-checkpoints",
                     "--log-format", "json", "--log-interval", "1000", "--seed", "1", "--num-workers", "0",
                     *margs, threads=threads)
    train = records(output, "train")[-1]
    output = fairseq("eval_lm", data, *task, "--path", os.path.join(save_dir, "checkpoint_last.pt"),
                     "--gen-subset", "valid", "--batch-size", "10", threads=threads)
    evaluated = float(re.search(r"\(([\d.]+) tokens/s\)", output).group(1))
    return float(train["train_wps"]), evaluated


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=os.path.join(ROOT, "data-bin", "wikitext-2-sample"))
    parser.add_argument("--size", default="600", help="hidden size of every LSTM (paper: 600)")
    parser.add_argument("--embed", default="600", help="character embedding size (paper: 600)")
    parser.add_argument("--updates", type=int, default=60, help="training updates per run")
    parser.add_argument("--repeats", type=int, default=2, help="interleaved runs per model")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--save-dir", default=os.path.join(ROOT, "checkpoints", "char_speed"))
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", choices=["cpu", "cuda"],
                        help="where fairseq trains and scores (default: the GPU when there is one)")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: this machine has no GPU that torch can see")

    per_word = {s: characters_per_word(args.data, s) for s in ("train", "valid")}
    models = model_args(args.size, args.embed)
    def run(name, margs):
        train, evaluate = speeds(args.data, *margs, args.updates, os.path.join(args.save_dir, name.split()[0]),
                                 args.threads, args.device)
        return train * per_word["train"], evaluate * per_word["valid"]

    results = measure({name: (lambda n=name, m=margs: run(n, m)) for name, margs in models.items()}, args.repeats,
                      show=lambda v: f"train {v[0]:8.0f} chars/s   eval-lm {v[1]:8.0f} chars/s")
    medians = {name: [statistics.median(v[i] for v in values) for i in range(2)]
               for name, values in results.items()}
    hclm, word_lstm = medians["hclm"], medians["lstm_lm (word level)"]
    where = torch.cuda.get_device_name() if args.device == "cuda" else f"CPU, {args.threads} threads"
    title = (f"characters/s, {os.path.basename(os.path.normpath(args.data))}, LSTMs of {args.size}, "
             f"chars {args.embed}, 10 streams x 35 words, {args.updates} updates, {where}, median of {args.repeats}")
    print(f"\n{title}")
    print(f"{'model':22s} {'train chars/s':>13s} {'vs hclm':>8s} {'vs lstm_lm':>10s} "
          f"{'eval chars/s':>13s} {'vs hclm':>8s} {'vs lstm_lm':>10s}")
    for name, (train, evaluate) in medians.items():
        print(f"{name:22s} {train:13.0f} {train / hclm[0]:8.2f} {train / word_lstm[0]:10.2f} "
              f"{evaluate:13.0f} {evaluate / hclm[1]:8.2f} {evaluate / word_lstm[1]:10.2f}")
    write_json(args.json, {"title": title, "device": where, "torch": torch.__version__, "argv": sys.argv[1:],
                           "train_chars_per_s": {n: round(v[0]) for n, v in medians.items()},
                           "eval_chars_per_s": {n: round(v[1]) for n, v in medians.items()},
                           "train_vs_hclm": {n: round(v[0] / hclm[0], 3) for n, v in medians.items()},
                           "eval_vs_hclm": {n: round(v[1] / hclm[1], 3) for n, v in medians.items()}})


if __name__ == "__main__":
    main()
