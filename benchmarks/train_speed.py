#!/usr/bin/env python
"""Training tokens/s of attentive_lm and amsrn against fairseq's lstm_lm of the same size, same data,
same machine, measured side by side (runs interleaved, median of the repeats).

    python benchmarks/train_speed.py                                  # shipped sample, 2 x 650
    python benchmarks/train_speed.py --data data-bin/ptb --updates 80 # PTB (prepare it first)

Each run is a real `fairseq-train` (sentence_language_modeling, batch 32, SGD, no
validation, no checkpoints); the figure is fairseq's own `wps` of the whole run.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def model_args(size, layers, dropout):
    return {
        "lstm_lm (fairseq)": ["--arch", "lstm_lm", "--decoder-embed-dim", size, "--decoder-hidden-size", size,
                              "--decoder-out-embed-dim", size, "--decoder-layers", layers,
                              "--share-decoder-input-output-embed", "--decoder-dropout-in", dropout,
                              "--decoder-dropout-out", dropout],
        "attentive_lm single": ["--arch", "attentive_lm", "--embed-dim", size, "--hidden-size", size,
                                "--num-layers", layers, "--dropout", dropout, "--attention-score", "single"],
        "attentive_lm combined": ["--arch", "attentive_lm", "--embed-dim", size, "--hidden-size", size,
                                  "--num-layers", layers, "--dropout", dropout, "--attention-score", "combined"],
        "amsrn tied": ["--arch", "amsrn", "--embed-dim", size, "--hidden-size", size,
                       "--num-layers", layers, "--dropout", dropout, "--memory-selection", "tied"],
    }


def train_wps(data, args, updates, threads):
    command = [sys.executable, "-c", "from fairseq_cli.train import cli_main; cli_main()", data,
               "--user-dir", "alm_plugin", "--task", "sentence_language_modeling", "--cpu",
               "--optimizer", "sgd", "--lr", "1.0", "--clip-norm", "5", "--batch-size", "32",
               "--max-update", str(updates), "--disable-validation", "--no-save",
               "--log-format", "json", "--log-interval", "1000", "--seed", "1", "--num-workers", "0",
               *args]
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=env)
    records = [json.loads(m.group(1)) for m in re.finditer(r"\| train \| (\{.*\})", proc.stdout + proc.stderr)]
    if proc.returncode != 0 or not records:
        sys.exit(f"fairseq-train failed:\n{(proc.stdout + proc.stderr)[-3000:]}")
    return float(records[-1]["train_wps"])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=os.path.join(ROOT, "data-bin", "wikitext-2-sample"))
    parser.add_argument("--size", default="650", help="embedding and hidden size of every model")
    parser.add_argument("--layers", default="2")
    parser.add_argument("--dropout", default="0.5")
    parser.add_argument("--updates", type=int, default=60, help="training updates per run")
    parser.add_argument("--repeats", type=int, default=2, help="interleaved runs per model")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    args = parser.parse_args()

    models = model_args(args.size, args.layers, args.dropout)
    speeds = {name: [] for name in models}
    for repeat in range(args.repeats):
        for name, margs in models.items():
            speeds[name].append(train_wps(args.data, margs, args.updates, args.threads))
            print(f"  run {repeat + 1}: {name:24s} {speeds[name][-1]:8.0f} tokens/s", flush=True)
    baseline = statistics.median(speeds["lstm_lm (fairseq)"])
    print(f"\ntraining tokens/s, {os.path.basename(os.path.normpath(args.data))}, "
          f"{args.layers} x {args.size}, batch 32 sentences, {args.updates} updates, median of {args.repeats}")
    print(f"{'model':24s} {'tokens/s':>9s} {'vs lstm_lm':>10s}")
    for name, values in speeds.items():
        median = statistics.median(values)
        print(f"{name:24s} {median:9.0f} {median / baseline:10.2f}")


if __name__ == "__main__":
    main()
