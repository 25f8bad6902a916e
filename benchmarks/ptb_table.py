#!/usr/bin/env python
"""Full-PTB table: do the attentive models beat an equal LSTM? Every row the same size,
recipe and budget; only the model differs.

    python benchmarks/ptb_table.py --rows lstm,single            # train the rows whose JSON is missing
    python benchmarks/ptb_table.py --list                        # the rows and their arguments
    python benchmarks/ptb_table.py --report --update-readme      # table + plot from the JSON files

Recipe (the paper's compressed to a 2-core CPU): PTB 42,068 / 3,370 / 3,761 sentences, one
sentence per sample (``sentence_language_modeling``), 2 x 200 LSTM with tied 200-d
embeddings, dropout 0.2, batch 32 sentences, SGD lr 1.0 on the NLL summed over each sentence
and averaged over the batch (``--sentence-avg``: the paper's and the authors' code's loss),
clip 5, lr halved every epoch after epoch 4, 10 epochs, the best epoch by valid NLL
(validated each epoch on sentences cut at 35 tokens, like training; the final valid/test
figures score every sentence whole).
fairseq's ``transformer_lm`` row uses Adam (SGD at lr 1.0 is not a transformer recipe) with
the same size, epochs and batches.

Each row writes ``benchmarks/results/ptb/<row>.json`` the moment it finishes: the arguments,
commit, valid ppl per epoch, minutes, tokens/s, valid/test ``ppl`` from ``fairseq-eval-lm``,
``paper_ppl`` and attention entropy from ``fairseq-validate``. Rows whose JSON exists are
skipped, so the table fills over several runs (``nohup ... &``; ``--threads 1`` to run two
rows side by side).
"""
import argparse
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fairseq_runs import ROOT, fairseq, prepare, records  # noqa: E402

RESULTS = os.path.join(ROOT, "benchmarks", "results", "ptb")
SIZE, DROPOUT, EPOCHS, ANNEAL = "200", "0.2", 10, 4

# fairseq's fixed scheduler shrinks from epoch --force-anneal on: ANNEAL + 1 keeps lr 1 for ANNEAL epochs
RECIPE = ["--optimizer", "sgd", "--lr", "1.0", "--lr-scheduler", "fixed", "--force-anneal", str(ANNEAL + 1),
          "--lr-shrink", "0.5", "--clip-norm", "5", "--sentence-avg"]
OURS = ["--embed-dim", SIZE, "--hidden-size", SIZE, "--num-layers", "2", "--dropout", DROPOUT]

