#!/usr/bin/env python
"""Train and score a corpus's table rows (declared in ``rows.py``): every row the same size,
recipe and budget; only the model (and how it reads the text) differs.

    python -m benchmarks.table --corpus ptb --rows lstm,single       # train the rows whose JSON is missing
    python -m benchmarks.table --corpus wikitext-2 --list            # the rows and their arguments
    python -m benchmarks.report --update-docs                        # tables, statements, pictures

Each row, in the run that trains it, writes ``benchmarks/results/<corpus>/<row>.json`` the moment
it finishes (``run_row``: its training record; ``evaluate``: every figure scored after it). Rows
whose JSON exists are skipped and a killed row resumes from its ``checkpoint_last.pt``, so a table
fills over several runs (``nohup ... &``; ``--threads 1`` to run two rows side by side).
"""

import argparse
import json
import os
import re
import sys
import time

from benchmarks import trainable
from benchmarks.fairseq_runs import ROOT, characters_per_word, commit, fairseq, prepare, records
from benchmarks.result_files import check_json, write_json
from benchmarks.row_commands import CPU, Device, criterion_args, task_args
from benchmarks.row_scoring import evaluate
from benchmarks.rows import CORPORA, DROPOUT_LAYOUT, WIDTH_OPTIONS


def option(row, *flags):
    """The value of the first of ``flags`` the row's arguments give."""
    return next((row.args[row.args.index(f) + 1] for f in flags if f in row.args), None)


def checkpoint_state(path):
    """fairseq's bookkeeping in a checkpoint: the epoch it closed, the training time so far, and the model's
    settings (its architecture's defaults filled in)."""
    from alm_plugin.mends.checkpoint_safety import read_checkpoint

    try:
        saved = read_checkpoint(path)
    except Exception as error:  # a truncated file, or one holding objects other than a checkpoint's
        sys.exit(
            f"{path} could not be read as a fairseq checkpoint ({error.__class__.__name__}): "
            "move it aside and train the row again"
        )
    state, model = saved["extra_state"], saved["cfg"]["model"]
    iterator = state["train_iterator"]
    # saved at the end of an epoch, the iterator already points at the next one
    closed = iterator["epoch"] - (1 if iterator["iterations_in_epoch"] == 0 else 0)
    model = vars(model) if isinstance(model, argparse.Namespace) else dict(model)  # fairseq's legacy models: args
    return closed, state["previous_training_time"], model


def device_name(device):
    if device.flags:
        return "cpu"
    import torch

    return torch.cuda.get_device_name(0)


def train_row(corpus, row, save, threads, log, epochs, device):
    """fairseq-train the row to ``epochs`` (resuming checkpoint_last.pt) and return its log; train.log keeps
    every run's records, a fresh start a fresh log. Per-epoch validation cuts sentences at 35 tokens."""
    fresh = not os.path.exists(os.path.join(save, "checkpoint_last.pt"))
    return fairseq(
        "train",
        corpus.data,
        *task_args(corpus, row, True, device),
        *row.args,
        *criterion_args(row),
        "--max-epoch",
        str(epochs),
        "--best-checkpoint-metric",
        "nll_loss",
        *(["--max-update", str(corpus.max_update)] if corpus.max_update else []),
        "--no-epoch-checkpoints",
        "--save-dir",
        save,
        "--seed",
        str(row.seed),
        "--num-workers",
        "0",
        "--log-format",
        "json",
        "--log-interval",
        "200",
        "--no-progress-bar",
        threads=threads,
        log=log,
        mode="w" if fresh else "a",
    )


# the row arguments a checkpoint's saved model options must hold as given (the arch's own defaults aside)
SAVED = {"--arch": "_name", "--embed-dim": "embed_dim", "--hidden-size": "hidden_size", "--dropout": "dropout"}


def refuse_another_model(name, row, path):
    """A checkpoint in the row's folder that another model wrote (its architecture or size): a resume or a
    --cut would give this row's JSON that model's figures. Refused in one line."""
    _, _, model = checkpoint_state(path)
    for flag, key in SAVED.items():
        wanted = option(row, flag)
        saved = model.get(key) if key != "_name" else model.get("_name") or model.get("arch")
        if wanted is not None and saved is not None and str(saved) != wanted and not close(saved, wanted):
            sys.exit(
                f"{name}: {path} holds a model with {flag} {saved}, not this row's {wanted}: move that folder aside "
                "(it is another run's) and train the row again"
            )


