"""The benchmark driver: rows and comparisons as data, the table's resumes, the grids a row's scoring runs,
the grid-edge probe and the translation record. Fast: no fairseq run."""

import json
import os
import subprocess
import sys
from pathlib import Path

import conftest
import pytest
from conftest import benchmarks_module

ROOT = Path(conftest.ROOT)


def test_the_translation_record_reads_what_the_example_prints():
    """benchmarks.translation records the figures multi30k.sh, alm-rescore and shallow_fusion.sh print, each
    where the script prints it; the block states the changes from those figures."""
    from benchmarks.report import translation as block

    example = (
        "BLEU, beam 5:\n40.95\n"
        "tuned on runs/x/valid.nbest10.txt: BLEU 41.63 -> 42.10\nweights: TM=1,LM=0.15,Len=1.5\n"
        "runs/x/test.nbest10.txt: BLEU 41.03 (system 1-best) -> 41.82 (rescored)\n"
    )
    fusion = "valid, lm-weight 0: BLEU 41.59\nvalid, lm-weight 0.05: BLEU 41.70\ntest, lm-weight 0.05: BLEU 41.29\n"
    record = benchmarks_module("translation").figures(example, fusion)
    assert record["test_bleu_beam5"] == 40.95 and record["test_bleu_beam10_1best"] == 41.03
    assert record["rescoring"] == {
        "weights": {"TM": 1.0, "LM": 0.15, "Len": 1.5},
        "valid_bleu_before": 41.63,
        "valid_bleu_after": 42.10,
        "test_bleu": 41.82,
    }
    assert record["fusion"] == {"valid_bleu_by_weight": {"0": 41.59, "0.05": 41.70}, "weight": 0.05, "test_bleu": 41.29}
    text = block.record(
        {
            **record,
            "arch": "attentive_nmt_small",
            "lm_arch": "amsrn_small",
            "valid_ppl": 5.24,
            "lm_valid_ppl": 37.5,
            "commit": "abc1234",
            "device": "cpu, 1 thread(s)",
            "example_minutes": 60,
            "fusion_minutes": 9,
        }
    )
    assert "+0.79 on the 1-best of beam 10" in text and "+0.34 on beam 5" in text
    with pytest.raises(SystemExit, match="no fusion test BLEU"):
        benchmarks_module("translation").figures(example, "valid, lm-weight 0: BLEU 41.59\n")


def test_every_declared_comparison_names_rows_its_corpus_has():
    """A comparison whose corpus or row is misspelt would never be stated (its rows never run): each names a
    corpus of rows.py with a label, two of its rows, and what differs."""
    from benchmarks.comparisons import COMPARISONS
    from benchmarks.rows import CORPORA

    for c in COMPARISONS:
        corpus = CORPORA[c.corpus]
        assert corpus.label and {c.baseline, c.row} <= set(corpus.rows) and c.baseline != c.row, c
        assert c.things and all(thing.strip() for thing in c.things), c
    assert len({(c.corpus, c.baseline, c.row) for c in COMPARISONS}) == len(COMPARISONS)


def test_benchmarks_import_no_cycle():
    """benchmarks/ modules import each other downwards only (rows -> table/report, timing -> speed
    scripts), each as ``benchmarks.NAME``. A package (report/, gpu/) counts as one module, its files'
    imports together (their imports of one another stay inside it)."""
    import ast

    files = {p.parent.name: sorted(p.parent.glob("*.py")) for p in (ROOT / "benchmarks").glob("*/__init__.py")}
    files.update({p.stem: [p] for p in (ROOT / "benchmarks").glob("*.py") if p.stem not in files})
    imports = {}
    for name, paths in files.items():
        found = set()
        for tree in (ast.parse(path.read_text(encoding="utf-8")) for path in paths):
            found |= {
                a.name.split(".")[1]
                for n in ast.walk(tree)
                if isinstance(n, ast.Import)
                for a in n.names
                if a.name.startswith("benchmarks.")
            }
            found |= {
                n.module.split(".")[1]
                for n in ast.walk(tree)
                if isinstance(n, ast.ImportFrom) and n.module and n.module.startswith("benchmarks.")
            }
        imports[name] = (found & set(files)) - {name}
    assert "report" in imports and imports["report"] >= {"rows", "grid_edge"}  # the package, read as one

    def reaches(start, goal, seen=()):
        return any(n == goal or (n not in seen and reaches(n, goal, (*seen, n))) for n in imports[start])

    cycles = sorted(name for name in files if reaches(name, name))
    assert not cycles, f"import cycle through benchmarks/{cycles}"