# name -> (description, model and recipe arguments)
ROWS = {
    "lstm": ("LSTM (ours, `alm_lstm`)", ["--arch", "alm_lstm", *OURS, *RECIPE]),
    "single": ("`attentive_lm` single (Eq. 7 tanh, no b_c)",
               ["--arch", "attentive_lm", "--attention-score", "single", *OURS, *RECIPE]),
    "single-bc": ("`attentive_lm` single, with b_c (Eq. 7 as printed)",
                  ["--arch", "attentive_lm", "--attention-score", "single", "--combination-bias", *OURS, *RECIPE]),
    "combined": ("`attentive_lm` combined (Eq. 10)",
                 ["--arch", "attentive_lm", "--attention-score", "combined", *OURS, *RECIPE]),
    "single-linear": ("`attentive_lm` single, `--concat-activation linear`",
                      ["--arch", "attentive_lm", "--attention-score", "single", "--concat-activation", "linear",
                       *OURS, *RECIPE]),
    "amsrn": ("`amsrn` tied", ["--arch", "amsrn", "--memory-selection", "tied", *OURS, *RECIPE]),
    "amsrn-entropy-0.1": ("`amsrn` tied + entropy, lambda 0.1",
                          ["--arch", "amsrn", "--memory-selection", "tied", "--attention-entropy-weight", "0.1",
                           *OURS, *RECIPE]),
    "amsrn-entropy-1": ("`amsrn` tied + entropy, lambda 1.0",
                        ["--arch", "amsrn", "--memory-selection", "tied", "--attention-entropy-weight", "1.0",
                         *OURS, *RECIPE]),
    "fairseq-lstm_lm": ("fairseq `lstm_lm` (tied, cross-check)",
                        ["--arch", "lstm_lm", "--decoder-embed-dim", SIZE, "--decoder-hidden-size", SIZE,
                         "--decoder-out-embed-dim", SIZE, "--decoder-layers", "2",
                         "--share-decoder-input-output-embed", "--decoder-dropout-in", DROPOUT,
                         "--decoder-dropout-out", DROPOUT, *RECIPE]),
    "fairseq-transformer_lm": ("fairseq `transformer_lm` (2 layers, 200-d, FFN 512; Adam)",
                               ["--arch", "transformer_lm", "--decoder-embed-dim", SIZE,
                                "--decoder-input-dim", SIZE, "--decoder-output-dim", SIZE,
                                "--decoder-ffn-embed-dim", "512", "--decoder-layers", "2",
                                "--decoder-attention-heads", "4", "--share-decoder-input-output-embed",
                                "--dropout", DROPOUT, "--optimizer", "adam", "--lr", "0.001",
                                "--lr-scheduler", "inverse_sqrt", "--warmup-updates", "1000",
                                "--clip-norm", "5", "--sentence-avg"]),
}
# document-level rows (``-stream``): the corpus as 20 parallel streams of 35-word chunks, the LSTM
# state and the last MEMORY attention states carried across chunks; 20 x 35 = 700 tokens per
# update, about the sentence rows' 32 sentences (~740 tokens), so the updates per epoch match.
# M = 100: the Pointer Sentinel-LSTM's window (and the cache benchmarks'); it spans ~4 PTB sentences.
MEMORY, STREAMS = "100", 20
ROWS.update({
    "lstm-stream": ("LSTM (ours, `alm_lstm`), document streams", ["--arch", "alm_lstm", *OURS, *RECIPE]),
    "single-stream": (f"`attentive_lm` single, document streams, M = {MEMORY}",
                      ["--arch", "attentive_lm", "--attention-score", "single", "--memory-window", MEMORY,
                       *OURS, *RECIPE]),
    "amsrn-stream": (f"`amsrn` tied, document streams, M = {MEMORY}",
                     ["--arch", "amsrn", "--memory-selection", "tied", "--memory-window", MEMORY, *OURS, *RECIPE]),
    "ps-lstm-stream": (f"Pointer Sentinel-LSTM (`pointer_sentinel_lm`), document streams, L = {MEMORY}",
                       ["--arch", "pointer_sentinel_lm", "--pointer-window", MEMORY, *OURS, *RECIPE]),
})
# the output layer's cost in quality: the stream LSTM with the tied adaptive softmax, everything
# else as lstm-stream. Head: PTB's 2,000 most frequent words (~83% of the tokens); one tail, the
# other 8,004 (the suggested head; not tuned on a slice)
ADAPTIVE_CUTOFF = "2000"
OUTPUT_LAYER_ROWS = {"lstm-stream-adaptive": "lstm-stream"}  # row -> its full-softmax twin
ROWS["lstm-stream-adaptive"] = (f"LSTM (ours, `alm_lstm`), document streams, tied adaptive softmax (head {ADAPTIVE_CUTOFF})",
                                ["--arch", "alm_lstm", *OURS, *RECIPE, "--adaptive-softmax-cutoff", ADAPTIVE_CUTOFF])
PAPER = {"single": "71.7 / 70.1 (2 x 650, 39+ epochs)", "combined": "72.6 / 70.7 (2 x 650)"}


COMMON = ["--user-dir", "alm_plugin", "--task", "sentence_language_modeling", "--cpu"]
STREAM_COMMON = ["--user-dir", "alm_plugin", "--task", "document_language_modeling", "--cpu"]


def is_stream(name):
    return "-stream" in name


