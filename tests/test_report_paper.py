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
    assert len(paper_rows) == 7 and all("| not run yet |" in line for line in paper_rows)
    # no figure of ours: the only numbers on those rows are the paper's, in its own column
    assert [re.findall(r"\d+\.\d", line.rsplit("|", 2)[0].split("2 x 650", 1)[1]) for line in paper_rows] == [[]] * 7
    assert (
        "`bash benchmarks/gpu/run.sh paper lstm single`, then `bash benchmarks/gpu/run.sh paper combined "
        "single-zero-context`, then `bash benchmarks/gpu/run.sh paper lstm-seed2 single-zero-context-seed2`"
    ) in text
    assert "(0 of 7 rows, generated from the JSON)" in text and "nothing to compare at the paper's scale yet" in text
    # no standing claimed at 2 x 650 without its rows (the 2 x 200 comparison below reads the committed rows)
    at_paper_scale = text.split("At 2 x 200")[0]
    assert not any(word in at_paper_scale for word in ("ahead on", "behind on", "level on"))
    assert len({line.count("|") for line in table_lines(text)}) == 1  # every row has the header's columns


def test_the_statement_says_ahead_or_behind_as_the_figures_fall(report, tmp_path):
    """Attention 5% below the LSTM is ahead, 5% above behind, within 1% level: the same sentence each way."""
    lstm = row(100.0, 95.0)
    text = paper_block(
        report, tmp_path / "mixed", {"lstm": lstm, "single": row(95.0, 90.25), "combined": row(100.5, 99.75)}
    )
    assert (
        "Attention against the same-code LSTM at 2 x 650 (valid / test ppl): the LSTM 100.0 / 95.0; "
        "`attentive_lm_ptb` single 95.0 / 90.2 (-5.0% / -5.0%): ahead on valid and test; "
        "`attentive_lm_ptb` combined 100.5 / 99.8 (+0.5% / +5.0%): level on valid, behind on test."
    ) in text
    assert "(3 of 7 rows, generated from the JSON)" in text
    assert "Not run yet at 2 x 650, so no figures: `attentive_lm_ptb` single, context zeroed" in text
    # the test-time options, each and both, and attention against the LSTM with both
    assert (
        "LSTM (ours, `alm_lstm_ptb`) 95.0: the cache -10.0% (85.5), dynamic evaluation -8.0% (87.4), both -15.0% (80.8)"
    ) in text
    assert (
        "With both, attention against the same-code LSTM (valid / test): the LSTM 85.0 / 80.8; "
        "`attentive_lm_ptb` single 80.8 / 76.7 (-5.0% / -5.0%): ahead on valid and test;" in text
    )
    # the paper's figures beside paper_ppl, its count: single 76.0 / 72.2 against 71.7 / 70.1
    assert "`attentive_lm_ptb` single 76.0 / 72.2 against 71.7 / 70.1 (+6.0% / +3.0%)" in text
    assert f"| 2 x 650, {PAPER} | 95.0 | **90.2** | 76.0 / 72.2 | 81.2 | 83.0 | 76.7 | 20/20 |" in text

    text = paper_block(report, tmp_path / "behind", {"lstm": lstm, "single": row(105.0, 99.75)})
    assert "`attentive_lm_ptb` single 105.0 / 99.8 (+5.0% / +5.0%): behind on valid and test." in text
    assert "ahead on" not in text.split("At 2 x 200")[0]
    assert "Filled by `bash benchmarks/gpu/run.sh paper combined single-zero-context`, then" in text


def test_a_second_seed_stands_beside_the_first_and_the_layer_is_weighed_on_the_means(report, tmp_path):
    """Seed 2's rows beside seed 1's with the change between them, and the layer and the attention apart on
    the two seeds' means, level within the seeds' largest change: a gain of the attention that one seed
    showed (3%) and the other did not is not claimed from a mean 1.6% apart."""
    rows = {
        "lstm": row(100.0, 95.0),
        "single-zero-context": row(96.0, 91.0),
        "single": row(96.0, 91.0),
        "lstm-seed2": row(100.0, 95.0),
        "single-zero-context-seed2": row(96.0, 91.0),
        "single-seed2": row(93.0, 88.0),
    }
    text = paper_block(report, tmp_path / "seeds", rows)
    assert (
        "A second seed (`--seed 2`; valid / test ppl, seed 1 then seed 2): LSTM (ours, `alm_lstm_ptb`) "
        "100.0 / 95.0, 100.0 / 95.0 (+0.0% / +0.0%);"
    ) in text
    assert (
        "`attentive_lm_ptb` single 96.0 / 91.0, 93.0 / 88.0 (-3.1% / -3.3%). Seeds move a row's ppl by up to 3.3%."
        in text
    )
    assert (
        "On the two seeds' means, level within 3.3%: the layer and the attention apart: `attentive_lm_ptb` single, "
        "context zeroed: the layer without the attention against the LSTM (valid / test): 96.0 / 91.0 against "
        "100.0 / 95.0 (-4.0% / -4.2%): ahead on valid and test; the attention on top of the layer (single against "
        "the context-zeroed row): 94.5 / 89.5 (-1.6% / -1.6%): level on valid and test."
    ) in text
    assert "A second seed" not in paper_block(report, tmp_path / "one", {"lstm": row(100.0, 95.0)})


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
