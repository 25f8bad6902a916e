"""alm-rescore's reading of n-best lists and references: every malformed line is named, ids
are never paired silently, the weights grid search finds the better weights."""

import pytest
from fairseq.data import Dictionary

from alm_plugin.cli.nbest import Hypothesis, NBestError, group_by_sentence, read_nbest, read_references
from alm_plugin.cli.rescore import add_lm_features, best, system_best
from alm_plugin.cli.text_forms import TextForms
from alm_plugin.cli.tuning import BleuTable, tune

FAIRSEQ_OUTPUT = """2026-11-22 10:00:00 | INFO | fairseq_cli.generate | loading model(s)
S-1\tein hund .
T-1\ta dog .
H-1\t-0.5\ta dog .
D-1\t-0.5\ta dog.
P-1\t-0.1 -0.2 -0.9 -0.8
H-1\t-0.9\tthe dog
D-1\t-0.9\tthe dog
P-1\t-1.0 -1.5 -0.2
S-0\teine katze .
H-0\t-1.2\t
D-0\t-1.2\t
P-0\t-1.2
Generate test with beam=2: BLEU4 = 10.00
"""


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_reads_fairseq_generate_output(tmp_path):
    hyps = read_nbest(write(tmp_path, "gen.txt", FAIRSEQ_OUTPUT))
    groups = group_by_sentence(hyps)
    assert list(groups) == [0, 1]
    assert [h.text for h in groups[1]] == ["a dog .", "the dog"]
    assert groups[1][0].features["TM"] == pytest.approx(-2.0)  # the sum of the P- scores
    assert groups[0][0].text == "" and groups[0][0].features["TM"] == pytest.approx(-1.2)
    assert groups[1][1].line == 7


def test_reads_moses_nbest(tmp_path):
    text = (
        "0 ||| a cat ||| TM0= -1 -2 LM0= -3 ||| -4.5\n"
        "0 ||| cat ||| TM0= -2 -2 LM0= -2 ||| -5\n"
        "1 ||| ||| TM0= 0 0 LM0= -9 ||| -9\n"
    )
    groups = group_by_sentence(read_nbest(write(tmp_path, "moses.txt", text)))
    assert [h.features["TM"] for h in groups[0]] == [-4.5, -5.0]
    assert groups[0][0].extra_features == "TM0= -1 -2 LM0= -3"
    assert groups[1][0].text == ""


MOSES = "0 ||| a cat ||| TM0= -1 -2 ||| -4.5\n0 ||| cat ||| TM0= -2 -2 ||| -5\n1 ||| a dog ||| TM0= 0 0 ||| -9\n"


@pytest.mark.parametrize("text", [FAIRSEQ_OUTPUT, MOSES], ids=["fairseq", "moses"])
@pytest.mark.parametrize("form", ["crlf", "cr", "bom"])
def test_lines_end_at_cr_lf_or_cr_and_a_byte_order_mark_is_dropped(tmp_path, text, form):
    """A list that went through Windows reads as the same list: no CR is left in a hypothesis
    (it would be written to --output-nbest and --output-1best)."""
    changed = {"crlf": text.replace("\n", "\r\n"), "cr": text.replace("\n", "\r"), "bom": "\ufeff" + text}[form]
    expected = read_nbest(write(tmp_path, "lf.txt", text))
    read = read_nbest(write(tmp_path, "changed.txt", changed))
    assert [(h.sentence_id, h.text, h.line, h.features) for h in read] == [
        (h.sentence_id, h.text, h.line, h.features) for h in expected
    ]
    references = "a cat.\na dog.\n"
    changed = {
        "crlf": references.replace("\n", "\r\n"),
        "cr": references.replace("\n", "\r"),
        "bom": "\ufeff" + references,
    }[form]
    assert read_references(write(tmp_path, "ref.txt", changed), group_by_sentence(read), "nbest") == [
        "a cat.",
        "a dog.",
    ]


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "0 ||| a cat ||| TM0= -1 ||| -4.5\n1 ||| a dog ||| -3\n",
            r"moses.txt:2: a Moses n-best line has 4 fields .* got 3",
        ),
        ("x ||| a cat ||| TM0= -1 ||| -4.5\n", r"moses.txt:1: the sentence id must be a number, got 'x'"),
        ("0 ||| a cat ||| TM0= -1 ||| high\n", r"moses.txt:1: the total score must be a number, got 'high'"),
        ("0 ||| a cat ||| TM0= abc ||| -1\n", r"moses.txt:1: a feature value .* got 'abc'"),
        ("0 ||| a cat ||| TM0= -1 ||| inf\n", r"moses.txt:1: the total score is 'inf': no score is \+inf"),
    ],
)
def test_malformed_moses_lines_are_named(tmp_path, text, message):
    with pytest.raises(NBestError, match=message):
        read_nbest(write(tmp_path, "moses.txt", text))