def test_grid_edge_probes_one_step_beyond_and_scores_test_only_for_a_winner(monkeypatch):
    """benchmarks/grid_edge.py: the points one ladder step past the grid's edge (none inside it), for
    either pick, and test is read only where a point beats that pick on valid, with its own flags."""
    edge = benchmarks_module("grid_edge")
    from benchmarks.rows import WIKITEXT2  # lr 0.3, 1 x decay 0.01, 0.03

    assert edge.beyond(WIKITEXT2.declared_grid, {"lr": 1.0, "decay": 0.01}) == [(3.0, 0.01), (1.0, 0.003)]
    assert edge.beyond(WIKITEXT2.declared_grid, {"lr": 1.0, "decay": 0.03}) == [(3.0, 0.03)]
    assert edge.beyond(WIKITEXT2.declared_grid, {"lr": 0.3, "decay": 0.03}) == []
    assert edge.step(3000.0, up=True) is None and edge.step(0.001, up=False) == 0.0003
    row = {
        "dynamic": {"lr": 1.0, "decay": 0.03},
        "both": {"lr": 0.3, "decay": 0.01},
        "valid_ppl_dynamic": 90.0,
        "valid_ppl_cache_dynamic": 81.0,
    }
    assert edge.points_to_probe(WIKITEXT2, row) == [(3.0, 0.03), (0.3, 0.003)]  # each pick's own step
    valid = {(3.0, 0.03): (95.0, 80.0), (0.3, 0.003): (88.0, 82.0)}  # (alone, with the cache) on valid
    monkeypatch.setattr(
        edge,
        "grid_point",
        lambda corpus, checkpoint, lr, decay, threads, device: (
            {
                "dynamic": {"lr": lr, "decay": decay, "ppl": valid[lr, decay][0], "segment": 20},
                "both": {
                    "lr": lr,
                    "decay": decay,
                    "ppl": valid[lr, decay][1],
                    "segment": 20,
                    "window": 2000,
                    "theta": 0.7,
                    "lambda": 0.3,
                },
            },
            0,
        ),
    )
    scored = []
    monkeypatch.setattr(
        edge,
        "eval_lm_ppl",
        lambda corpus, row, checkpoint, split, flags, threads, device: scored.append((split, flags)) or 70.0,
    )
    found = edge.probe(WIKITEXT2, "lstm-stream", row, "checkpoint_best.pt", 1)
    up, down = found["beyond"]
    assert "test_ppl_dynamic" not in up and up["test_ppl_both"] == 70.0  # 80 < 81 with the cache only
    assert down["test_ppl_dynamic"] == 70.0 and "test_ppl_both" not in down  # 88 < 90 alone only
    assert scored == [
        (
            "test",
            [
                "--dynamic-eval-lr",
                "3.0",
                "--dynamic-eval-decay",
                "0.03",
                "--dynamic-eval-segment",
                "20",
                "--neural-cache-window",
                "2000",
                "--neural-cache-theta",
                "0.7",
                "--neural-cache-lambda",
                "0.3",
            ],
        ),
        ("test", ["--dynamic-eval-lr", "0.3", "--dynamic-eval-decay", "0.003", "--dynamic-eval-segment", "20"]),
    ]
    assert found["picks"] == {
        "dynamic": {"lr": 1.0, "decay": 0.03, "valid_ppl": 90.0},
        "both": {"lr": 0.3, "decay": 0.01, "valid_ppl": 81.0},
    }