def close(saved, wanted):
    """Whether two option values are the same number written two ways (0.2 and "0.2", 200 and "200")."""
    try:
        return float(saved) == float(wanted)
    except (TypeError, ValueError):
        return False


def set_aside(save, stale_json):
    """A stale row's checkpoints, if that JSON is scored from them (not newer than it), moved to
    ``<save>.before-the-dropout-fix[-N]`` so that it trains afresh (a retraining killed part-way resumes).
    Returns where they went, or None."""
    last = os.path.join(save, "checkpoint_last.pt")
    if not os.path.exists(last) or os.path.getmtime(last) > os.path.getmtime(stale_json):
        return None
    aside, n = f"{save}.before-the-dropout-fix", 1
    while os.path.exists(aside):
        n += 1
        aside = f"{save}.before-the-dropout-fix-{n}"
    os.replace(save, aside)
    return aside


def run_row(corpus, name, save_root, threads, results_dir, epochs, device, cut=False):
    """Train the row on ``device`` (resuming its checkpoint_last.pt) and score it; ``cut``: train no
    further and score the epochs trained so far (a row stopped by the clock), the JSON saying where it
    stopped."""
    row = corpus.rows[name]
    save = os.path.join(save_root, name)
    log = os.path.join(save, "train.log")
    for kept in ("checkpoint_last.pt", "checkpoint_best.pt"):  # resumed or scored: this row's model, or refused
        if os.path.exists(os.path.join(save, kept)):
            refuse_another_model(name, row, os.path.join(save, kept))
    if cut and not os.path.exists(os.path.join(save, "checkpoint_best.pt")):
        sys.exit(f"{name}: no finished epoch in {save} to score")
    counting = None  # the count of the parameters that train, in a process of its own
    if not cut:
        counting = trainable.start(corpus, name)  # beside the training
        train = train_row(corpus, row, save, threads, log, epochs, device)
    else:
        train = open(log, encoding="utf-8", errors="replace").read() if os.path.isfile(log) else ""
    if not re.search(r"num\. shared model params: ([\d,]+)", train):
        sys.exit(
            f"{name}: {log} is missing or holds no training record (the row's JSON is made from it): train the "
            "row without --cut, which resumes its checkpoint_last.pt"
        )
    if counting is None:  # a cut row: counted once its log is found, never on a refusal
        counting = trainable.start(corpus, name)
    # fairseq's checkpoints count the epochs and the training time over every run (its wall
    # meter in the log restarts with each process); the best epoch is the one checkpoint_best closed
    last, seconds, _ = checkpoint_state(os.path.join(save, "checkpoint_last.pt"))
    best_epoch, _, model = checkpoint_state(os.path.join(save, "checkpoint_best.pt"))  # a named arch's size
    # by epoch, the last run's record winning; epochs trained before train.log existed are None
    valid = {int(v["epoch"]): v for v in records(train, "valid")}
    trained = {int(e["epoch"]): e for e in records(train, "train")}

    def per_epoch(table, key):
        return [float(table[e][key]) if e in table else None for e in range(1, last + 1)]

    batching = {"sentence": {"batch_sentences": 32}, "fairseq": {"batch_blocks": corpus.streams, "block": 35}}.get(
        row.reading, {"batch_streams": corpus.streams, "chunk": 35}
    )  # streams and characters
    words_per_s = sum(float(e["train_wps"]) for e in trained.values()) / len(trained) if trained else None
    result = {
        "row": name,
        "description": row.description,
        "args": list(row.args),
        "commit": commit(),
        "device": device_name(device),
        **({"cut_at_epoch": last} if last < epochs else {}),
        **({"dropout_layout": DROPOUT_LAYOUT} if row.has_our_decoder else {}),
        "recipe": {
            "size": option(row, *WIDTH_OPTIONS) or str(model.get("hidden_size")),
            "dropout": option(row, "--dropout", "--decoder-dropout-out") or str(model.get("dropout")),
            "epochs": corpus.epochs,
            "anneal_after": corpus.anneal_after,
            "seed": row.seed,
            **({"sentences": corpus.sentences} if corpus.sentences else {}),
            **batching,
            "threads": threads,
            **({"max_update": corpus.max_update} if corpus.max_update else {}),
        },
        "epochs": last,
        "best_epoch": best_epoch,
        "train_minutes": round(seconds / 60, 1),
        "epochs_without_records": [e for e in range(1, last + 1) if e not in valid],
        "train_tokens_per_s": round(words_per_s) if trained else None,
        "valid_ppl_per_epoch": per_epoch(valid, "valid_ppl"),
        "train_ppl_per_epoch": per_epoch(trained, "train_ppl"),
        "gnorm_per_epoch": per_epoch(trained, "train_gnorm"),
        # a pointer's gate, its extra loss and an attention's entropy, epoch by epoch: a collapse shows here
        **{
            f"{stat}_per_epoch": per_epoch(valid, f"valid_{stat}")
            for stat in ("attn_entropy", "pointer_gate", "pointer_loss", "bpc")
            if any(f"valid_{stat}" in v for v in valid.values())
        },
        # the character rows: words/s times the training text's characters a word (|c|, as bpc counts)
        **(
            {"train_chars_per_s": round(words_per_s * characters_per_word(corpus.data, "train"))}
            if trained and row.reading == "characters"
            else {}
        ),
        "params": int(re.search(r"num\. shared model params: ([\d,]+)", train).group(1).replace(",", "")),
    }
    if (counted := trainable.collect(counting, name)) is not None:  # of them, those that receive a gradient
        result["trainable_params"] = counted
    started = time.time()
    result.update(evaluate(corpus, row, os.path.join(save, "checkpoint_best.pt"), threads, device))
    # every figure after training: eval-lm, validate, the grid on valid (unless reused), test with each choice
    result["eval_minutes"] = round((time.time() - started) / 60, 1)
    write_json(os.path.join(results_dir, f"{name}.json"), result)
    return result


