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
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from benchmarks import trainable
from benchmarks.fairseq_runs import ROOT, characters_per_word, commit, fairseq, prepare, records
from benchmarks.result_files import check_json, write_json
from benchmarks.row_commands import CPU, Device, criterion_args, task_args
from benchmarks.rows import CORPORA, DROPOUT_LAYOUT


def option(row, *flags):
    """The value of the first of ``flags`` the row's arguments give."""
    return next((row.args[row.args.index(f) + 1] for f in flags if f in row.args), None)


def checkpoint_state(path):
    """fairseq's bookkeeping in a checkpoint: the epoch it closed, the training time so far, and the model's
    settings (its architecture's defaults filled in)."""
    from alm_plugin.checkpoint_safety import read_checkpoint

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


def in_parallel(device, *calls):
    """Run the no-argument ``calls`` ``device.jobs`` at a time (each starts its own process) and return
    their results in order; a call that exits (a failed command) ends the run with its message."""
    with ThreadPoolExecutor(max_workers=device.jobs) as pool:
        return [future.result() for future in [pool.submit(call) for call in calls]]


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


def set_aside(save, stale_json):
    """A stale row's checkpoints, if that JSON was scored from them (not newer than it), moved to
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
    counting = trainable.start(corpus, name)  # beside the training, in a process of its own
    if not cut:
        train = train_row(corpus, row, save, threads, log, epochs, device)
    elif os.path.exists(os.path.join(save, "checkpoint_best.pt")):
        with open(log) as f:
            train = f.read()
    else:
        sys.exit(f"{name}: no finished epoch in {save} to score")
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
            "size": option(row, "--hidden-size", "--decoder-hidden-size", "--decoder-embed-dim")
            or str(model.get("hidden_size")),
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


def perplexity(output):
    return float(re.search(r"Perplexity: ([\d.]+)", output).group(1))


def evaluate(corpus, row, checkpoint, threads, device):
    """valid/test ``ppl`` (fairseq-eval-lm) and ``paper_ppl``, attention entropy, pointer gate
    (fairseq-validate with our criterion); then the test-time options (our rows). Two phases of
    independent commands, ``device.jobs`` at a time: the static figures beside the grid on valid, then
    test with the grid's choices."""
    result = {"eval_commit": commit()}
    if row.reading == "characters":  # bits per character, each split read as one stream
        for split, validated in zip(
            ("valid", "test"),
            in_parallel(
                device,
                *[
                    lambda split=split: validate(corpus, row, checkpoint, split, criterion_args(row), threads, device)
                    for split in ("valid", "test")
                ],
            ),
        ):
            result.update(
                {
                    f"{split}_{stat}": float(validated[f"{split}_{stat}"])
                    for stat in ("bpc", "ppl", "cache_use")
                    if f"{split}_{stat}" in validated
                }
            )
        if "test_cache_use" in result:
            result["test_cache_posterior"] = cache_posterior(corpus, checkpoint, threads, device)
        return result
    ours = row.reading != "fairseq"  # adaptive_loss logs no paper_ppl, and our tools read our tasks only
    points = grid_points(corpus) if ours and corpus.test_time else []
    figures = in_parallel(
        device,
        *[
            lambda split=split: eval_lm_ppl(corpus, row, checkpoint, split, [], threads, device)
            for split in ("valid", "test")
        ],
        *[
            lambda split=split: validate(
                corpus, row, checkpoint, split, ["--criterion", "attention_cross_entropy"], threads, device
            )
            for split in (("valid", "test") if ours else ())
        ],
        *[lambda point=point: grid_point(corpus, checkpoint, *point, threads, device) for point in points],
    )
    result["valid_ppl"], result["test_ppl"] = figures[:2]
    for split, validated in zip(("valid", "test"), figures[2:4] if ours else ()):
        result[f"{split}_paper_ppl"] = float(validated[f"{split}_paper_ppl"])
        result[f"{split}_validate_ppl"] = float(validated[f"{split}_ppl"])
        for stat in ("attn_entropy", "pointer_gate"):  # the models that log them
            if f"{split}_{stat}" in validated:
                result[f"{split}_{stat}"] = float(validated[f"{split}_{stat}"])
    if points:
        result.update(evaluate_test_time(corpus, row, checkpoint, figures[4:], threads, device))
    return result


