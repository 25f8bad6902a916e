"""The translation-pairs block and the rescoring answer, generated from planted records: which methods
beat beam 5, which language model each column names, and when a language model is flagged still falling."""

import json

import pytest

from benchmarks.report import tables, translation_pairs


def lm_record(arch, curve):
    return {
        "lm_arch": arch,
        "train_sentences": 29000,
        "epochs": len(curve),
        "valid_ppl": curve[-1],
        "test_ppl": curve[-1],
        "valid_ppl_by_epoch": curve,
        "commit": "abc1234",
        "argv": ["--language-model", arch],
    }


def scored(bleu, p):
    return {"bleu": bleu, "bootstrap_mean": bleu, "ci95": 0.5, "p_value": p}


def pairs_record(pairs, methods):
    return {
        "parallel_pairs": pairs,
        "argv": ["--parallel-pairs", str(pairs)],
        "test_bleu_beam5": {"bleu": 20.0, "ci95": 0.5},
        "nbest": 50,
        "test_oracle_bleu": 30.0,
        "methods": methods,
    }


@pytest.fixture
def planted(tmp_path, monkeypatch):
    """``plant(name, record)`` writes ``benchmarks/results/multi30k/<name>`` under a temporary folder the
    report reads."""
    folder = tmp_path / "multi30k"
    folder.mkdir()
    monkeypatch.setattr(tables, "RESULTS", str(tmp_path))
    monkeypatch.setattr(translation_pairs, "RESULTS", str(tmp_path))

    def plant(name, record):
        (folder / name).write_text(json.dumps(record))

    return plant


METHODS = {
    # on test the first LM gains more, but valid prefers the second: the columns follow valid
    "rescore:alm_lstm_small": {"valid_bleu": 21.0, "test": scored(22.5, 0.001)},
    "rescore:attentive_lm_small": {"valid_bleu": 21.5, "test": scored(20.4, 0.2)},
    "channel": {"valid_bleu": 20.5, "test": scored(19.0, 0.01)},
    "noisy_channel": {"valid_bleu": 22.0, "lm_arch": "attentive_lm_small", "test": scored(21.7, 0.003)},
    "fusion:alm_lstm_small": {"valid_bleu": 20.1, "weight": 0.1, "test": scored(20.3, 0.3)},
}


def test_the_answer_names_the_language_model_best_on_valid_not_on_test(planted):
    planted("pairs-2000.json", pairs_record(2000, METHODS))
    lines = translation_pairs.answer().splitlines()
    assert lines[2] == (
        "| 2,000 | 20.00 | +1.70, p 0.003 | +0.40, p 0.200 (`attentive_lm_small`) | not run "
        "| +0.30, p 0.300 (`alm_lstm_small`) |"
    )


def test_the_answer_lists_the_sizes_in_order_and_says_when_nothing_ran(planted):
    assert translation_pairs.answer().startswith("Not measured yet")
    planted("pairs-5000.json", pairs_record(5000, METHODS))
    planted("pairs-2000.json", pairs_record(2000, METHODS))
    assert [line.split(" | ")[0] for line in translation_pairs.answer().splitlines()[2:]] == ["| 2,000", "| 5,000"]


def test_only_a_gain_beyond_the_bootstrap_beats_beam_5(planted):
    row = pairs_record(2000, METHODS)
    beat = translation_pairs.winners(row)
    # a gain at p 0.001 and 0.003 beats it; a gain at p 0.2 does not, nor a loss at p 0.01
    assert beat == [translation_pairs.METHODS["rescore:alm_lstm_small"], translation_pairs.METHODS["noisy_channel"]]
    planted("pairs-2000.json", row)
    planted("lm-alm_lstm_small.json", lm_record("alm_lstm_small", [60.0, 50.0]))
    text = translation_pairs.block(draw_picture=False)
    assert "**22.50** ± 0.50 (+2.50, p 0.001)" in text and "**20.40**" not in text and "**19.00**" not in text
    assert "At 2,000 pairs 2 methods beat beam 5 beyond the bootstrap (p < 0.05): rescored, `alm_lstm_small`; " in text


def test_fusion_at_weight_0_is_beam_5_itself_whatever_its_p(planted):
    """sacrebleu gives two identical outputs a p of 1 / (samples + 1): no gain, and never a winner."""
    methods = {**METHODS, "fusion:amsrn_small": {"valid_bleu": 20.0, "weight": 0.0, "test": scored(20.0, 0.001)}}
    methods["fusion:alm_lstm_small"] = {"valid_bleu": 19.0, "weight": 0.0, "test": scored(20.0, 0.001)}
    row = pairs_record(2000, methods)
    assert translation_pairs.METHODS["fusion:amsrn_small"] not in translation_pairs.winners(row)
    planted("pairs-2000.json", row)
    text = translation_pairs.block(draw_picture=False)
    assert "20.00 (weight 0 on valid: beam 5 itself)" in text
    assert translation_pairs.answer().splitlines()[2].endswith("| weight 0 on valid (`amsrn_small`) |")


def test_a_language_model_still_falling_is_flagged_and_a_flat_one_is_not(planted):
    planted("lm-alm_lstm_small.json", lm_record("alm_lstm_small", [60.0, 50.0]))
    planted("lm-amsrn_small.json", lm_record("amsrn_small", [40.0, 39.9]))
    planted("pairs-2000.json", pairs_record(2000, METHODS))
    text = translation_pairs.block(draw_picture=False)
    assert "60.0 -> 50.0, still falling" in text and "40.0 -> 39.9, flat" in text
    assert "`alm_lstm_small` was still improving at the last epoch" in text and "`amsrn_small` was" not in text


def test_the_length_reward_alone_separates_the_language_models_share_where_a_row_ran_it(planted):
    """The LM best on valid, against TM and Len alone: its test BLEU beyond them, at the sizes that reranked
    with Len alone; the others are named as not separated."""
    planted("pairs-2000.json", pairs_record(2000, METHODS))
    planted(
        "pairs-5000.json", pairs_record(5000, {**METHODS, "length": {"valid_bleu": 20.8, "test": scored(20.1, 0.4)}})
    )
    text = translation_pairs.block(draw_picture=False)
    assert (
        "At 5,000 pairs TM and Len alone give +0.10, p 0.400, and the LM best on valid (`attentive_lm_small`) +0.30"
        in text
    )
    assert "the row at 2,000 pairs did not rerank with Len alone" in text
    assert "| rescored, TM and the length reward alone | not run | 20.10 ± 0.50 (+0.10, p 0.400) |" in text
    assert translation_pairs.answer().splitlines()[3].split(" | ")[4] == "+0.10, p 0.400"