def task_args(name, training):
    """The task and its batching: sentences (validated cut at 35 tokens in training, whole at the
    end), or streams (``STREAMS`` in training; one stream, the exact figure, at the end)."""
    if is_stream(name):
        return [*STREAM_COMMON, "--batch-size", str(STREAMS if training else 1)]
    return [*COMMON, "--batch-size", "32" if training else "64", "--eval-tokens-per-sample", "35" if training else "0"]


def checkpoint_state(path):
    """fairseq's bookkeeping in a checkpoint: the epoch it closed and the training time so far."""
    import torch
    state = torch.load(path, map_location="cpu", weights_only=False)["extra_state"]
    iterator = state["train_iterator"]
    # saved at the end of an epoch, the iterator already points at the next one
    closed = iterator["epoch"] - (1 if iterator["iterations_in_epoch"] == 0 else 0)
    return closed, state["previous_training_time"]


def commit():
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                          text=True).stdout.strip()


def run_row(name, data, save_root, threads, results_dir=RESULTS, epochs=EPOCHS):
    description, row_args = ROWS[name]
    save = os.path.join(save_root, name)
    # per-epoch validation cuts sentences at 35 tokens like training (as the first rows did);
    # the final figures below score every sentence whole
    # fairseq resumes from checkpoint_last.pt; train.log keeps every run's records (a fresh
    # start, with no checkpoint to resume, starts a fresh log)
    fresh = not os.path.exists(os.path.join(save, "checkpoint_last.pt"))
    train = fairseq("train", data, *task_args(name, True), *row_args, "--criterion", "attention_cross_entropy",
                    "--max-epoch", str(epochs), "--best-checkpoint-metric", "nll_loss",
                    "--no-epoch-checkpoints", "--save-dir", save, "--seed", "1", "--num-workers", "0",
                    "--log-format", "json", "--log-interval", "200", "--no-progress-bar", threads=threads,
                    log=os.path.join(save, "train.log"), mode="w" if fresh else "a")
    # fairseq's checkpoints count the epochs and the training time over every run (its wall
    # meter in the log restarts with each process); the best epoch is the one checkpoint_best closed
    last, seconds = checkpoint_state(os.path.join(save, "checkpoint_last.pt"))
    best_epoch, _ = checkpoint_state(os.path.join(save, "checkpoint_best.pt"))
    # by epoch, the last run's record winning; epochs trained before train.log existed are None
    valid = {int(v["epoch"]): v for v in records(train, "valid")}
    trained = {int(e["epoch"]): e for e in records(train, "train")}
    per_epoch = lambda table, key: [float(table[e][key]) if e in table else None for e in range(1, last + 1)]
    result = {"row": name, "description": description, "args": row_args, "commit": commit(),
              "recipe": {"size": SIZE, "dropout": DROPOUT, "epochs": EPOCHS, "anneal_after": ANNEAL,
                         **({"batch_streams": STREAMS, "chunk": 35} if is_stream(name) else {"batch_sentences": 32}),
                         "threads": threads},
              "epochs": last, "best_epoch": best_epoch, "train_minutes": round(seconds / 60, 1),
              "epochs_without_records": [e for e in range(1, last + 1) if e not in valid],
              "train_tokens_per_s": round(sum(float(e["train_wps"]) for e in trained.values()) / len(trained))
              if trained else None,
              "valid_ppl_per_epoch": per_epoch(valid, "valid_ppl"),
              "train_ppl_per_epoch": per_epoch(trained, "train_ppl"),
              "gnorm_per_epoch": per_epoch(trained, "train_gnorm"),
              # a pointer's gate and an attention's entropy, epoch by epoch: a collapse shows here
              **{f"{stat}_per_epoch": per_epoch(valid, f"valid_{stat}") for stat in ("attn_entropy", "pointer_gate")
                 if any(f"valid_{stat}" in v for v in valid.values())},
              "params": int(re.search(r"num\. shared model params: ([\d,]+)", train).group(1).replace(",", ""))}
    result.update(evaluate(os.path.join(save, "checkpoint_best.pt"), data, threads, name))
    os.makedirs(results_dir, exist_ok=True)
    with open(os.path.join(results_dir, f"{name}.json"), "w") as f:
        json.dump(result, f, indent=1)
    return result