def validate(corpus, row, checkpoint, split, criterion, threads, device):
    """fairseq-validate's record of ``split``."""
    return records(
        fairseq(
            "validate",
            corpus.data,
            *task_args(corpus, row, False, device),
            "--path",
            checkpoint,
            "--valid-subset",
            split,
            *criterion,
            "--log-format",
            "json",
            threads=threads,
        ),
        split,
    )[-1]


def cache_posterior(corpus, checkpoint, threads, device):
    """The word types the cache model copies most and spells most on test, over every repeated
    type and over those seen fewer than 5 times in train (the paper's Tables 7-8)."""
    path = os.path.join(os.path.dirname(checkpoint), "cache_posterior_test.json")
    record = plugin_tool(
        "cache_posterior",
        "--path",
        checkpoint,
        "--data",
        corpus.data,
        *device.flags,
        "--gen-subset",
        "test",
        "--top",
        "15",
        "--rare-in-train",
        "5",
        "--json",
        path,
        json_out=path,
        threads=threads,
    )
    return {key: record[key] for key in ("mean_posterior", "bpc", "rare_in_train", "tables")}


def finished_grid(grid_json, checkpoint, windows, lrs, decays):
    """The choice of an earlier ``alm-cache-grid`` run of this row (it writes its JSON only once it
    has finished), if it read this checkpoint (written after it) with these windows and dynamic
    points. Only this driver writes the file, always with alm-cache-grid's default thetas and lambdas."""
    if not os.path.exists(grid_json) or os.path.getmtime(grid_json) < os.path.getmtime(checkpoint):
        return None
    with open(grid_json) as f:
        record = json.load(f)
    points = {(float(p["lr"]), float(p["decay"])) for p in record.get("dynamic_grid", [])}
    if (
        record.get("split") != "valid"
        or {int(g["window"]) for g in record["grid"]} != set(windows)
        or points != {(lr, decay) for lr in lrs for decay in decays}
    ):
        return None
    return record


def grid_point(corpus, checkpoint, lr, decay, threads, device):
    """alm-cache-grid on valid at one dynamic-evaluation point (the cache grid alone and with the
    adapted model too): the record of a finished earlier run of it, else a fresh run's. Returns
    the record and True where it is that earlier run's."""
    windows = [int(w) for w in corpus.cache_windows.split(",")]
    path = os.path.join(os.path.dirname(checkpoint), f"cache_grid_lr{lr:g}_decay{decay:g}.json")
    record = finished_grid(path, checkpoint, windows, [lr], [decay])
    if record is not None:
        return record, True
    return plugin_tool(
        "cache_grid",
        "--path",
        checkpoint,
        "--data",
        corpus.data,
        *device.flags,
        "--json",
        path,
        "--windows",
        corpus.cache_windows,
        "--dynamic-lrs",
        f"{lr:g}",
        "--dynamic-decays",
        f"{decay:g}",
        json_out=path,
        threads=threads,
    ), False


