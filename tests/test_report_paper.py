"""docs/benchmarks.md's ``ptb-paper`` block (benchmarks/report/ptb_paper.py): the paper-scale rows'
JSON from a results folder of our choosing, the statement worded the same way whichever way the
figures come out, a row cut by the clock named, a row without its JSON given no figure.

Fast: reads and writes JSON only (no fairseq run; the root is conftest.py's)."""

import importlib
import json
import re
from pathlib import Path

import conftest
import pytest

ROOT = Path(conftest.ROOT)
PAPER = "NVIDIA H100 80GB HBM3"


@pytest.fixture
def report():
    return importlib.import_module("benchmarks.report")


def row(valid, test, **more):
    """A paper-scale row's JSON as table.py writes it (paper_ppl: 0.8 of ppl; the test-time options:
    the cache 10%, dynamic evaluation 8%, both 15% below)."""
    figures = {"": 1.0, "_cache": 0.9, "_dynamic": 0.92, "_cache_dynamic": 0.85}
    return {
        **{
            f"{split}_ppl{key}": round(ppl * scale, 2)
            for key, scale in figures.items()
            for split, ppl in (("valid", valid), ("test", test))
        },
        "valid_paper_ppl": round(valid * 0.8, 2),
        "test_paper_ppl": round(test * 0.8, 2),
        "valid_ppl_per_epoch": [valid],
        "params": 2.0e7,
        "train_minutes": 9.6,
        "train_tokens_per_s": 52000,
        "epochs": 20,
        "best_epoch": 20,
        "device": PAPER,
        "recipe": {"epochs": 20},
        "cache": {"window": 2000, "theta": 0.5, "lambda": 0.2},
        "dynamic": {"lr": 1.0, "decay": 0.01},
        "both": {"lr": 0.3, "decay": 0.01},
        "dropout_layout": "each tensor once",
        **more,
    }


def paper_block(report, folder, rows):
    """The block as ``python -m benchmarks.report --paper-results folder`` writes it, ``rows``
    ({name: JSON}) in the folder."""
    folder.mkdir(exist_ok=True)
    for name, result in rows.items():
        (folder / f"{name}.json").write_text(json.dumps(result))
    return report.blocks(paper_results_dir=str(folder), draw=False)["ptb-paper"]


def table_lines(text):
    return [line for line in text.splitlines() if line.startswith("|")]


def test_without_json_the_block_gives_the_commands_and_no_figure(report, tmp_path):
    text = paper_block(report, tmp_path / "none", {})
    paper_rows = [line for line in table_lines(text) if "| 2 x 650" in line]
    assert len(paper_rows) == 15 and all("| not run yet |" in line for line in paper_rows)
    # no figure of ours: the only numbers on those rows are the paper's, in its own column
    numbers = [re.findall(r"\d+\.\d", line.rsplit("|", 2)[0].split("2 x 650", 1)[1]) for line in paper_rows]
    assert numbers == [[]] * 15
    assert (
        "Filled by `bash benchmarks/gpu/run.sh paper` on a lent GPU: with no rows named it trains the queue's next "
        "2 rows without their JSON, in this order (`PAPER_QUEUE` in benchmarks/rows.py; about 10 commands for these;"
    ) in text
    from benchmarks.rows import PAPER_QUEUE  # the rows not run, named in the queue's order

    assert "Not run yet at 2 x 650, so no figures: " + "; ".join(f"`{n}`" for n in PAPER_QUEUE) + "." in text
    assert "(0 of 15 rows, generated from the JSON)" in text and "nothing to compare at the paper's scale yet" in text
    # no standing claimed at 2 x 650 without its rows (the 2 x 200 comparisons read the committed rows)
    assert "full PTB, 2 x 650:" not in text.split("**What it shows")[1]
    assert len({line.count("|") for line in table_lines(text)}) == 1  # every row has the header's columns


def statement_lines(text, corpus_label="full PTB, 2 x 650"):
    """The statement's comparison sentences at one size, by the row and baseline they name."""
    found = {}
    for line in text.split("**What ", 1)[1].splitlines():
        both = "( with the cache and dynamic evaluation)?"
        if m := re.search(rf", {corpus_label}: `([^`]+)` against `([^`]+)`{both} ", line):
            found.setdefault((m.group(1), m.group(2), bool(m.group(3))), line)
    return found