def write_progress(corpus, names, save_dir, results_dir, epochs, path):
    """Where each row is, from its JSON (done) or its train.log: the valid curve so far, the epochs
    done and the seconds an epoch has taken (fairseq's wall clock between validations)."""
    found = {}
    for name in names:
        log = os.path.join(save_dir, name, "train.log")
        text = open(log).read() if os.path.exists(log) else ""
        valid = {int(v["epoch"]): v for v in records(text, "valid")}
        # train_wall: a process's seconds when it closed an epoch (validation included)
        walls = [float(t["train_wall"]) for t in records(text, "train")]
        steps = [b - a for a, b in zip(walls, walls[1:]) if b > a]  # a resumed run's clock restarts
        per_epoch = sorted(steps)[len(steps) // 2] if steps else (walls[0] if walls else None)
        done = os.path.join(results_dir, f"{name}.json")
        if os.path.exists(done):
            with open(done) as f:
                result = json.load(f)
            found[name] = {
                "state": "done",
                "epochs_done": result["epochs"],
                "epochs": epochs,
                "valid_ppl_per_epoch": result["valid_ppl_per_epoch"],
                "seconds_per_epoch": per_epoch,
            }
            print(
                f"{name}: done, valid {result['valid_ppl']:.2f} / test {result['test_ppl']:.2f} "
                f"after {result['epochs']} epochs",
                flush=True,
            )
            continue
        done_epochs = max(valid, default=0)
        state = "scoring" if done_epochs >= epochs else "training" if text else "not started"
        found[name] = {
            "state": state,
            "epochs_done": done_epochs,
            "epochs": epochs,
            "valid_ppl_per_epoch": [float(valid[e]["valid_ppl"]) for e in sorted(valid)],
            "seconds_per_epoch": per_epoch,
            "training_seconds_left": round(per_epoch * (epochs - done_epochs)) if per_epoch else None,
        }
        left = found[name]["training_seconds_left"]
        where = {"scoring": "trained, scoring"}.get(
            state,
            f"epoch {done_epochs}/{epochs}, "
            + (f"about {left} s of training left" if left is not None else "its time an epoch not known yet"),
        )
        curve = ", ".join(f"{float(valid[e]['valid_ppl']):.1f}" for e in sorted(valid))
        print(f"{name}: {where}" + (f"; valid ppl {curve}" if curve else ""), flush=True)  # run.sh reads this line
    write_json(path, found, announce=False)  # a reader (run.sh) never sees it half-written


def is_progress(record):
    """A record ``write_progress`` wrote: each row's state by name."""
    return all(isinstance(v, dict) and "state" in v for v in record.values())


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", choices=list(CORPORA), default="ptb")
    parser.add_argument("--rows", help="comma-separated (default: every row of the corpus)")
    parser.add_argument("--save-dir", help="where the rows' checkpoints go (default: checkpoints/<corpus>_table)")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--results-dir", help="where the rows' JSON files are (default: benchmarks/results/<corpus>)")
    parser.add_argument("--epochs", type=int, help="only to smoke-test the script (default: the corpus's budget)")
    parser.add_argument(
        "--evaluate-only",
        action="store_true",
        help="recompute the valid/test figures of --rows from their saved checkpoint_best.pt",
    )
    parser.add_argument("--list", action="store_true", help="print the rows and their arguments")
    parser.add_argument(
        "--device",
        choices=("cpu", "cuda"),
        default="cpu",
        help="where every command trains and scores (cuda: the first GPU)",
    )
    parser.add_argument(
        "--jobs", type=int, default=1, help="scoring commands at once (a GPU machine's cores and one GPU: 8)"
    )
    parser.add_argument(
        "--cut",
        action="store_true",
        help="train no further: score the epochs --rows trained so far (a row stopped by the clock; "
        "its JSON gives cut_at_epoch)",
    )
    parser.add_argument(
        "--progress",
        metavar="JSON",
        help="write where each of --rows is (its valid curve, epochs done, seconds an epoch) to "
        "JSON, print a line per row, and exit",
    )
    args = parser.parse_args()
    corpus = CORPORA[args.corpus]
    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            sys.exit("--device cuda: torch sees no GPU here: leave --device out to run on the CPU")
    device = Device(() if args.device == "cuda" else CPU.flags, max(1, args.jobs))
    save_dir = args.save_dir or os.path.join(ROOT, "checkpoints", f"{corpus.name}_table")
    results_dir = args.results_dir or corpus.results
    names = args.rows.split(",") if args.rows else list(corpus.rows)
    unknown = [name for name in names if name not in corpus.rows]
    if unknown:
        sys.exit(f"unknown rows {unknown} for --corpus {corpus.name}; choose from {', '.join(corpus.rows)}")
    if args.list:
        for name in names:
            row = corpus.rows[name]
            print(f"{name:24s} {row.description} [{row.reading}]\n{'':24s} {' '.join(row.args)}")
        return
    if args.progress:
        read = [os.path.join(results_dir, f"{name}.json") for name in names] + [
            os.path.join(save_dir, name, file) for name in names for file in ("train.log", "checkpoint_last.pt")
        ]  # what the rows' resume and the docs read
        inputs = {"a file the rows' resume or the docs read": read}
        check_json(
            parser, args.progress, [corpus.data], option="--progress", inputs=inputs, own=is_progress
        )  # before any row is read
        write_progress(corpus, names, save_dir, results_dir, args.epochs or corpus.epochs, args.progress)
        return
    os.makedirs(results_dir, exist_ok=True)  # the rows' JSON files go there
    if not os.path.exists(os.path.join(corpus.data, "train.bin")):
        prepare(
            corpus.source or corpus.name,
            corpus.data_name or corpus.name,
            corpus.sentences,
            corpus.open_vocabulary,
            corpus.sample_train_only,
        )
    if args.evaluate_only:
        for name in names:
            path = os.path.join(results_dir, f"{name}.json")
            with open(path) as f:
                result = json.load(f)
            checkpoint = os.path.join(save_dir, name, "checkpoint_best.pt")
            result.update(evaluate(corpus, corpus.rows[name], checkpoint, args.threads, device))
            write_json(path, result)
            print(f"{name}: valid {result['valid_ppl']:.1f}, test {result['test_ppl']:.1f}", flush=True)
        return
    for name in names:
        path = os.path.join(results_dir, f"{name}.json")
        if os.path.exists(path):
            with open(path) as f:
                stale = corpus.rows[name].before_the_dropout_fix(json.load(f))
            if not stale:
                print(f"{name}: done already ({path})", flush=True)
                continue
            print(f"{name}: {path} holds a row of the old dropout layout: retrained, the JSON replaced", flush=True)
            aside = set_aside(os.path.join(save_dir, name), path)
            if aside:
                print(f"{name}: its old checkpoints (what that JSON is scored from) moved to {aside}", flush=True)
        print(f"{name}: {'scoring what it trained' if args.cut else 'training'} ...", flush=True)
        r = run_row(
            corpus, name, save_dir, args.threads, results_dir, args.epochs or corpus.epochs, device, cut=args.cut
        )
        print(f"{name}: valid {r['valid_ppl']:.1f}, test {r['test_ppl']:.1f}, {r['train_minutes']:.0f} min", flush=True)


if __name__ == "__main__":
    main()
