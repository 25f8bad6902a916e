"""One step beyond dynamic evaluation's grid, where a row's pick sits at its edge.

Where ``table.py``'s pick on valid (alone or with the cache) is the grid's largest lr or smallest decay, this
runs ``alm-cache-grid`` on valid one step further on the 1-3-10 ladder (each direction in turn) and scores test
where a point beats the pick on valid, into ``benchmarks/results/<corpus>/dynamic-edge.json`` a row at a time
(a finished row skipped, one whose picks changed since probed again):

    python -m benchmarks.grid_edge --corpus wikitext-2 --rows lstm,lstm-stream --threads 1 --save-dir /work/ckpt/wt2
"""

import argparse
import json
import math
import os
import sys
import time

from benchmarks.fairseq_runs import commit
from benchmarks.result_files import write_json
from benchmarks.row_commands import CPU
from benchmarks.row_scoring import eval_lm_ppl, grid_point, test_time_flags
from benchmarks.rows import CORPORA

LADDER = sorted(round(m * 10.0**k, 8) for k in range(-5, 4) for m in (1, 3))  # 1e-5, 3e-5, ..., 1000, 3000
KINDS = (
    ("dynamic", "valid_ppl_dynamic", "test_ppl_dynamic"),  # (pick, the row's valid key, its test key)
    ("both", "valid_ppl_cache_dynamic", "test_ppl_cache_dynamic"),
)


def step(value, up):
    """The next value on the 1-3-10 ladder above (``up``) or below ``value``; None past its ends."""
    beyond = [v for v in LADDER if (v > value * (1 + 1e-9) if up else v < value * (1 - 1e-9))]
    return (beyond[0] if up else beyond[-1]) if beyond else None


def edge_sides(grid, pick, both_ends=False):
    """Where ``pick`` sits at an end of ``grid`` (``(lrs, decays)``): "lr" (its largest), "decay" (its smallest),
    the strongest adaptation; with ``both_ends`` also "lr-low" (its smallest lr) and "decay-high" (its largest
    decay), the weakest, where the grid has more than one value."""
    lrs, decays = grid
    ends = [("lr", math.isclose(pick["lr"], max(lrs))), ("decay", math.isclose(pick["decay"], min(decays)))]
    if both_ends:
        ends += [
            ("lr-low", len(lrs) > 1 and math.isclose(pick["lr"], min(lrs))),
            ("decay-high", len(decays) > 1 and math.isclose(pick["decay"], max(decays))),
        ]
    return [side for side, hit in ends if hit]


def beyond(grid, pick):
    """The points one step past ``grid`` where ``pick`` sits at its strongest adaptation (decay 0 has none below)."""
    further = {
        "lr": (step(pick["lr"], up=True), pick["decay"]),
        "decay": (pick["lr"], step(pick["decay"], up=False) if pick["decay"] > 0 else None),
    }
    return [further[side] for side in edge_sides(grid, pick) if None not in further[side]]


def picks(result):
    """A row's picks on valid, dynamic evaluation alone and with the cache: what a probe answers to."""
    return {
        kind: {"lr": result[kind]["lr"], "decay": result[kind]["decay"], "valid_ppl": result[valid]}
        for kind, valid, _ in KINDS
        if kind in result
    }


def points_to_probe(corpus, result):
    """The union of the steps beyond each pick, in order."""
    grid = corpus.dynamic_grid(result)
    return list(dict.fromkeys(p for pick in picks(result).values() for p in beyond(grid, pick)))


def probe(corpus, name, result, checkpoint, threads):
    row, started = corpus.rows[name], time.time()
    found = {"commit": commit(), "picks": picks(result), "beyond": []}
    for lr, decay in points_to_probe(corpus, result):
        record, _ = grid_point(corpus, checkpoint, lr, decay, threads, CPU)
        point = {"lr": lr, "decay": decay}
        for kind, valid, _ in KINDS:
            point[valid] = round(record[kind]["ppl"], 2)
            # a point that beats the row's pick on valid: what it would give on test
            if kind in result and point[valid] < result[valid]:
                point[kind] = {k: v for k, v in record[kind].items() if k != "ppl"}
                flags = test_time_flags(row, record[kind], cache=kind == "both")
                point[f"test_ppl_{kind}"] = eval_lm_ppl(corpus, row, checkpoint, "test", flags, threads, CPU)
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
    if unknown := [n for n in names if n not in corpus.rows]:
        sys.exit(f"unknown rows {unknown} for --corpus {corpus.name}; choose from {', '.join(corpus.rows)}")
    if unready := [n for n in names if "dynamic" not in results.get(n, {})]:
        sys.exit(
            f"rows {unready} have no finished JSON with a dynamic-evaluation pick in {corpus.results}; "
            "run benchmarks/table.py for them first"
        )
    path = os.path.join(corpus.results, "dynamic-edge.json")
    edge = json.load(open(path)) if os.path.exists(path) else {}
    for name in names:
        checkpoint = os.path.join(args.save_dir, name, "checkpoint_best.pt")
        if not points_to_probe(corpus, results[name]):
            print(f"{name}: its picks sit inside the grid, nothing to probe", flush=True)
            continue
        if edge.get(name, {}).get("picks") == picks(results[name]):
            print(f"{name}: done already ({path})", flush=True)
            continue
        if not os.path.exists(checkpoint):
            sys.exit(f"{checkpoint} is missing: pass the --save-dir table.py trained {name} in")
        edge[name] = probe(corpus, name, results[name], checkpoint, args.threads)
        write_json(path, edge)  # after each row, so a killed probe keeps the rows it finished
        print(
            f"{name}: "
            + "; ".join(
                f"lr {p['lr']:g} decay {p['decay']:g}: valid {p['valid_ppl_dynamic']:.2f}, "
                f"with the cache {p['valid_ppl_cache_dynamic']:.2f}"
                for p in edge[name]["beyond"]
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
