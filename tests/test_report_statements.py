"""The report's statements follow the figures: the short answer, the WikiText-2 and character statements,
the cache rows' copy lists. Fast: JSON only, no fairseq run."""

import json
from pathlib import Path

import conftest
from conftest import benchmarks_module

ROOT = Path(conftest.ROOT)


def test_the_short_answer_follows_the_figures(monkeypatch):
    """Each step of the short answer says what its two rows show: the layer's gain credited to the layer, the
    attention level when its row is level with the layer's, a step whose rows have not run said so."""
    short_answer = benchmarks_module("report").short_answer
    from benchmarks import rows

    def row(test):
        return {"valid_ppl": test + 3, "test_ppl": test, "dropout_layout": "each tensor once"}

    figures = {
        "ptb-paper": {
            "lstm": row(100.0),
            "lstm-seed2": row(100.4),
            "single-zero-context": row(96.0),
            "single": row(95.9),
        },
        "ptb": {},
        "wikitext-2": {"lstm": row(120.0), "single": row(126.0)},
    }
    monkeypatch.setattr(rows.Corpus, "load", lambda self, results_dir=None: figures[self.name])
    text = short_answer.text()
    assert "the concat layer alone (`single-zero-context` against `lstm`): ahead on test (-4.2%, one seed" in text
    assert "the attention on top of it (`single` against `single-zero-context`): level on test (-0.1%" in text
    assert "On PTB, 2 x 200: the concat layer alone (`single-zero-context` against `lstm`) has not run yet" in text
    wikitext = "(`single` against `lstm`): behind on test (+5.0%, one seed for `single` and `lstm`; level within 1.00%"
    assert wikitext in text
    table = short_answer.table()
    assert "| PTB, 2 x 650 | the concat layer alone | `single-zero-context` against `lstm` | -4.2% | 1 + 2 |" in table
    assert "| 1.00%, the floor (seeds span 0.40%) | ahead |" in table