def test_a_change_is_credited_to_the_one_thing_its_rows_differ_in(report, tmp_path):
    """The layer's row and single level, the LSTM 4% behind: the gain is the layer's, the attention is level;
    nothing credits the attention with the layer's gain (single is never set against the LSTM)."""
    rows = {
        "lstm": row(104.0, 100.0),
        "single-zero-context": row(99.84, 96.0),
        "single": row(99.9, 96.1),
        "combined": row(99.0, 90.0),
    }
    lines = statement_lines(paper_block(report, tmp_path / "credit", rows))
    layer = lines[("single-zero-context", "lstm", False)]
    assert layer.startswith("The concat layer alone (`--zero-context`")
    assert "(-4.0% / -4.0%): ahead on valid and test." in layer
    attention = lines[("single", "single-zero-context", False)]
    assert attention.startswith("The attention (single score) on top of the concat layer")
    assert "(+0.1% / +0.1%): level on valid and test." in attention
    assert "level on valid, ahead on test" in lines[("combined", "single", False)]  # -0.9% / -6.3%
    assert ("single", "lstm", False) not in lines and ("combined", "lstm", False) not in lines
    # each with both test-time options, the same steps
    assert "(-4.0% / -4.0%): ahead on valid and test." in lines[("single-zero-context", "lstm", True)]
    behind = statement_lines(paper_block(report, tmp_path / "behind", {**rows, "single": row(105.0, 100.8)}))
    assert "(+5.2% / +5.0%): behind on valid and test." in behind[("single", "single-zero-context", False)]


def test_a_comparison_on_one_seed_says_so_and_seeds_widen_what_counts_as_level(report, tmp_path):
    """One seed on a side: said. Three seeds a side: the means, and level within the larger seed range, so a
    1.6% gap between means whose seeds spread 3.3% is not called apart; the table shows each mean and range."""
    one = statement_lines(
        paper_block(report, tmp_path / "one", {"lstm": row(100.0, 95.0), "single-zero-context": row(96.0, 91.0)})
    )
    assert (
        "One seed for `single-zero-context` and `lstm`; level within 1.00% / 1.00%, the floor of 1%: no seed range is "
        "measured on full PTB, 2 x 650." in one[("single-zero-context", "lstm", False)]
    )
    rows = {
        "lstm": row(100.0, 95.0),
        "lstm-seed2": row(100.0, 95.0),
        "single-zero-context": row(96.0, 91.0),
        "single-zero-context-seed2": row(96.0, 91.0),
        "single": row(96.0, 91.0),
        "single-seed2": row(93.0, 88.0),
        "single-seed3": row(94.5, 89.5),
    }
    text = paper_block(report, tmp_path / "seeds", rows)
    lines = statement_lines(text)
    attention = lines[("single", "single-zero-context", False)]
    assert "94.5 / 89.5 against 96.0 / 91.0 (-1.6% / -1.6%): level on valid and test." in attention
    assert (
        "Means of 3 and 2 seeds; level within 3.17% / 3.35%, the widest seed range measured on full PTB, 2 x 650 "
        "(`single`'s 3 seeds on valid and test)." in attention
    )
    assert (
        "(-4.0% / -4.2%): ahead on valid and test. Means of 2 and 2 seeds"
        in lines[("single-zero-context", "lstm", False)]
    )
    assert "| `single` | 3 | 94.50 (93.00 to 96.00, 3.2%) | 89.50 (88.00 to 91.00, 3.4%) |" in text
    assert "| `lstm` | 2 | 100.00 (100.00 to 100.00, 0.0%) |" in text


def test_a_row_cut_by_the_clock_is_named(report, tmp_path):
    rows = {"lstm": row(100.0, 95.0), "single": row(98.0, 93.0, epochs=14, best_epoch=14, cut_at_epoch=14)}
    text = paper_block(report, tmp_path / "cut", rows)
    assert "| 14/14 (cut after epoch 14 of 20) |" in text
    assert (
        "Cut by the clock, so scored short of the recipe's budget: `attentive_lm_ptb` single after epoch 14 of 20."
    ) in text
    assert "LSTM (ours, `alm_lstm_ptb`) after epoch" not in text  # the row that trained its 20 epochs
    assert "Cut by the clock" not in paper_block(report, tmp_path / "whole", {"lstm": row(100.0, 95.0)})


def test_the_statement_says_whether_the_curves_had_settled(report, tmp_path):
    """The figures are put down to the epoch budget only where the valid curves still fell."""
    flat = [120.0, 110.0, 100.5, 100.45, 100.4, 100.35, 100.3]
    falling = [120.0, 115.0, 110.0, 106.0, 103.0, 101.0, 100.3]
    text = paper_block(
        report,
        tmp_path / "flat",
        {"lstm": row(100.3, 96.0, valid_ppl_per_epoch=flat), "single": row(98.0, 94.0, valid_ppl_per_epoch=flat)},
    )
    assert "-0.20%" in text and "flat (under 0.5%): more epochs of this schedule would not move these figures" in text
    text = paper_block(
        report,
        tmp_path / "falling",
        {"lstm": row(100.3, 96.0, valid_ppl_per_epoch=flat), "single": row(98.0, 94.0, valid_ppl_per_epoch=falling)},
    )
    assert "still falling: the epoch budget sets these figures" in text and "flat (under" not in text


