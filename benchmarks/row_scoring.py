"""Score a trained table row (``table`` trains it and calls ``evaluate``): fairseq-eval-lm's and
fairseq-validate's figures on valid and test, then the test-time options, the neural cache and dynamic
evaluation, chosen on valid by ``alm-cache-grid`` (the grid's learning rates split over as many runs as
run beside the static commands, so that a row stopped in its grid resumes after the runs already finished:
a run a learning rate where the device runs enough commands at once, one run of the whole grid where it
runs one or two) and scored on test with each choice. No pass is read twice: the valid figures with the
cache come from the grid's pass, as those with dynamic evaluation do, and one fairseq-validate reads valid
and test.
"""

import json
import math
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from benchmarks import ROOT
from benchmarks.fairseq_runs import commit, fairseq, records
from benchmarks.row_commands import criterion_args, task_args


def in_parallel(device, *calls):
    """Run the no-argument ``calls`` ``device.jobs`` at a time (each starts its own process) and return
    their results in order; a call that exits (a failed command) ends the run with its message."""
    with ThreadPoolExecutor(max_workers=device.jobs) as pool:
        return [future.result() for future in [pool.submit(call) for call in calls]]


def perplexity(output):
    return float(re.search(r"Perplexity: ([\d.]+)", output).group(1))


def evaluate(corpus, row, checkpoint, threads, device):
    """valid/test ``ppl`` (fairseq-eval-lm) and ``paper_ppl``, attention entropy, pointer gate
    (fairseq-validate with our criterion); then the test-time options (our rows). Two phases of
    independent commands, ``device.jobs`` at a time: the static figures beside the grid on valid, then
    test with the grid's choices."""
    result = {"eval_commit": commit()}
    if row.reading == "characters":  # bits per character, each split read as one stream
        runs = in_parallel(
            device,
            *[
                lambda split=split: validate(corpus, row, checkpoint, split, criterion_args(row), threads, device)
                for split in ("valid", "test")
            ],
        )
        for split, run in zip(("valid", "test"), runs):
            validated = run[split]
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
    static = 3 if ours else 2  # eval-lm on valid and on test, fairseq-validate on both
    runs = grid_runs(corpus, device.jobs - static) if ours and corpus.test_time else []
    figures = in_parallel(
        device,
        *[
            lambda split=split: eval_lm_scores(corpus, row, checkpoint, split, threads, device)
            for split in ("valid", "test")
        ],
        *(
            [
                lambda: validate(
                    corpus, row, checkpoint, "valid,test", ["--criterion", "attention_cross_entropy"], threads, device
                )
            ]
            if ours
            else []
        ),
        *[
            lambda lrs=lrs, decays=decays: grid_run(corpus, checkpoint, lrs, decays, threads, device)
            for lrs, decays in runs
        ],
    )
    for split, (ppl, sentences) in zip(("valid", "test"), figures[:2]):
        result[f"{split}_ppl"] = ppl
        result.update(sentences)
    for split in ("valid", "test") if ours else ():
        validated = figures[2][split]
        result[f"{split}_paper_ppl"] = float(validated[f"{split}_paper_ppl"])
        result[f"{split}_validate_ppl"] = float(validated[f"{split}_ppl"])
        for stat in ("attn_entropy", "pointer_gate"):  # the models that log them
            if f"{split}_{stat}" in validated:
                result[f"{split}_{stat}"] = float(validated[f"{split}_{stat}"])
    if runs:
        result.update(evaluate_test_time(corpus, row, checkpoint, figures[static:], threads, device))
    return result


def validate(corpus, row, checkpoint, splits, criterion, threads, device):
    """``{split: fairseq-validate's last record of it}`` for ``splits`` (comma-separated, read in one process)."""
    output = fairseq(
        "validate",
        corpus.data,
        *task_args(corpus, row, False, device),
        "--path",
        checkpoint,
        "--valid-subset",
        splits,
        *criterion,
        "--log-format",
        "json",
        threads=threads,
    )
    return {split: records(output, split)[-1] for split in splits.split(",")}


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
    """``grid_run`` at one dynamic-evaluation point."""
    return grid_run(corpus, checkpoint, [lr], [decay], threads, device)