def test_wikitext2_statement_states_the_goals_from_the_figures():
    """The generated WikiText-2 statement: each goal's verdict follows the numbers (met / not met),
    and a result against attention is said as plainly as one for it."""
    wt2_statement = benchmarks_module("report").wikitext_2.statement

    def row(test, **more):
        return {
            "valid_ppl": test + 3,
            "test_ppl": test,
            "params": 5e6,
            "train_minutes": 100,
            "epochs": 4,
            **more,
        }

    results = {
        "lstm": row(120.0),
        "single": row(121.0),
        "lstm-stream": row(100.0, test_ppl_cache=70.0, test_ppl_dynamic=80.0, test_ppl_cache_dynamic=65.0),
        "ps-lstm-stream": row(95.0, test_ppl_cache=80.0, test_ppl_dynamic=78.0, test_ppl_cache_dynamic=69.0),
        "fairseq-lstm_lm": row(104.0),
    }
    text = wt2_statement(results)
    assert (
        "Two things at once, which no row separates (the concat layer; the attention (single score)), WikiText-2, "
        "2 x 200: `single` against `lstm` (valid / test) 124.0 / 121.0 against 123.0 / 120.0 (+0.8% / +0.8%): level "
        "on valid and test." in text
    )
    assert "The neural cache (settings chosen on valid): LSTM (ours, `alm_lstm`), document streams -30.0%" in text
    assert "(1 of 2 stream rows)" in text and "Goal >= 25% below each stream row's test ppl: not met" in text
    assert "Goal >= 15% below each stream row's test ppl: met (2 of 2 stream rows)" in text
    assert "The Pointer Sentinel-LSTM's goal, >= 10% ahead of the stream LSTM on test (-5.0%): not met." in text
    assert (
        "with the cache and dynamic evaluation, test 65.0 (-45.8% against the sentence-level LSTM; goal >= 40% "
        "below: met)" in text
    )
    assert "our stream LSTM's goal is to be at or ahead on test (+4.0% for the peer): met." in text
    results["single"] = row(100.0)
    assert "(-16.3% / -16.7%): ahead on valid and test, credited to no one of them alone." in wt2_statement(results)
    # a pick at the grid's strongest adaptation is flagged (lr 1 of 0.3, 1), one inside it is not
    results["lstm-stream"].update(
        dynamic={"lr": 1.0, "decay": 0.03}, valid_ppl_dynamic=90.0, valid_ppl_cache_dynamic=70.0
    )
    results["ps-lstm-stream"].update(dynamic={"lr": 0.3, "decay": 0.03}, valid_ppl_dynamic=92.0)
    text = wt2_statement(results)
    assert "for LSTM (ours, `alm_lstm`), document streams (the largest lr)." in text
    assert text.count("the largest lr") == 1 and "the smallest decay" not in text
    assert "Not tried beyond the grid yet for LSTM (ours, `alm_lstm`), document streams: " in text
    # grid_edge.py's probe: a step beyond that loses on valid lets the pick stand
    picks = benchmarks_module("grid_edge").picks
    point = {"lr": 3.0, "decay": 0.03, "valid_ppl_dynamic": 95.0, "valid_ppl_cache_dynamic": 72.0}
    probe = {"lstm-stream": {"picks": picks(results["lstm-stream"]), "beyond": [point]}}
    text = wt2_statement(results, probe)
    assert "document streams: lr 3 decay 0.03 95.0 / 72.0 against the picks' 90.0 / 70.0." in text
    assert "for LSTM (ours, `alm_lstm`), document streams: their grid picks stand." in text
    assert "Not tried beyond" not in text
    # a step that wins on valid but not on test is said as such; a row probed for other picks is not probed
    point.update(valid_ppl_dynamic=88.0, dynamic={"lr": 3.0, "decay": 0.03}, test_ppl_dynamic=82.0)
    text = wt2_statement(results, probe)
    assert (
        "**A step beyond wins on valid** (one step was tried; further is untried): LSTM (ours, "
        "`alm_lstm`), document streams at lr 3 decay 0.03: valid "
        "88.0 against 90.0, test 82.0 against the table's 80.0 (+2.5%, **not better on test**)." in text
    )
    assert "picks stand" not in text
    results["ps-lstm-stream"].update(
        dynamic={"lr": 1.0, "decay": 0.03}, valid_ppl_dynamic=92.0, valid_ppl_cache_dynamic=71.0
    )
    probe["ps-lstm-stream"] = {"picks": {"dynamic": {"lr": 0.3, "decay": 0.03, "valid_ppl": 92.0}}, "beyond": []}
    assert "Not tried beyond the grid yet for Pointer Sentinel-LSTM" in wt2_statement(results, probe)


def test_character_statement_follows_the_figures():
    """The generated character-model statement: each claim's verdict follows the bpc (better / not
    better, the WikiText-2-against-PTB claim holds or not), and a row not finished is named with the
    command that runs it, never as a table row."""
    char_tables = benchmarks_module("report").char_tables

    def row(bpc):
        return {
            "valid_bpc": bpc + 0.02,
            "test_bpc": bpc,
            "valid_ppl": 300.0,
            "test_ppl": 290.0,
            "best_epoch": 6,
            "epochs": 6,
            "params": 1.6e6,
            "train_minutes": 80,
        }

    results = {
        "PTB": {"char-lstm": row(1.60), "hclm": row(1.50), "hclm-cache": row(1.48)},
        "WikiText-2": {"hclm": row(1.90), "hclm-cache": row(1.92)},
    }
    text = char_tables.statement(results)
    assert "(5 of 6 rows, generated from the JSON)" in text
    assert "HCLM against the character LSTM: PTB test 1.5000 against 1.6000 bpc (-6.2%; the paper -4.1%)" in text
    assert (
        "word ppl 290.0 against 290.0: ahead on PTB (no character row has a second seed: ahead or behind past" in text
    )
    assert "WikiText-2 test 1.9200 against 1.9000 bpc (+1.1%; the paper -10.2%)" in text
    assert ": ahead on PTB; behind on WikiText-2 (no character row" in text
    assert "here +1.1% against -1.3% (the paper -10.2% against -2.3%): **it does not hold here**." in text
    results["PTB"]["hclm-cache"] = row(1.55)  # the cache worse on both, less so on WikiText-2: no gain to compare
    text = char_tables.statement(results)
    assert ": behind on PTB and WikiText-2 (no character row" in text and "+1.1% against +3.3%" in text
    assert "**it does not hold here**" in text
    results["WikiText-2"]["hclm-cache"], results["PTB"]["hclm-cache"] = row(1.70), row(1.48)
    assert "-10.5% against -1.3% (the paper -10.2% against -2.3%): it holds here." in char_tables.statement(results)
    assert (
        "Not in the tables yet, queued: WikiText-2 char-lstm (`python -m benchmarks.table --corpus "
        "wikitext-2-chars --rows char-lstm --threads 1`)"
    ) in text
    results["PTB"]["hclm"]["bpc_per_epoch"] = [1.60, 1.55, 1.52]
    assert (
        "Valid bpc was still falling in the last epoch (its change from the one before) for PTB HCLM (`hclm`) "
        "(-0.0300): the epoch budget"
    ) in char_tables.statement(results)
    table = char_tables.table(char_tables.CORPORA["WikiText-2"], results["WikiText-2"])
    assert "char LSTM" not in table and table.count("\n") == 3