def test_the_stream_rows_stand_beside_the_anchors_one_step_at_a_time(report, tmp_path):
    """The stream rows at 2 x 650 have a block of their own: not in the sentence table; the carried state
    against the sentence LSTM (its seeds' mean), the layer, the attention across sentences and the pointer each
    a step; the anchors as printed; the goal with both test-time options said met or not."""
    rows = {
        "lstm": row(100.0, 95.0),
        "lstm-seed2": row(100.0, 95.0),
        "lstm-stream": row(90.0, 85.5),
        "single-zero-context-stream": row(87.0, 82.0),
        "single-stream": row(86.9, 82.1),
        "ps-lstm-stream": row(80.0, 76.0),
    }
    folder = tmp_path / "streams"
    paper_block(report, folder, rows)
    blocks = report.blocks(paper_results_dir=str(folder), draw=False)
    assert "document streams" not in blocks["ptb-paper"].split("Not run yet")[0]
    text = blocks["ptb-paper-stream"]
    lines = statement_lines(text)
    carried = lines[("lstm-stream", "lstm", False)]
    assert carried.startswith("The LSTM state carried across sentences")
    assert "(-10.0% / -10.0%): ahead on valid and test. One seed for `lstm-stream`" in carried
    assert "level on valid and test" in lines[("single-stream", "single-zero-context-stream", False)]
    assert "ahead on valid and test" in lines[("ps-lstm-stream", "lstm-stream", False)]
    assert "| Pointer Sentinel-LSTM, medium (Merity et al. 2017) | 21M | 70.9 |" in text
    # both options: 0.85 of 76.0 is 64.6
    assert (
        "test <= 65 with the cache and dynamic evaluation (full PTB, 2 x 650, streams): met by `ps-lstm-stream`, 64.6."
        in text
    )
    assert "(4 of 4 stream rows, generated from the JSON)" in text


def test_a_stream_row_trained_before_the_dropout_fix_is_named_not_compared(report, tmp_path):
    rows = {"lstm": row(100.0, 95.0), "lstm-stream": row(90.0, 85.5), "ps-lstm-stream": row(80.0, 76.0)}
    rows["ps-lstm-stream"]["dropout_layout"] = "the old one"
    folder = tmp_path / "old"
    paper_block(report, folder, rows)
    text = report.blocks(paper_results_dir=str(folder), draw=False)["ptb-paper-stream"]
    assert ("lstm-stream", "lstm", False) in statement_lines(text)
    assert ("ps-lstm-stream", "lstm-stream", False) not in statement_lines(text)
    assert "Left out of the comparison until retrained" in text and "‡ trained with the old dropout layout" in text


def test_a_rows_size_is_read_from_its_own_recipe(report, tmp_path):
    """A row's size label is read from its own recipe: 2 x 200 rows given as --paper-results read 2 x 200."""
    small = row(110.0, 105.0, args=["--hidden-size", "200"], recipe={"epochs": 20, "size": "200"})
    lines = table_lines(paper_block(report, tmp_path / "paper", {"lstm": small, "single": row(100.0, 96.0)}))
    ours = [line for line in lines if "| 105.0 " in line or "**105.0**" in line]
    assert ours and all("| 2 x 200, " in line and "2 x 650" not in line for line in ours), ours
    assert any("| 2 x 650, " in line and "**96.0**" in line for line in lines)


def test_each_row_is_said_to_choose_from_its_own_grid_and_its_edges_are_its_own(report, tmp_path):
    """A row whose JSON records no grid chose from the one rows.py declares for them; one that records the wider
    grid is named with it, a pick is at an edge of the row's own grid only (lr 1 is inside the wider), and a
    model whose seeds chose from different grids is named (its seeds' mean mixes them)."""
    wider = {"lr": [0.1, 0.3, 1.0, 3.0], "decay": [0.01]}
    text = paper_block(
        report,
        tmp_path / "grids",
        {
            "lstm": row(90.0, 86.0),  # lr 1 alone, 0.3 with the cache: both ends of lr 0.3, 1
            "single": row(89.0, 85.0),
            "single-seed2": row(89.2, 85.2, dynamic_eval_grid=wider),
            "combined": row(89.5, 85.5, dynamic_eval_grid=wider, dynamic={"lr": 3.0, "decay": 0.01}),
        },
    )
    assert (
        "Dynamic evaluation's grid on valid: SGD lr 0.3, 1 x decay 0.01 for `lstm`, `single`; SGD lr 0.1, 0.3, 1, 3 "
        "x decay 0.01 for `combined`, `single-seed2` and every row scored from here on"
    ) in text
    assert "the wider holds every point of the narrower" in text and "the seeds' mean of `single`." in text
    edges = re.search(r"Picks at an end of their row's grid: (.*?)\. A setting", text).group(1)
    assert edges == (
        "at its largest lr: `lstm`, `single`, `combined`; at its smallest lr: `lstm` with the cache, `single` with "
        "the cache"
    )
    # a grid of two decays: a pick at its largest decay is named as such
    two = {"lr": [0.3, 1.0], "decay": [0.01, 0.03]}
    picked = row(90.0, 86.0, dynamic_eval_grid=two, dynamic={"lr": 0.3, "decay": 0.03})
    text = paper_block(report, tmp_path / "decays", {"lstm": picked})
    assert "at its largest decay: `lstm`" in text and "at its smallest decay: `lstm` with the cache" in text