def test_grid_edge_refuses_an_unknown_row():

    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.grid_edge", "--rows", "lstm-strem", "--save-dir", "nowhere"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert (
        proc.returncode == 1 and "unknown rows ['lstm-strem'] for --corpus wikitext-2; choose from lstm," in proc.stderr
    )


def test_test_time_flags_of_each_choice(monkeypatch):
    """row_scoring.py scores test with each choice's eval-lm flags: the cache's, dynamic evaluation's (a stream
    row steps every segment, a sentence row every sentence) and both (dynamic's, then the cache's)."""
    scoring = benchmarks_module("row_scoring")
    from benchmarks.row_commands import CPU
    from benchmarks.rows import WIKITEXT2

    cache = {"window": 500, "theta": 0.3, "lambda": 0.1}
    chosen = {
        **cache,
        "ppl_with_cache": 80.0,
        "dynamic": {"lr": 1.0, "decay": 0.01, "segment": 20, "ppl": 85.0},
        "both": {"lr": 0.3, "decay": 0.03, "segment": 20, "ppl": 75.0, "window": 2000, "theta": 1.0, "lambda": 0.2},
    }
    monkeypatch.setattr(scoring, "combine_grid", lambda points: (chosen, 0))
    scored = []
    monkeypatch.setattr(
        scoring,
        "eval_lm_ppl",
        lambda corpus, row, checkpoint, split, flags, threads, device: scored.append((split, flags)) or 70.0,
    )
    result = scoring.evaluate_test_time(WIKITEXT2, WIKITEXT2.rows["lstm-stream"], "checkpoint_best.pt", [], 1, CPU)
    cache_flags = ["--neural-cache-window", "500", "--neural-cache-theta", "0.3", "--neural-cache-lambda", "0.1"]
    # valid is not read again: its figures with each option are the grid's
    assert scored[0] == ("test", cache_flags) and [s for s, _ in scored] == ["test"] * 3
    assert result["valid_ppl_cache"] == 80.0 and result["valid_ppl_dynamic"] == 85.0
    assert result["test_ppl_cache_dynamic"] == 70.0 and result["valid_ppl_cache_dynamic"] == 75.0
    assert result["dynamic_eval_grid"] == {"lr": [0.3, 1.0], "decay": [0.01, 0.03]}  # the grid it chose from
    flags = [f for _, f in scored]
    assert flags[1:] == [
        ["--dynamic-eval-lr", "1.0", "--dynamic-eval-decay", "0.01", "--dynamic-eval-segment", "20"],
        [
            "--dynamic-eval-lr",
            "0.3",
            "--dynamic-eval-decay",
            "0.03",
            "--dynamic-eval-segment",
            "20",
            "--neural-cache-window",
            "2000",
            "--neural-cache-theta",
            "1.0",
            "--neural-cache-lambda",
            "0.2",
        ],
    ]
    scoring.evaluate_test_time(WIKITEXT2, WIKITEXT2.rows["lstm"], "checkpoint_best.pt", [], 1, CPU)  # a sentence row
    assert scored[5][1] == [
        "--dynamic-eval-lr",
        "0.3",
        "--dynamic-eval-decay",
        "0.03",
        "--neural-cache-window",
        "2000",
        "--neural-cache-theta",
        "1.0",
        "--neural-cache-lambda",
        "0.2",
    ]