def test_the_cache_rows_copy_lists_come_from_their_json(monkeypatch):
    """row_scoring.py asks alm-cache-posterior for the cache row's lists (Table 7 and Table 8's rare-in-train
    filter) and keeps them in the row's JSON; the docs show them side by side, a shorter list ending in
    blank cells, with corpus words that markdown would eat (``<unk>``, ``|``) escaped."""
    scoring = benchmarks_module("row_scoring")
    char_tables = benchmarks_module("report").char_tables
    from benchmarks.row_commands import CPU
    from benchmarks.rows import WIKITEXT2_CHARS

    def validate(tool, *args, threads=None):  # a model with a cache logs its use
        split = args[args.index("--valid-subset") + 1]
        cache = {f"{split}_cache_use": "0.1"} if "cache" in args[args.index("--path") + 1] else {}
        return f"| {split} | " + json.dumps({f"{split}_bpc": "1.5", f"{split}_ppl": "250.0", **cache})

    monkeypatch.setattr(scoring, "fairseq", validate)
    asked = []
    tables = [
        {
            "title": "every",
            "types": 900,
            "copied": [["<unk>", 0.9, 30], ["Gore", 0.8, 4]],
            "spelled": [["17", 0.0, 5], ["a|b", 0.01, 2]],
        },
        {"title": "rare", "types": 40, "copied": [["Nerva", 0.97, 3]], "spelled": [["440", 0.005, 2]]},
    ]
    monkeypatch.setattr(
        scoring,
        "plugin_tool",
        lambda module, *args, json_out, threads: (
            asked.append((module, args))
            or {"mean_posterior": 0.12, "bpc": 1.5, "rare_in_train": 5, "tables": tables, "words": 10}
        ),
    )
    result = scoring.evaluate(WIKITEXT2_CHARS, WIKITEXT2_CHARS.rows["hclm-cache"], "cache/checkpoint_best.pt", 1, CPU)
    module, args = asked[0]
    assert module == "cache_posterior" and args[args.index("--rare-in-train") + 1] == "5"
    assert args[args.index("--gen-subset") + 1] == "test" and result["test_cache_posterior"]["tables"] == tables
    assert "test_cache_posterior" not in scoring.evaluate(
        WIKITEXT2_CHARS, WIKITEXT2_CHARS.rows["hclm"], "hclm/checkpoint_best.pt", 1, CPU
    )
    text = char_tables.copy_lists("WikiText-2", result["test_cache_posterior"])
    rows = text.split("|---" * 12 + "|\n")[1].splitlines()
    assert rows[:2] == [
        "| &lt;unk&gt; | 0.900 | 30 | 17 | 0.000 | 5 | Nerva | 0.970 | 3 | 440 | 0.005 | 2 |",
        "| Gore | 0.800 | 4 | a\\|b | 0.010 | 2 |  |  |  |  |  |  |",
    ]
    assert "(900 repeated types)" in text and "< 5 in train (40 types)" in text and "mean over every word 0.120" in text
    assert char_tables.markdown_text("a|b") == "a\\|b"