def plugin_tool(module, *args, json_out, threads):
    """Run ``alm_plugin.cli.<module> args`` (it writes ``json_out``) and return that JSON; exit
    with the output's tail if it fails."""
    env = {**os.environ, **({"OMP_NUM_THREADS": str(threads)} if threads else {})}
    proc = subprocess.run(
        [sys.executable, "-m", f"alm_plugin.cli.{module}", *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
    )
    if proc.returncode != 0:
        sys.exit(f"alm_plugin.cli.{module} failed ({proc.returncode}):\n{(proc.stdout + proc.stderr)[-3000:]}")
    with open(json_out) as f:
        return json.load(f)


def grid_points(corpus):
    """Dynamic evaluation's (lr, decay) points on valid, one alm-cache-grid run each, so that a row
    killed in its grid resumes after the points already finished."""

    def numbers(text):
        return [float(v) for v in text.split(",")]

    return [(lr, decay) for lr in numbers(corpus.dynamic_lrs) for decay in numbers(corpus.dynamic_decays)]


def combine_grid(points):
    """The grid points' choices combined as one grid's (``points``: ``grid_point``'s returns).
    Returns the combined record and how many points an earlier run's record gave."""
    records, reused = [record for record, _ in points], sum(earlier for _, earlier in points)
    # the cache alone is the same static pass in each run; dynamic evaluation and both: the best point
    combined = {**records[0], "dynamic_grid": [p for r in records for p in r.get("dynamic_grid", [])]}
    for kind in ("dynamic", "both"):
        found = [r[kind] for r in records if kind in r]
        if found:
            combined[kind] = min(found, key=lambda choice: choice["ppl"])
    return combined, reused


def test_time_flags(row, choice, cache=True, dynamic=True):
    """fairseq-eval-lm's flags for a choice of alm-cache-grid (its cache and/or dynamic evaluation)."""
    flags = []
    if dynamic:
        flags += [
            "--dynamic-eval-lr",
            str(choice["lr"]),
            "--dynamic-eval-decay",
            str(choice["decay"]),
            *(["--dynamic-eval-segment", str(choice["segment"])] if row.reading == "stream" else []),
        ]
    if cache:
        flags += [
            "--neural-cache-window",
            str(choice["window"]),
            "--neural-cache-theta",
            str(choice["theta"]),
            "--neural-cache-lambda",
            str(choice["lambda"]),
        ]
    return flags


def eval_lm_ppl(corpus, row, checkpoint, split, flags, threads, device):
    return perplexity(
        fairseq(
            "eval_lm",
            corpus.data,
            *task_args(corpus, row, False, device),
            "--path",
            checkpoint,
            "--gen-subset",
            split,
            *flags,
            threads=threads,
        )
    )


def evaluate_test_time(corpus, row, checkpoint, points, threads, device):
    """The grid on valid (``points``, alm-cache-grid's runs: the neural cache, dynamic evaluation
    (SGD; a stream in segments of 20 tokens, sentences one by one) and both together), then
    fairseq-eval-lm on test with each chosen setting, ``device.jobs`` at a time. The valid figures with
    dynamic evaluation are the grid's (it reads valid exactly as eval-lm does)."""
    chosen, reused = combine_grid(points)
    result = {
        "cache": {
            "window": chosen["window"],
            "theta": chosen["theta"],
            "lambda": chosen["lambda"],
            "chosen_on": "valid",
            "grid_valid_ppl": round(chosen["ppl_with_cache"], 2),
            # then eval_minutes leaves those points' passes out
            **({"grid_points_reused": reused} if reused else {}),
        }
    }
    runs = [(f"{split}_ppl_cache", split, test_time_flags(row, chosen, dynamic=False)) for split in ("valid", "test")]
    for kind, suffix, cache in (("dynamic", "dynamic", False), ("both", "cache_dynamic", True)):
        if kind in chosen:
            result[kind] = {**chosen[kind], "chosen_on": "valid"}
            result[f"valid_ppl_{suffix}"] = round(chosen[kind]["ppl"], 2)
            runs.append((f"test_ppl_{suffix}", "test", test_time_flags(row, chosen[kind], cache=cache)))
    figures = in_parallel(
        device,
        *[
            lambda split=split, flags=flags: eval_lm_ppl(corpus, row, checkpoint, split, flags, threads, device)
            for _, split, flags in runs
        ],
    )
    result.update({key: figure for (key, _, _), figure in zip(runs, figures)})
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
        check_json(parser, args.progress, [corpus.data], option="--progress", inputs=inputs)  # before any row is read
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
            print(f"{name}: {path} was trained before the dropout fix: retrained, the JSON replaced", flush=True)
            aside = set_aside(os.path.join(save_dir, name), path)
            if aside:
                print(f"{name}: its old checkpoints (what that JSON was scored from) moved to {aside}", flush=True)
        print(f"{name}: {'scoring what it trained' if args.cut else 'training'} ...", flush=True)
        r = run_row(
            corpus, name, save_dir, args.threads, results_dir, args.epochs or corpus.epochs, device, cut=args.cut
        )
        print(f"{name}: valid {r['valid_ppl']:.1f}, test {r['test_ppl']:.1f}, {r['train_minutes']:.0f} min", flush=True)


if __name__ == "__main__":
    main()
