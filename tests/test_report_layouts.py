"""The tables while rows are retrained after the dropout fix: benchmarks/report/tables.py marks a row
trained before it, and a statement compares only rows of one layout, naming the rows it leaves out;
benchmarks/table.py retrains such a row from scratch, never from the old weights. Fast: JSON in
memory and empty files only (no fairseq run)."""

import importlib
import os

import pytest


@pytest.fixture
def report():
    return importlib.import_module("benchmarks.report")


def row(test, fixed, **more):
    """A full-PTB sentence row's JSON as table.py writes it; ``fixed``: trained after the dropout fix."""
    return {
        "valid_ppl": test + 4,
        "test_ppl": test,
        "test_paper_ppl": test * 0.8,
        "valid_ppl_per_epoch": [test + 50],
        "epochs": 10,
        "best_epoch": 10,
        "params": 2.7e6,
        "train_minutes": 30,
        "train_tokens_per_s": 5000,
        **({"dropout_layout": "each tensor once"} if fixed else {}),
        **more,
    }


def test_a_row_trained_before_the_fix_is_marked_and_left_out(report):
    results = {
        "lstm": row(100.0, fixed=True),
        "single": row(95.0, fixed=False),
        "combined": row(99.0, fixed=True),
        "fairseq-lstm_lm": row(108.0, fixed=False),
    }
    block = report.ptb_table.block(results)
    lines = {line.split(" | ")[0].lstrip("| "): line for line in block.splitlines() if line.startswith("| ")}
    assert "`attentive_lm` single (Eq. 7 tanh, no b_c) ‡" in lines  # marked
    assert "`attentive_lm` combined (Eq. 10)" in lines and "fairseq `lstm_lm` (tied, cross-check)" in lines
    assert "‡ trained with the old dropout layout" in block
    statement = block.split("**What it shows", 1)[1]
    assert "`combined` against" not in statement  # its baseline, single, is of the other layout: not compared
    assert "95.0" not in statement  # the stale row's figure: not compared, only named
    assert "Left out of the comparison until retrained" in statement and "single (Eq. 7 tanh, no b_c)." in statement
    assert "`fairseq-lstm_lm` against `lstm` (valid / test) 112.0 / 108.0 against 104.0 / 100.0" in statement


def test_a_baseline_trained_before_the_fix_compares_its_own_layout(report):
    results = {"lstm": row(100.0, fixed=False), "single": row(95.0, fixed=False), "combined": row(99.0, fixed=True)}
    results["single-zero-context"] = row(96.0, fixed=False)
    statement = report.ptb_table.block(results).split("**What it shows", 1)[1]
    assert "`single` against `single-zero-context` (valid / test) 99.0 / 95.0 against 100.0 / 96.0" in statement
    assert "stand on rows trained with the old dropout layout" in statement
    assert "until the baseline is retrained" in statement and "`combined` against" not in statement


def test_no_mark_once_every_row_is_retrained(report):
    block = report.ptb_table.block({"lstm": row(100.0, fixed=True), "single": row(95.0, fixed=True)})
    assert "‡" not in block and "Left out" not in block


def test_the_layer_and_the_attention_each_against_its_own_baseline(report):
    results = {
        "lstm": row(100.0, fixed=True),
        "single-zero-context": row(90.0, fixed=True),
        "single": row(90.5, fixed=True),
    }
    statement = report.ptb_table.block(results).split("**What it shows", 1)[1]
    layer, attention = statement.splitlines()[1:3]
    assert layer.startswith("The concat layer alone") and "`single-zero-context` against `lstm`" in layer
    assert "(-9.6% / -10.0%): ahead on valid and test" in layer  # valid 94 against 104
    assert attention.startswith("The attention (single score) on top of the concat layer")
    assert "(+0.5% / +0.6%): level on valid and test" in attention
    assert "`single` against `lstm`" not in statement  # two things: never one step


def test_a_baseline_alone_is_said_to_have_nothing_to_compare_yet(report):
    statement = report.ptb_table.block({"lstm": row(100.0, fixed=True), "single": row(95.0, fixed=False)})
    assert "no row compared with it has finished yet" in statement and ": ." not in statement


def test_a_stale_row_is_retrained_from_scratch_and_a_killed_retraining_resumes(tmp_path):
    """A stale row trains from scratch (its old checkpoint_last.pt is not resumed, so the old layout's weights are
    never scored as the new one), and a killed retraining resumes."""
    from benchmarks.table import set_aside

    save, stale = tmp_path / "single", tmp_path / "single.json"
    save.mkdir()
    (save / "checkpoint_last.pt").write_bytes(b"old weights")
    stale.write_text("{}")
    os.utime(save / "checkpoint_last.pt", (1000, 1000))  # trained, then scored into the JSON
    os.utime(stale, (2000, 2000))
    assert set_aside(str(save), str(stale)) == f"{save}.before-the-dropout-fix" and not save.exists()
    assert (tmp_path / "single.before-the-dropout-fix" / "checkpoint_last.pt").read_bytes() == b"old weights"
    save.mkdir()  # the retraining, killed after an epoch: its checkpoint is newer than the stale JSON
    (save / "checkpoint_last.pt").write_bytes(b"new weights")
    os.utime(save / "checkpoint_last.pt", (3000, 3000))
    assert set_aside(str(save), str(stale)) is None and (save / "checkpoint_last.pt").exists()
    os.utime(save / "checkpoint_last.pt", (1500, 1500))  # another old run: set aside beside the first
    assert set_aside(str(save), str(stale)) == f"{save}.before-the-dropout-fix-2"
    assert set_aside(str(tmp_path / "never-trained"), str(stale)) is None