def evaluate(checkpoint, data, threads, name):
    """valid/test ``ppl`` (fairseq-eval-lm) and ``paper_ppl``, attention entropy (fairseq-validate),
    every sentence scored whole (a stream row: the split as one stream); then the neural cache's
    window, theta and lambda chosen on valid (alm-cache-grid) and valid/test ``ppl`` with it."""
    result = {"eval_commit": commit()}
    for split in ("valid", "test"):
        evaluated = fairseq("eval_lm", data, *task_args(name, False), "--path", checkpoint, "--gen-subset", split,
                            threads=threads)
        result[f"{split}_ppl"] = float(re.search(r"Perplexity: ([\d.]+)", evaluated).group(1))
        validated = records(fairseq("validate", data, *task_args(name, False), "--path", checkpoint,
                                    "--valid-subset", split, "--criterion", "attention_cross_entropy",
                                    "--log-format", "json", threads=threads), split)[-1]
        result[f"{split}_paper_ppl"] = float(validated[f"{split}_paper_ppl"])
        result[f"{split}_validate_ppl"] = float(validated[f"{split}_ppl"])
        for stat in ("attn_entropy", "pointer_gate"):  # the models that log them
            if f"{split}_{stat}" in validated:
                result[f"{split}_{stat}"] = float(validated[f"{split}_{stat}"])
    result.update(evaluate_test_time(checkpoint, data, threads, name))
    return result


# dynamic evaluation (SGD, stream rows: segments of 20 tokens), its lr and decay chosen on valid
# beside the cache's settings, by the same alm-cache-grid run
DYNAMIC_LRS, DYNAMIC_DECAYS = "0.3,1,3", "0"  # training stepped lr 1 on 35-word sums