@pytest.mark.parametrize(
    "text, message",
    [
        ("S-0\tx\nH-0\t-1.0\n", r"gen.txt:2: an H- line has 3 tab-separated fields .* got 2"),
        ("H-0\tbad\ta b\n", r"gen.txt:1: the hypothesis score must be a number, got 'bad'"),
        ("H-0\t-1\ta b\nP-0\t-0.5 nan?\n", r"gen.txt:2: a positional score must be a number"),
        ("H-0\tinf\ta b\n", r"gen.txt:1: the hypothesis score is 'inf': no score is \+inf"),
        ("H-0\t-1\ta b\nP-0\t-0.5 -0.5 +Infinity\n", r"gen.txt:2: a positional score is '\+Infinity'"),
        ("H-0\t-1\ta b\nP-1\t-0.5 -0.5\n", r"gen.txt:2: P-1 does not follow its H-1 line"),
        ("H-x\t-1\ta b\n", r"gen.txt:1: an H- line must be 'H-<id><TAB>...'"),
        ("H-0\t-1\ta b\nP-0\t-1 -1 -1\nH-0\t-2\tb\n", r"1 of 2 H- lines have no P- line"),
        ("nothing here\n", r"no hypotheses found"),
    ],
)
def test_malformed_fairseq_lines_are_named(tmp_path, text, message):
    with pytest.raises(NBestError, match=message):
        read_nbest(write(tmp_path, "gen.txt", text))


def test_ids_that_do_not_line_up_with_the_references_are_reported(tmp_path):
    groups = group_by_sentence(read_nbest(write(tmp_path, "gen.txt", FAIRSEQ_OUTPUT)))
    assert read_references(write(tmp_path, "ok.en", "a cat.\na dog.\n"), groups, "gen.txt") == ["a cat.", "a dog."]
    with pytest.raises(NBestError, match=r"1 reference lines have no hypotheses \(ids 2\)"):
        read_references(write(tmp_path, "long.en", "a\nb\nc\n"), groups, "gen.txt")
    with pytest.raises(NBestError, match=r"1 ids have no reference line \(ids 1\)"):
        read_references(write(tmp_path, "short.en", "a\n"), groups, "gen.txt")


class CountingScorer:
    """A stand-in LM that scores each token it is given -1 bit and records how many it scored."""

    def __init__(self):
        self.dictionary = Dictionary()
        for word in "a dog the cat".split():
            self.dictionary.add_symbol(word)
        self.scored = []

    def encode(self, text):
        return self.dictionary.encode_line(text, add_if_not_exist=False, append_eos=True).long()

    def sentence_log2_probs(self, texts):
        counts = [len(self.encode(text)) for text in texts]
        self.scored += counts
        return [-float(n) for n in counts]


def test_the_length_feature_counts_the_tokens_the_lm_scored_with_the_end_of_sentence(tmp_path):
    groups = group_by_sentence(read_nbest(write(tmp_path, "gen.txt", FAIRSEQ_OUTPUT)))
    scorer = CountingScorer()
    with_unk = add_lm_features(groups, scorer, TextForms("en"), "tok", "tok")
    hypotheses = [h for group in groups.values() for h in group]
    assert [h.text for h in hypotheses] == ["", "a dog .", "the dog"]
    assert [h.features["Len"] for h in hypotheses] == [1.0, 4.0, 3.0] == scorer.scored  # </s> counted
    assert [h.features["LM"] for h in hypotheses] == [-1.0, -4.0, -3.0]
    assert with_unk == 1  # '.' is not in the LM's dictionary