def test_the_pointers_choices_are_weighed_within_one_layout(monkeypatch):
    """The sentinel-scale and extra-term runs (the PTB stream row's first 3 epochs): the pick and the gaps only
    between runs of one dropout layout, the fixed one once two runs have it, and no pick until the rows' own
    choice is among them."""
    from benchmarks import rows
    from benchmarks.report.wikitext_2_choices import pointer_choice, pointer_loss_note

    def pointer(loss, scale, valid, fixed, gate=(1.0, 1.0, 1.0)):
        args = ["--arch", "pointer_sentinel_lm", "--pointer-loss", loss, "--sentinel-scale", scale]
        return {
            "args": args,
            "valid_ppl_per_epoch": [valid + 40, valid + 20, valid],
            "pointer_gate_per_epoch": gate,
            **({"dropout_layout": "each tensor once"} if fixed else {}),
        }

    assert (
        pointer_choice(rows.PTB.rows["ps-lstm-stream"].args)
        == pointer_choice(rows.WIKITEXT2.rows["ps-lstm-stream"].args)
        == ("off", "0.1")
    )  # what the note says both rows train with
    choices = {
        "sentinel-1": pointer("off", "1", 131.5, True),
        "found": pointer("found", "1", 136.8, False),
        "found-sentinel-0.1": pointer("found", "0.1", 119.2, False, (0.97, 0.97, 0.96)),
    }
    monkeypatch.setattr(rows.Corpus, "load", lambda self, results_dir=None: {} if self is rows.PTB else choices)
    note = pointer_loss_note()
    assert "| found ‡ | 1 |" in note and "| off | 1 |" in note and "left out: `off` at scale 1." in note
    assert "Not weighed within one layout yet" in note and "picks" not in note  # off at 0.1 is not among them

    choices["sentinel-0.1"] = pointer("off", "0.1", 112.0, True, (0.9, 0.9, 0.9))
    note = pointer_loss_note()
    assert (
        "picks `--pointer-loss off --sentinel-scale 0.1` (-14.8% against off at scale 1); the PTB and "
        "WikiText-2 rows train with `--pointer-loss off --sentinel-scale 0.1`." in note
    )
    assert "left out: `found` at scale 1, `found` at scale 0.1." in note

    choices["found-sentinel-0.1"] = pointer("found", "0.1", 110.0, True, (0.95, 0.95, 0.95))  # a pick not the rows'
    note = pointer_loss_note()
    assert (
        "picks `--pointer-loss found --sentinel-scale 0.1` (-16.3% against off at scale 1); the PTB and "
        "WikiText-2 rows train with `--pointer-loss off --sentinel-scale 0.1`, not the pick (-1.8% against "
        "theirs after epoch 3)."
        in note
        and "At full length" not in note
    )

    full = {
        "ps-lstm-stream": {"epochs": 10, "test_ppl": 86.2, "valid_ppl": 87.5, "valid_pointer_gate": 0.843},
        "ps-lstm-stream-found": {"epochs": 10, "test_ppl": 84.0, "valid_ppl": 85.5, "valid_pointer_gate": 0.95},
    }
    full = {name: {**r, "dropout_layout": "each tensor once"} for name, r in full.items()}
    monkeypatch.setattr(rows.Corpus, "load", lambda self, results_dir=None: full if self is rows.PTB else choices)
    assert (
        "`found` against `off`, both at 0.1: test 84.0 against 86.2 (-2.6%), valid -2.3%, the gate 0.950 against "
        "0.843: ahead on valid, ahead on test (one seed for `ps-lstm-stream-found` and `ps-lstm-stream`)."
        in pointer_loss_note()
    )


def test_the_attention_across_sentences_is_set_against_the_stream_lstm():
    """WikiText-2's statement: the stream LSTM against the sentence LSTM (carried state), and the row whose
    attention spans sentences against the stream LSTM as two things at once (no row separates its layer)."""
    from benchmarks.report.wikitext_2 import statement

    def row(ppl):
        return {"test_ppl": ppl, "valid_ppl": ppl + 5, "train_minutes": 30, "epochs": 4}

    results = {"lstm": row(124.0), "lstm-stream": row(113.6)}
    assert "`lstm-stream` against `lstm` (valid / test) 118.6 / 113.6 against 129.0 / 124.0 (-8.1% / -8.4%)" in (
        statement(results)
    )
    results["single-stream"] = row(115.4)
    assert (
        "Two things at once, which no row separates (the concat layer; attention across sentence boundaries "
        "(`--memory-window 100`)), WikiText-2, 2 x 200: `single-stream` against `lstm-stream` (valid / test) "
        "120.4 / 115.4 against 118.6 / 113.6 (+1.5% / +1.6%): behind on valid and test, credited to no one of "
        "them alone." in statement(results)
    )
