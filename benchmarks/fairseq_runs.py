"""What the benchmark scripts share: run a fairseq console script as a user does (a fresh
process from the repository root, so each run starts as ``fairseq-train ...`` would), read
its JSON log records, binarise a corpus of ../shared/data once, and name the checkout's commit
in a record."""

import json
import os
import re
import subprocess
import sys

from benchmarks import ROOT


def fairseq(tool, *args, threads=None, log=None, mode="a"):
    """Run ``fairseq-<tool> args`` and return its output; exit with the output's tail if it fails.

    ``threads`` sets OMP_NUM_THREADS (two one-thread runs side by side on two cores). With
    ``log``, the output goes to that file as it comes (appended with ``mode="a"``) and the
    whole file is returned, so a run resumed after a kill keeps its earlier records."""
    launch = f"import sys; from fairseq_cli.{tool} import cli_main; sys.argv[0] = 'fairseq-{tool}'; cli_main()"
    command = [sys.executable, "-c", launch, *map(str, args)]
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **({"OMP_NUM_THREADS": str(threads)} if threads else {})}
    if log is None:
        proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=env)
        output = proc.stdout + proc.stderr
    else:
        os.makedirs(os.path.dirname(log), exist_ok=True)
        with open(log, mode) as f:
            proc = subprocess.run(command, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT, text=True, env=env)
        with open(log) as f:
            output = f.read()
    if proc.returncode != 0:
        sys.exit(f"fairseq-{tool} failed ({proc.returncode}):\n{output[-3000:]}")
    return output


def commit():
    """The checkout's commit; ALM_COMMIT where the tree is copied without its .git (a GPU machine)."""
    return (
        os.environ.get("ALM_COMMIT")
        or subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
    )


def records(output, kind):
    """The JSON log records of one kind (``train_inner``, ``train``, ``valid``), in order."""
    return [json.loads(m.group(1)) for m in re.finditer(r"\| " + kind + r" \| (\{.*\})", output)]


def training_words_per_second(data, *args, updates, threads=None):
    """``fairseq-train data args`` for ``updates`` updates (no validation, seed 1, the batches read in
    the process, the log as JSON): the words/s of its last training record."""
    output = fairseq(
        "train",
        data,
        *args,
        "--max-update",
        updates,
        "--disable-validation",
        "--log-format",
        "json",
        "--log-interval",
        "1000",
        "--seed",
        "1",
        "--num-workers",
        "0",
        threads=threads,
    )
    train = records(output, "train")
    if not train:
        sys.exit(f"fairseq-train logged no training record:\n{output[-3000:]}")
    return float(train[-1]["train_wps"])


def plugin_task(data, *args, parser="train"):
    """``(args, task)``: ``data args`` with the plugin's --user-dir parsed as fairseq-train
    (``parser="eval_lm"``: fairseq-eval-lm) parses them, and the task it sets up."""
    from fairseq import options, tasks

    make = {"train": options.get_training_parser, "eval_lm": options.get_eval_lm_parser}[parser]
    parsed = options.parse_args_and_arch(
        make(), [data, "--user-dir", os.path.join(ROOT, "alm_plugin"), *map(str, args)]
    )
    return parsed, tasks.setup_task(parsed)


def fairseq_lstm_lm(size, layers, dropout, tied=False):
    """fairseq's own ``lstm_lm`` at our width, depth and dropout (its own flag names), tied or not."""
    size, layers, dropout = str(size), str(layers), str(dropout)
    return (
        *("--arch", "lstm_lm", "--decoder-embed-dim", size, "--decoder-hidden-size", size),
        *("--decoder-out-embed-dim", size, "--decoder-layers", layers),
        *(("--share-decoder-input-output-embed",) if tied else ()),
        *("--decoder-dropout-in", dropout, "--decoder-dropout-out", dropout),
    )


def prepare(corpus, name, sentences=0, open_vocabulary=False, train_only=False):
    """``data-bin/<name>``: ``corpus`` of ../shared/data binarised by prepare_lm_data.py (once),
    ``sentences`` training sentences of it (0: all; ``train_only``: valid, test and the dictionary whole)."""
    data = os.path.join(ROOT, "data-bin", name)
    if not all(os.path.exists(os.path.join(data, f"{split}.bin")) for split in ("train", "valid", "test")):
        if not os.path.exists(os.path.join(ROOT, "..", "shared", "data", corpus)):
            sys.exit(
                f"no {data}: needs ../shared/data/{corpus}, or prepare it with "
                f"examples/language_model/prepare_lm_data.py --corpus {corpus} --name {name}"
            )
        command = [
            sys.executable,
            "examples/language_model/prepare_lm_data.py",
            "--corpus",
            corpus,
            "--name",
            name,
            "--force",  # a split is missing: replace what a failed or older run left
            *(["--open-vocabulary"] if open_vocabulary else []),
            *(["--sample-sentences", str(sentences)] if sentences else []),
            *(["--sample-train-only"] if train_only else []),
        ]
        proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        if proc.returncode != 0:
            sys.exit(f"preparing {name} failed:\n{(proc.stdout + proc.stderr)[-3000:]}")
    return data


def characters_per_word(data, split):
    """The characters a word of ``data``'s ``split`` holds on average (|c|, as bits per character counts them)."""
    import torch
    from fairseq.data import Dictionary, data_utils

    from alm_plugin.data.spelling import character_counts

    d = Dictionary.load(os.path.join(data, "dict.txt"))
    lines = data_utils.load_indexed_dataset(os.path.join(data, split), d)
    words = torch.cat([lines[i] for i in range(len(lines))])
    return character_counts(d)[words].sum().item() / words.numel()
