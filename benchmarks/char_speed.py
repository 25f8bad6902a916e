"""Characters/s of char_cache_lm (HCLM + cache) and the char LSTM against hclm of the same size, and
of fairseq's word-level lstm_lm on the same words: fairseq-train and fairseq-eval-lm runs
interleaved, the median of the repeats; fairseq's words/s times the split's characters per word.

    python -m benchmarks.char_speed                        # shipped sample, LSTMs of 600 (paper)
    python -m benchmarks.char_speed --size 256 --embed 128
"""

import os
import re
import shutil
import statistics

from benchmarks import ROOT
from benchmarks.fairseq_runs import characters_per_word, fairseq, fairseq_lstm_lm, training_words_per_second
from benchmarks.timing import SAMPLE, device_name, measure, parse, speed_parser, write_figures

OPEN_VOCABULARY = (["--task", "open_vocabulary_language_modeling"], "open_vocabulary_cross_entropy")
# fairseq's own word LM on the same 10 streams x 35 words (a closed vocabulary: the sample's
# 6,208 types, with a full softmax over them)
WORD_STREAMS = (
    ["--task", "language_modeling", "--tokens-per-sample", "35", "--sample-break-mode", "none"],
    "cross_entropy",
)


def model_args(size, embed):
    """name -> (task arguments, criterion, model arguments)."""
    common = ["--char-embed-dim", embed, "--hidden-size", size, "--dropout", "0.5"]
    return {
        "hclm": (*OPEN_VOCABULARY, ["--arch", "hclm"] + common),
        "char_cache_lm (K=100)": (*OPEN_VOCABULARY, ["--arch", "char_cache_lm", "--cache-size", "100"] + common),
        "char_lstm_lm": (*OPEN_VOCABULARY, ["--arch", "char_lstm_lm"] + common),
        "lstm_lm (word level)": (*WORD_STREAMS, list(fairseq_lstm_lm(size, 1, 0.5, tied=True))),
    }


def speeds(data, task, criterion, margs, updates, save_dir, threads, device="cpu"):
    """Words/s of one fairseq-train run and of fairseq-eval-lm on valid with its checkpoint."""
    shutil.rmtree(save_dir, ignore_errors=True)  # else fairseq resumes the last run and trains nothing
    task = ["--user-dir", "alm_plugin", *(["--cpu"] if device == "cpu" else []), *task]
    train = training_words_per_second(
        data,
        *task,
        "--criterion",
        criterion,
        "--optimizer",
        "adam",
        "--lr",
        "0.002",
        "--clip-norm",
        "10",
        "--batch-size",
        "10",
        "--save-dir",
        save_dir,
        "--no-epoch-checkpoints",
        *margs,
        updates=updates,
        threads=threads,
    )
    output = fairseq(
        "eval_lm",
        data,
        *task,
        "--path",
        os.path.join(save_dir, "checkpoint_last.pt"),
        "--gen-subset",
        "valid",
        "--batch-size",
        "10",
        threads=threads,
    )
    return train, float(re.search(r"\(([\d.]+) tokens/s\)", output).group(1))


def main():
    parser = speed_parser(
        __doc__,
        data=SAMPLE,
        size=(600, "hidden size of every LSTM (paper: 600)"),
        updates=60,
        repeats=2,
        threads=(os.cpu_count(), "CPU threads", int),
    )
    parser.add_argument("--embed", type=int, default=600, help="character embedding size (paper: 600)")
    parser.add_argument("--save-dir", default=os.path.join(ROOT, "checkpoints", "char_speed"))
    args = parse(parser)
    per_word = {s: characters_per_word(args.data, s) for s in ("train", "valid")}

    def run(name, margs):
        train, evaluate = speeds(
            args.data, *margs, args.updates, os.path.join(args.save_dir, name.split()[0]), args.threads, args.device
        )
        return train * per_word["train"], evaluate * per_word["valid"]

    runs = {name: (lambda n=name, m=margs: run(n, m)) for name, margs in model_args(args.size, args.embed).items()}
    results = measure(runs, args.repeats, show=lambda v: f"train {v[0]:8.0f} chars/s   eval-lm {v[1]:8.0f} chars/s")
    medians = {name: [statistics.median(v[i] for v in values) for i in range(2)] for name, values in results.items()}
    hclm, word_lstm = medians["hclm"], medians["lstm_lm (word level)"]
    where = device_name(args.device, args.threads)
    title = (
        f"characters/s, {os.path.basename(os.path.normpath(args.data))}, LSTMs of {args.size}, "
        f"chars {args.embed}, 10 streams x 35 words, {args.updates} updates, {where}, median of {args.repeats}"
    )
    print(
        f"\n{title}\n{'model':22s} {'train chars/s':>13s} {'vs hclm':>8s} {'vs lstm_lm':>10s} "
        f"{'eval chars/s':>13s} {'vs hclm':>8s} {'vs lstm_lm':>10s}"
    )
    for name, (train, evaluate) in medians.items():
        print(
            f"{name:22s} {train:13.0f} {train / hclm[0]:8.2f} {train / word_lstm[0]:10.2f} "
            f"{evaluate:13.0f} {evaluate / hclm[1]:8.2f} {evaluate / word_lstm[1]:10.2f}"
        )
    write_figures(
        args.json,
        {
            "title": title,
            "device": where,
            "train_chars_per_s": {n: round(v[0]) for n, v in medians.items()},
            "eval_chars_per_s": {n: round(v[1]) for n, v in medians.items()},
            "train_vs_hclm": {n: round(v[0] / hclm[0], 3) for n, v in medians.items()},
            "eval_vs_hclm": {n: round(v[1] / hclm[1], 3) for n, v in medians.items()},
        },
    )


if __name__ == "__main__":
    main()
