#!/usr/bin/env python
"""One step beyond dynamic evaluation's grid, where a row's pick sits at its edge.

``table.py`` chooses dynamic evaluation's SGD lr and decay on valid from the corpus's grid
(``rows.py``: lr 0.3, 1 x decay 0.01, 0.03 on WikiText-2). Where a row's pick is the grid's
largest lr or smallest decay, the best setting may lie outside it. This probe runs
``alm-cache-grid`` on valid one step further on the 1-3-10 ladder (lr x3 at the picked decay,
decay /3 at the picked lr), on the row's saved ``checkpoint_best.pt``:

    python benchmarks/grid_edge.py --corpus wikitext-2 --rows lstm,lstm-stream --threads 1 --save-dir /work/ckpt/wt2

The table keeps its grid's figures (every row the same grid). The probe writes
``benchmarks/results/<corpus>/dynamic-edge.json``, a row at a time (finished rows skipped): each
point's valid ppl with dynamic evaluation alone and with the cache too, and, where a point beats
the row's pick on valid, test with it (fairseq-eval-lm). ``report.py`` says what it found.
"""
import argparse
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rows import CORPORA  # noqa: E402
from table import commit, eval_lm_ppl, grid_point, test_time_flags  # noqa: E402

LADDER = sorted(round(m * 10.0 ** k, 8) for k in range(-5, 3) for m in (1, 3))  # 1e-5, 3e-5, ..., 100, 300


def step(value, up):
    """The next value on the 1-3-10 ladder above (``up``) or below ``value``; None below the ladder."""
    if up:
        return next(v for v in LADDER if v > value * (1 + 1e-9))
    below = [v for v in LADDER if v < value * (1 - 1e-9)]
    return below[-1] if below else None


def beyond(corpus, pick):
    """The points one step past the grid where ``pick`` sits at its largest lr or smallest decay."""
    lrs = [float(v) for v in corpus.dynamic_lrs.split(",")]
    decays = [float(v) for v in corpus.dynamic_decays.split(",")]
    points = []
    if math.isclose(pick["lr"], max(lrs)):
        points.append((step(pick["lr"], up=True), pick["decay"]))
    if math.isclose(pick["decay"], min(decays)) and pick["decay"] > 0:
        points.append((pick["lr"], step(pick["decay"], up=False)))
    return points


def probe(corpus, name, result, checkpoint, threads):
    row, started = corpus.rows[name], time.time()
    found = {"commit": commit(), "pick": {"lr": result["dynamic"]["lr"], "decay": result["dynamic"]["decay"],
                                          "valid_ppl": result["valid_ppl_dynamic"],
                                          "valid_ppl_both": result["valid_ppl_cache_dynamic"]}, "beyond": []}
    for lr, decay in beyond(corpus, result["dynamic"]):
        record, _ = grid_point(corpus, checkpoint, lr, decay, threads)
        point = {"lr": lr, "decay": decay, "valid_ppl": round(record["dynamic"]["ppl"], 2),
                 "valid_ppl_both": round(record["both"]["ppl"], 2)}
        # a point that beats the pick on valid: what it would give on test
        if point["valid_ppl"] < result["valid_ppl_dynamic"]:
            point["test_ppl"] = eval_lm_ppl(corpus, row, checkpoint, "test",
                                            test_time_flags(row, record["dynamic"], cache=False), threads)
        if point["valid_ppl_both"] < result["valid_ppl_cache_dynamic"]:
            point["both"] = {k: record["both"][k] for k in ("window", "theta", "lambda")}
            point["test_ppl_both"] = eval_lm_ppl(corpus, row, checkpoint, "test",
                                                 test_time_flags(row, record["both"]), threads)
        found["beyond"].append(point)
    found["minutes"] = round((time.time() - started) / 60, 1)
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", choices=list(CORPORA), default="wikitext-2")
    parser.add_argument("--rows", help="comma-separated (default: every finished row with a dynamic pick)")
    parser.add_argument("--save-dir", required=True, help="where table.py saved the rows' checkpoints")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    args = parser.parse_args()
    corpus = CORPORA[args.corpus]
    results = corpus.load()
    names = args.rows.split(",") if args.rows else [n for n in results if "dynamic" in results[n]]
    unready = [n for n in names if "dynamic" not in results.get(n, {})]
    if unready:
        sys.exit(f"rows {unready} have no finished JSON with a dynamic-evaluation pick in {corpus.results}; "
                 "run benchmarks/table.py for them first")
    path = os.path.join(corpus.results, "dynamic-edge.json")
    edge = json.load(open(path)) if os.path.exists(path) else {}
    for name in names:
        checkpoint = os.path.join(args.save_dir, name, "checkpoint_best.pt")
        if name in edge:
            print(f"{name}: done already ({path})", flush=True)
            continue
        if not os.path.exists(checkpoint):
            sys.exit(f"{checkpoint} is missing: pass the --save-dir table.py trained {name} in")
        edge[name] = probe(corpus, name, results[name], checkpoint, args.threads)
        with open(path, "w") as f:  # after each row, so a killed probe keeps the rows it finished
            json.dump(edge, f, indent=1)
        print(f"{name}: " + "; ".join(f"lr {p['lr']:g} decay {p['decay']:g}: valid {p['valid_ppl']:.2f}"
                                      for p in edge[name]["beyond"])
              + f" (the pick: {edge[name]['pick']['valid_ppl']:.2f})", flush=True)


if __name__ == "__main__":
    main()