def test_a_second_seeds_row_trains_its_twin_with_another_seed(monkeypatch, tmp_path):
    """ptb-paper's seed rows: the twin's arguments, fairseq-train's --seed (its last) 2 and 3."""
    table = benchmarks_module("table")
    from benchmarks.row_commands import CPU
    from benchmarks.rows import PTB_PAPER

    trained = []
    monkeypatch.setattr(table, "fairseq", lambda tool, *args, **kwargs: trained.append(list(args)))
    for name in ("single", "single-seed2", "single-seed3"):
        table.train_row(PTB_PAPER, PTB_PAPER.rows[name], str(tmp_path), 1, str(tmp_path / "log"), 20, CPU)
    seeds = [args[len(args) - args[::-1].index("--seed")] for args in trained]  # the value after the last --seed
    assert seeds == ["1", "2", "3"]
    assert PTB_PAPER.rows["single-seed3"].args == PTB_PAPER.rows["single"].args


def test_table_takes_the_streams_from_the_corpus():
    """table.py trains a corpus's stream and character rows on its own number of streams (the
    paper's 25 on PTB, 10 on WikiText-2, 20 for the word streams) and scores every one as one stream."""
    from benchmarks.row_commands import CPU, task_args
    from benchmarks.rows import PTB, PTB_CHARS, WIKITEXT2_CHARS

    def batch(corpus, row, training):
        return task_args(corpus, corpus.rows[row], training, CPU)[
            task_args(corpus, corpus.rows[row], training, CPU).index("--batch-size") + 1
        ]

    assert [batch(PTB_CHARS, "hclm", True), batch(WIKITEXT2_CHARS, "hclm", True), batch(PTB, "lstm-stream", True)] == [
        "25",
        "10",
        "20",
    ]
    assert {batch(PTB_CHARS, "hclm-cache", False), batch(PTB, "lstm-stream", False)} == {"1"}


def test_a_killed_row_resumes_after_its_finished_grid(tmp_path):
    """benchmarks/row_scoring.py reuses a row's finished alm-cache-grid choice only if it read the current
    checkpoint (written after it) with the windows and dynamic points asked for now."""

    finished_grid = benchmarks_module("row_scoring").finished_grid
    checkpoint, grid = tmp_path / "checkpoint_best.pt", tmp_path / "cache_grid.json"
    checkpoint.write_bytes(b"weights")
    record = {
        "split": "valid",
        "grid": [{"window": w, "theta": 0.1, "lambda": 0.1, "ppl": 90.0} for w in (100, 500)],
        "dynamic_grid": [{"lr": lr, "decay": 0.01, "ppl": 85.0} for lr in (0.3, 1.0)],
    }
    grid.write_text(json.dumps(record))
    os.utime(checkpoint, (1, 1))  # the checkpoint is older than the grid
    assert finished_grid(grid, checkpoint, [100.0, 500.0], [0.3, 1.0], [0.01]) == record
    assert finished_grid(grid, checkpoint, [100.0, 500.0, 2000.0], [0.3, 1.0], [0.01]) is None  # other windows
    assert finished_grid(grid, checkpoint, [100.0, 500.0], [0.3, 1.0], [0.01, 0.03]) is None  # other points
    assert finished_grid(tmp_path / "none.json", checkpoint, [100.0, 500.0], [0.3, 1.0], [0.01]) is None
    os.utime(checkpoint, None)
    os.utime(grid, (1, 1))  # trained again after the grid ran
    assert finished_grid(grid, checkpoint, [100.0, 500.0], [0.3, 1.0], [0.01]) is None