def grid_run(corpus, checkpoint, lrs, decays, threads, device):
    """alm-cache-grid on valid at the dynamic-evaluation points ``lrs`` x ``decays`` (the cache grid alone
    and with each adapted model too): the record of a finished earlier run of it, else a fresh run's.
    Returns the record and how many of the points that earlier run gave (0: a fresh run)."""
    windows = [int(w) for w in corpus.cache_windows.split(",")]
    name = f"cache_grid_lr{'-'.join(f'{v:g}' for v in lrs)}_decay{'-'.join(f'{v:g}' for v in decays)}.json"
    path = os.path.join(os.path.dirname(checkpoint), name)
    record = finished_grid(path, checkpoint, windows, lrs, decays)
    if record is not None:
        return record, len(lrs) * len(decays)
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
        ",".join(f"{v:g}" for v in lrs),
        "--dynamic-decays",
        ",".join(f"{v:g}" for v in decays),
        json_out=path,
        threads=threads,
    ), 0


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


def grid_runs(corpus, slots):
    """The grid as ``(lrs, decays)`` runs of alm-cache-grid: its learning rates split into at most ``slots``
    runs (at least one) of consecutive rates, each with every decay. Each run reads valid once without
    adapting and once a point; more runs side by side end sooner where the device has room for them."""
    lrs, decays = map(list, corpus.declared_grid)
    count = max(1, min(slots, len(lrs)))
    return [(lrs[i * len(lrs) // count : (i + 1) * len(lrs) // count], decays) for i in range(count)]


def combine_grid(points):
    """The grid runs' choices combined as one grid's (``points``: ``grid_run``'s returns).
    Returns the combined record and how many points earlier runs' records gave."""
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


# fairseq-eval-lm --output-word-probs: a line a sample, "<id> word [ln p]\tword [ln p]..."
WORD_PROBS = re.compile(r"fairseq_cli\.eval_lm(?: \| |:)(\d+) (.*)$", re.M)  # fairseq's log format or logging's
WORD_SCORE = re.compile(r"(\S+) \[(\S+)\]")


def sentence_scores(output):
    """``(NLLs, lengths)``: each sentence's NLL (nats) and tokens (its ``</s>`` counted) from eval-lm's word
    probabilities, in corpus order: the samples read by id and cut after each ``</s>`` (a sentence sample holds
    one; a stream's chunk, several)."""
    samples = sorted((int(i), WORD_SCORE.findall(words)) for i, words in WORD_PROBS.findall(output))
    nll, lengths, total, count = [], [], 0.0, 0
    for _, words in samples:
        for word, score in words:
            total, count = total - float(score), count + 1
            if word == "</s>":
                nll.append(round(total, 4))
                lengths.append(count)
                total, count = 0.0, 0
    return nll, lengths


def eval_lm_scores(corpus, row, checkpoint, split, threads, device):
    """``(ppl, {split}_sentence_nll and _sentence_tokens)``: fairseq-eval-lm's perplexity and each sentence's NLL
    and length from the same pass, checked to give that perplexity (a paired bootstrap of two rows reads them)."""
    output = eval_lm(corpus, row, checkpoint, split, ["--output-word-probs"], threads, device)
    ppl, (nll, lengths) = perplexity(output), sentence_scores(output)
    count = int(re.search(r"Evaluated ([\d,]+) tokens", output).group(1).replace(",", ""))
    if sum(lengths) != count or abs(math.exp(sum(nll) / count) / ppl - 1) > 1e-3:
        sys.exit(f"{split}: the sentences' NLL from --output-word-probs do not give eval-lm's perplexity {ppl}")
    return ppl, {f"{split}_sentence_nll": nll, f"{split}_sentence_tokens": lengths}


def eval_lm(corpus, row, checkpoint, split, flags, threads, device):
    """fairseq-eval-lm's output for the row's checkpoint on ``split`` with ``flags``."""
    return fairseq(
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


def eval_lm_ppl(corpus, row, checkpoint, split, flags, threads, device):
    return perplexity(eval_lm(corpus, row, checkpoint, split, flags, threads, device))


def evaluate_test_time(corpus, row, checkpoint, points, threads, device):
    """The grid on valid (``points``, alm-cache-grid's runs: the neural cache, dynamic evaluation
    (SGD; a stream in segments of 20 tokens, sentences one by one) and both together), then
    fairseq-eval-lm on test with each chosen setting, ``device.jobs`` at a time. The valid figures with
    the cache and with dynamic evaluation are the grid's (it reads valid exactly as eval-lm does)."""
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
    # valid with the cache: the grid's own figure (its pass reads valid as eval-lm does), as with dynamic evaluation
    result["valid_ppl_cache"] = round(chosen["ppl_with_cache"], 2)
    result["dynamic_eval_grid"] = dict(zip(("lr", "decay"), map(list, corpus.declared_grid)))
    runs = [("test_ppl_cache", "test", test_time_flags(row, chosen, dynamic=False))]
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