def evaluate_test_time(checkpoint, data, threads, name):
    """The test-time options on top: the grid on valid (alm-cache-grid: the neural cache, and for the
    stream rows dynamic evaluation and both together), then fairseq-eval-lm with the chosen flags. The
    valid figures with dynamic evaluation are the grid's (it reads valid exactly as eval-lm does)."""
    grid_json = os.path.join(os.path.dirname(checkpoint), "cache_grid.json")
    env = {**os.environ, **({"OMP_NUM_THREADS": str(threads)} if threads else {})}
    dynamic = ["--dynamic-lrs", DYNAMIC_LRS, "--dynamic-decays", DYNAMIC_DECAYS] if is_stream(name) else []
    proc = subprocess.run([sys.executable, "-m", "alm_plugin.cli.cache_grid", "--path", checkpoint, "--data", data,
                           "--cpu", "--json", grid_json, *dynamic], cwd=ROOT, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        sys.exit(f"alm-cache-grid failed ({proc.returncode}):\n{(proc.stdout + proc.stderr)[-3000:]}")
    with open(grid_json) as f:
        chosen = json.load(f)
    cache_flags = lambda c: ["--neural-cache-window", str(c["window"]), "--neural-cache-theta", str(c["theta"]),
                             "--neural-cache-lambda", str(c["lambda"])]
    dynamic_flags = lambda c: ["--dynamic-eval-lr", str(c["lr"]), "--dynamic-eval-decay", str(c["decay"]),
                               "--dynamic-eval-segment", str(c["segment"])]
    result = {"cache": {"window": chosen["window"], "theta": chosen["theta"], "lambda": chosen["lambda"],
                        "chosen_on": "valid", "grid_valid_ppl": round(chosen["ppl_with_cache"], 2)}}
    for split in ("valid", "test"):
        evaluated = fairseq("eval_lm", data, *task_args(name, False), "--path", checkpoint, "--gen-subset", split,
                            *cache_flags(chosen), threads=threads)
        result[f"{split}_ppl_cache"] = float(re.search(r"Perplexity: ([\d.]+)", evaluated).group(1))
    for kind, suffix, flags in (("dynamic", "dynamic", dynamic_flags),
                                ("both", "cache_dynamic", lambda c: [*dynamic_flags(c), *cache_flags(c)])):
        if kind not in chosen:
            continue
        result[kind] = {**chosen[kind], "chosen_on": "valid"}
        result[f"valid_ppl_{suffix}"] = round(chosen[kind]["ppl"], 2)
        evaluated = fairseq("eval_lm", data, *task_args(name, False), "--path", checkpoint, "--gen-subset", "test",
                            *flags(chosen[kind]), threads=threads)
        result[f"test_ppl_{suffix}"] = float(re.search(r"Perplexity: ([\d.]+)", evaluated).group(1))
    return result


def load_results(results_dir=RESULTS):
    found = {}
    for name in ROWS:
        path = os.path.join(results_dir, f"{name}.json")
        if os.path.exists(path):
            with open(path) as f:
                found[name] = json.load(f)
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", default=",".join(ROWS), help=f"comma-separated, from: {', '.join(ROWS)}")
    parser.add_argument("--data", default=os.path.join(ROOT, "data-bin", "ptb"))
    parser.add_argument("--save-dir", default=os.path.join(ROOT, "checkpoints", "ptb_table"))
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--results-dir", default=RESULTS, help="where the rows' JSON files are")
    parser.add_argument("--epochs", type=int, default=EPOCHS, help="only to smoke-test the script")
    parser.add_argument("--evaluate-only", action="store_true",
                        help="recompute the valid/test figures of --rows from their saved checkpoint_best.pt")
    parser.add_argument("--list", action="store_true", help="print the rows and their arguments")
    parser.add_argument("--report", action="store_true", help="print the table and draw docs/ptb_valid_ppl.png")
    parser.add_argument("--update-readme", action="store_true", help="with --report: write the table and the statement into docs/benchmarks.md "
                             "(between its ptb-table markers; the name is kept from when they were in README.md)")
    args = parser.parse_args()
    if args.list:
        for name, (description, row_args) in ROWS.items():
            print(f"{name:24s} {description}\n{'':24s} {' '.join(row_args)}")
        return
    if args.report:
        import ptb_report  # the tables, statements and pictures (it imports this module's rows)
        ptb_report.report(args.results_dir, args.update_readme)
        return
    unknown = [name for name in args.rows.split(",") if name not in ROWS]
    if unknown:
        sys.exit(f"unknown rows {unknown}; choose from {', '.join(ROWS)}")
    if not os.path.exists(os.path.join(args.data, "train.bin")):
        corpus = os.path.basename(os.path.abspath(args.data))  # data-bin/ptb or data-bin/wikitext-2
        if os.path.dirname(os.path.abspath(args.data)) != os.path.join(ROOT, "data-bin") or \
                corpus not in ("ptb", "wikitext-2"):
            sys.exit(f"no {args.data}: binarise the corpus there with examples/language_model/prepare_lm_data.py")
        prepare(corpus, corpus)
    if args.evaluate_only:
        for name in args.rows.split(","):
            path = os.path.join(args.results_dir, f"{name}.json")
            with open(path) as f:
                result = json.load(f)
            result.update(evaluate(os.path.join(args.save_dir, name, "checkpoint_best.pt"), args.data, args.threads,
                                   name))
            with open(path, "w") as f:
                json.dump(result, f, indent=1)
            print(f"{name}: valid {result['valid_ppl']:.1f}, test {result['test_ppl']:.1f} "
                  f"(paper_ppl {result['test_paper_ppl']:.1f})", flush=True)
        return
    for name in args.rows.split(","):
        if os.path.exists(os.path.join(args.results_dir, f"{name}.json")):
            print(f"{name}: done already ({args.results_dir}/{name}.json)", flush=True)
            continue
        print(f"{name}: training ...", flush=True)
        r = run_row(name, args.data, args.save_dir, args.threads, args.results_dir, args.epochs)
        print(f"{name}: valid {r['valid_ppl']:.1f}, test {r['test_ppl']:.1f} (paper_ppl {r['test_paper_ppl']:.1f}), "
              f"{r['train_minutes']:.0f} min", flush=True)


if __name__ == "__main__":
    main()