def short_output_groups():
    """Two sentences where the translation model prefers a short wrong output and the LM the right one."""
    references = ["a small dog runs .", "two cats sleep ."]
    groups = {}
    for i, (good, bad) in enumerate([("a small dog runs .", "a dog"), ("two cats sleep .", "cats")]):
        groups[i] = [
            Hypothesis(i, bad, 1, {"TM": -1.0, "LM": -20.0, "Len": 3.0}, raw=bad),
            Hypothesis(i, good, 2, {"TM": -2.0, "LM": -10.0, "Len": 6.0}, raw=good),
        ]
    return groups, references


def test_grid_search_finds_the_weight_that_picks_the_better_hypotheses():
    groups, references = short_output_groups()
    assert [h.text for h in system_best(groups).values()] == ["a dog", "cats"]
    table = BleuTable(groups, references, ["TM", "LM", "Len"])
    start = {"TM": 1.0, "LM": 0.0, "Len": 0.0}
    weights, bleu, trials = tune(table, start, {"LM": [0.0, 0.05, 0.2, 1.0], "Len": [0.0]}, "grid", 0, 0, 1)
    assert weights["LM"] == 0.2 and bleu == pytest.approx(100.0)  # the smallest weight that flips both
    assert len(trials) == 5 and trials[0] == (start, table.system())  # the start, then every grid point
    assert [h.text for h in best(groups, weights).values()] == references


def test_the_table_bleu_is_sacrebleus_corpus_bleu():
    import sacrebleu

    groups, references = short_output_groups()
    table = BleuTable(groups, references, ["TM", "LM", "Len"])
    for weights in ({"TM": 1.0}, {"TM": 1.0, "LM": 0.2}, {"TM": 1.0, "Len": 1.0}):
        chosen = best(groups, weights)
        expected = sacrebleu.corpus_bleu([chosen[i].raw for i in range(2)], [references]).score
        assert table.score(weights) == pytest.approx(expected)


@pytest.mark.parametrize("tuner", ["random", "coordinate"])
def test_random_search_and_coordinate_ascent_find_the_better_weights_and_repeat(tuner):
    groups, references = short_output_groups()
    table = BleuTable(groups, references, ["TM", "LM", "Len"])
    ranges = {"LM": [0.0, 0.5, 1.0], "Len": [-1.0, 0.0, 1.0]}
    start = {"TM": 1.0, "LM": 0.0, "Len": 0.0}
    first = tune(table, start, ranges, tuner, 50, 7, 3)
    assert first[1] == pytest.approx(100.0) and first == tune(table, start, ranges, tuner, 50, 7, 3)
    assert all(ranges[n][0] <= w[n] <= ranges[n][-1] for w, _ in first[2] for n in ranges)


@pytest.mark.parametrize("reward, chosen", [("1", "the cat sat"), ("-1", "a cat")])
def test_length_only_reranks_by_tm_and_the_length_reward_alone(tmp_path, reward, chosen):
    """alm-rescore --length-only: each sentence's 1-best maximises TM + w * Len (tokens and </s>), no model read."""
    from cli import run_module

    # TM -1.5 and Len 4 against TM -2.0 and Len 3
    text = "H-0\t-1.5\tthe cat sat\nP-0\t-0.5 -0.5 -0.25 -0.25\nH-0\t-2.0\ta cat\nP-0\t-1.0 -0.5 -0.5\n"
    nbest = write(tmp_path, "in.nbest", text)
    out = tmp_path / "best.txt"
    command = ["--nbest", nbest, "--length-only", "--hyp-form", "tok", "--lm-form", "tok", "--output-form", "tok"]
    command += ["--output-1best", out]
    code, stdout, stderr = run_module("alm_plugin.cli.rescore", *command, "--weights", f"TM=1,Len={reward}")
    assert code == 0, stderr
    assert out.read_text() == chosen + "\n" and "TM and the length reward Len alone" in stdout
    code, _, stderr = run_module("alm_plugin.cli.rescore", *command, "--lm", "checkpoint.pt")
    assert code == 2 and "--length-only reranks without a language model" in stderr