def test_a_killed_grid_resumes_after_its_finished_points(monkeypatch, tmp_path):
    """row_scoring.py runs alm-cache-grid once per learning rate where it has room: a row killed in its grid
    reruns only the runs without a finished JSON, and the choices combine as one grid's (the best point wins)."""
    import dataclasses
    import subprocess

    scoring = benchmarks_module("row_scoring")
    from benchmarks.row_commands import CPU
    from benchmarks.rows import WIKITEXT2

    corpus = dataclasses.replace(WIKITEXT2, cache_windows="100,500", dynamic_lrs="0.3,1", dynamic_decays="0.01")
    checkpoint = tmp_path / "checkpoint_best.pt"
    checkpoint.write_bytes(b"weights")
    os.utime(checkpoint, (1, 1))

    def record(lr, ppl):
        return {
            "split": "valid",
            "window": 500,
            "theta": 0.3,
            "lambda": 0.1,
            "ppl_with_cache": 80.0,
            "grid": [{"window": w, "theta": 0.3, "lambda": 0.1, "ppl": 80.0} for w in (100, 500)],
            "dynamic_grid": [{"lr": lr, "decay": 0.01, "ppl": ppl}],
            "dynamic": {"lr": lr, "decay": 0.01, "ppl": ppl},
            "both": {"lr": lr, "decay": 0.01, "ppl": ppl - 5},
        }

    (tmp_path / "cache_grid_lr0.3_decay0.01.json").write_text(json.dumps(record(0.3, 70.0)))  # finished before a kill
    ran = []

    def fake_grid(command, **kwargs):
        lr = float(command[command.index("--dynamic-lrs") + 1])
        ran.append(lr)
        with open(command[command.index("--json") + 1], "w") as f:
            json.dump(record(lr, 60.0), f)
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(scoring.subprocess, "run", fake_grid)
    chosen, reused = scoring.combine_grid(
        [scoring.grid_run(corpus, str(checkpoint), *run, 1, CPU) for run in scoring.grid_runs(corpus, 2)]
    )
    assert ran == [1.0] and reused == 1
    assert chosen["dynamic"]["lr"] == 1.0 and chosen["both"]["ppl"] == 55.0 and chosen["window"] == 500
    assert [p["lr"] for p in chosen["dynamic_grid"]] == [0.3, 1.0]


def test_the_grid_runs_as_many_alm_cache_grid_runs_as_there_is_room_for(monkeypatch, tmp_path):
    """row_scoring.py splits the grid's learning rates over the scoring commands left beside the static ones
    (at least one run, each with every decay), and a run of several points is resumed as one."""
    import dataclasses
    import subprocess

    scoring = benchmarks_module("row_scoring")
    from benchmarks.row_commands import CPU
    from benchmarks.rows import PTB_PAPER, WIKITEXT2

    assert scoring.grid_runs(PTB_PAPER, 5) == [([lr], [0.01]) for lr in (0.1, 0.3, 1.0, 3.0)]
    assert scoring.grid_runs(PTB_PAPER, 2) == [([0.1, 0.3], [0.01]), ([1.0, 3.0], [0.01])]
    assert scoring.grid_runs(PTB_PAPER, -1) == [([0.1, 0.3, 1.0, 3.0], [0.01])]  # the dry run's 2 jobs
    assert scoring.grid_runs(WIKITEXT2, 3) == [([0.3], [0.01, 0.03]), ([1.0], [0.01, 0.03])]
    corpus = dataclasses.replace(WIKITEXT2, cache_windows="100", dynamic_lrs="0.3,1", dynamic_decays="0.01")
    checkpoint = tmp_path / "checkpoint_best.pt"
    checkpoint.write_bytes(b"weights")
    os.utime(checkpoint, (1, 1))
    ran = []

    def fake_grid(command, **kwargs):
        ran.append(command[command.index("--dynamic-lrs") + 1])
        points = [{"lr": float(lr), "decay": 0.01, "ppl": 60.0} for lr in ran[-1].split(",")]
        with open(command[command.index("--json") + 1], "w") as f:
            json.dump({"split": "valid", "grid": [{"window": 100}], "dynamic_grid": points}, f)
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(scoring.subprocess, "run", fake_grid)
    assert scoring.grid_run(corpus, str(checkpoint), [0.3, 1.0], [0.01], 1, CPU)[1] == 0
    assert ran == ["0.3,1"] and (tmp_path / "cache_grid_lr0.3-1_decay0.01.json").exists()
    assert scoring.grid_run(corpus, str(checkpoint), [0.3, 1.0], [0.01], 1, CPU)[1] == 2  # both points found
    assert ran == ["0.3,1"]
