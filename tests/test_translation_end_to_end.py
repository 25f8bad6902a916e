"""Translation with our decoders through fairseq's own commands, n-best rescoring with our
LMs, and shallow fusion (--lm-path), on a small synthetic word-for-word corpus (built here,
so the test needs nothing outside the project)."""

import json
import math
import os
import random
import re
import runpy
import shutil
import subprocess
import sys

import pytest
import torch
from cli import json_records, run, run_module
from conftest import ROOT, needs_shared_data
from test_prepare_data import _PreprocessInProcess

from alm_plugin.cli.nbest import group_by_sentence, read_nbest
from alm_plugin.cli.scoring import LanguageModelScorer

LEXICON = {
    "der": "the",
    "hund": "dog",
    "katze": "cat",
    "sieht": "sees",
    "ein": "a",
    "kleiner": "small",
    "roten": "red",
    "ball": "ball",
    "und": "and",
    "rennt": "runs",
    "schnell": "fast",
    "mann": "man",
}
NMT = [
    "--user-dir",
    "alm_plugin",
    "--task",
    "translation",
    "--source-lang",
    "de",
    "--target-lang",
    "en",
    "--cpu",
    "--required-batch-size-multiple",
    "1",
]  # else fairseq drops a last batch not a multiple of 8
TRAIN = [
    "--log-format",
    "json",
    "--log-interval",
    "10",
    "--no-progress-bar",
    "--num-workers",
    "0",
    "--seed",
    "1",
    "--optimizer",
    "adam",
    "--clip-norm",
    "1",
    "--no-epoch-checkpoints",
]


def sentence_pairs(n, seed):
    rng = random.Random(seed)
    words = list(LEXICON)
    for _ in range(n):
        source = [rng.choice(words) for _ in range(rng.randint(2, 7))]
        yield " ".join(source), " ".join(LEXICON[w] for w in source)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Translation data (with dict.txt = dict.en.txt for --lm-path) and the English side."""
    root = tmp_path_factory.mktemp("corpus")
    text = root / "text"
    text.mkdir()
    for split, n in (("train", 600), ("valid", 40), ("test", 30)):
        pairs = list(sentence_pairs(n, seed=len(split)))
        (text / f"{split}.de").write_text("".join(de + "\n" for de, _ in pairs))
        (text / f"{split}.en").write_text("".join(en + "\n" for _, en in pairs))
    prefixes = [f"--{s}pref" if i % 2 == 0 else text / s for s in ("train", "valid", "test") for i in range(2)]
    run("preprocess", "--source-lang", "de", "--target-lang", "en", *prefixes, "--destdir", root / "nmt")
    shutil.copyfile(root / "nmt" / "dict.en.txt", root / "nmt" / "dict.txt")
    en = [f"--{s}pref" if i % 2 == 0 else f"{text / s}.en" for s in ("train", "valid", "test") for i in range(2)]
    run("preprocess", "--only-source", "--srcdict", root / "nmt" / "dict.en.txt", *en, "--destdir", root / "lm")
    return root


@pytest.fixture(scope="module")
def nmt(corpus):
    save = corpus / "ckpt-nmt"
    _, output = run(
        "train",
        corpus / "nmt",
        *NMT,
        *TRAIN,
        "--arch",
        "attentive_nmt_small",
        "--embed-dim",
        "32",
        "--hidden-size",
        "32",
        "--encoder-embed-dim",
        "32",
        "--encoder-hidden-size",
        "32",
        "--dropout",
        "0.1",
        "--encoder-dropout",
        "0.1",
        "--lr",
        "0.01",
        "--max-tokens",
        "800",
        "--max-update",
        "150",
        "--criterion",
        "label_smoothed_cross_entropy",
        "--label-smoothing",
        "0.1",
        "--save-dir",
        save,
    )
    return save / "checkpoint_best.pt", output


@pytest.fixture(scope="module")
def lm(corpus):
    save = corpus / "ckpt-lm"
    run(
        "train",
        corpus / "lm",
        "--user-dir",
        "alm_plugin",
        "--task",
        "sentence_language_modeling",
        "--cpu",
        *TRAIN,
        "--arch",
        "amsrn_small",
        "--embed-dim",
        "32",
        "--hidden-size",
        "32",
        "--lr",
        "0.01",
        "--batch-size",
        "32",
        "--max-update",
        "40",
        "--criterion",
        "attention_cross_entropy",
        "--save-dir",
        save,
    )
    return save


@pytest.fixture(scope="module")
def channel(corpus):
    """The channel model of noisy-channel reranking: English -> German on the same data-bin."""
    save = corpus / "ckpt-channel"
    reverse = [{"de": "en", "en": "de"}.get(option, option) for option in NMT]
    run(
        "train",
        corpus / "nmt",
        *reverse,
        *TRAIN,
        "--arch",
        "attentive_nmt_small",
        *("--embed-dim", "16", "--hidden-size", "16", "--encoder-embed-dim", "16", "--encoder-hidden-size", "16"),
        *("--lr", "0.01", "--max-tokens", "800", "--max-update", "40", "--save-dir", save),
    )
    return save / "checkpoint_best.pt"


def test_translation_model_learns(nmt):
    _, output = nmt
    losses = [float(r["loss"]) for r in json_records(output, "train_inner")]
    assert losses[-1] < losses[0] - 2.0, losses
    assert float(json_records(output, "valid")[-1]["valid_ppl"]) < 3.0  # word-for-word: easy


def test_generate_beam_nbest_and_alignment(corpus, nmt, tmp_path):
    checkpoint, _ = nmt
    _, output = run(
        "generate",
        corpus / "nmt",
        *NMT,
        "--path",
        checkpoint,
        "--gen-subset",
        "test",
        "--beam",
        "4",
        "--nbest",
        "3",
        "--print-alignment",
        "--batch-size",
        "7",
    )
    groups = group_by_sentence(read_nbest(str(_write(tmp_path / "gen.txt", output))))
    assert list(groups) == list(range(30)) and all(len(g) == 3 for g in groups.values())
    alignments = [line for line in output.splitlines() if line.startswith("A-")]
    assert len(alignments) == 90
    # word-for-word data: the best hypothesis has one word per source word, aligned in order
    first = next(line for line in alignments if line.startswith("A-0\t"))
    pairs = [tuple(map(int, p.split("-"))) for p in first.split("\t")[1].split()]
    assert all(s == t for s, t in pairs[:2]), first
    bleu = float(re.search(r"BLEU4 = ([\d.]+)", output).group(1))
    assert bleu > 50, output[-1500:]


def test_interactive_translates_typed_sentences(corpus, nmt, tmp_path):
    checkpoint, _ = nmt
    source = _write(tmp_path / "input.de", "der hund sieht ein katze\nkleiner mann rennt\n")
    _, output = run("interactive", corpus / "nmt", *NMT, "--path", checkpoint, "--input", source, "--beam", "3")
    hyps = [line.split("\t")[2] for line in output.splitlines() if line.startswith("H-")]
    assert hyps == ["the dog sees a cat", "small man runs"], output[-1500:]


def test_lm_scores_are_the_hand_computed_log2_probabilities(corpus, lm):
    scorer = LanguageModelScorer([str(lm / "checkpoint_best.pt")], str(corpus / "lm"), use_cpu=True, batch_tokens=12)
    sentences = ["the dog sees a cat", "", "zebra quokka", "a small red ball and a man runs fast", "the"]
    scores = scorer.sentence_log2_probs(sentences)
    model = scorer.models[0]
    for sentence, score in zip(sentences, scores):
        target = scorer.encode(sentence)
        source = torch.cat([target.new([scorer.dictionary.eos()]), target[:-1]])
        with torch.no_grad():
            log_probs = model.get_normalized_probs(model(source[None]), log_probs=True)[0]
        expected = sum(float(log_probs[t, w]) for t, w in enumerate(target)) / math.log(2)
        assert score == pytest.approx(expected, abs=1e-4)
    assert all(math.isfinite(s) for s in scores)  # empty and all-unknown hypotheses included
    ensemble = LanguageModelScorer([str(lm / "checkpoint_best.pt")] * 2, str(corpus / "lm"), True, 4000)
    assert ensemble.sentence_log2_probs(sentences) == pytest.approx(scores, abs=1e-4)


def test_rescore_command_tunes_reranks_and_writes(corpus, nmt, lm, tmp_path):
    checkpoint, _ = nmt
    _, output = run(
        "generate",
        corpus / "nmt",
        *NMT,
        "--path",
        checkpoint,
        "--gen-subset",
        "test",
        "--beam",
        "5",
        "--nbest",
        "5",
        "--batch-size",
        "16",
    )
    nbest = _write(tmp_path / "test.nbest", output)
    command = [
        "--nbest",
        nbest,
        "--lm",
        lm / "checkpoint_best.pt",
        lm / "checkpoint_last.pt",
        "--lm-data",
        corpus / "lm",
        "--hyp-form",
        "tok",
        "--lm-form",
        "tok",
        "--tune-nbest",
        nbest,
        "--tune-ref",
        corpus / "text" / "test.en",
        "--ref",
        corpus / "text" / "test.en",
        "--cpu",
        "--output-1best",
        tmp_path / "1best.en",
        "--output-nbest",
        tmp_path / "out.nbest",
    ]
    code, stdout, stderr = run_module("alm_plugin.cli.rescore", *command)
    assert code == 0, stderr[-2000:]
    assert "LM scores are log2-probabilities" in stdout
    assert re.search(r"weights: TM=1,LM=[\d.]+,Len=-?[\d.]+", stdout), stdout
    before, after = map(float, re.search(r"test.nbest: BLEU ([\d.]+) \(system 1-best\) -> ([\d.]+)", stdout).groups())
    assert after >= before  # tuned on this very set: never worse than the system's choice
    assert len((tmp_path / "1best.en").read_text().splitlines()) == 30
    rows = (tmp_path / "out.nbest").read_text().splitlines()
    assert len(rows) == 150 and re.match(
        r"^0 \|\|\| .* \|\|\| TM= -[\d.]+ LM= -[\d.]+ Len= [\d.]+ \|\|\| -?[\d.]+$", rows[0]
    )

    # the references of another set do not line up: reported, nothing written
    command[command.index("--ref") + 1] = corpus / "text" / "valid.en"
    code, _, stderr = run_module("alm_plugin.cli.rescore", *command)
    assert code != 0 and "do not line up: 10 reference lines have no hypotheses" in stderr


def test_shallow_fusion_with_lm_path_and_its_dictionary_check(corpus, nmt, lm, tmp_path):
    checkpoint, _ = nmt
    generate = [
        "generate",
        corpus / "nmt",
        *NMT,
        "--path",
        checkpoint,
        "--gen-subset",
        "test",
        "--beam",
        "3",
        "--batch-size",
        "16",
        "--lm-weight",
        "0.2",
    ]
    _, output = run(*generate, "--lm-path", lm / "checkpoint_best.pt")
    assert len([line for line in output.splitlines() if line.startswith("H-")]) == 30

    # an LM trained on the source side: its dictionary is not the target dictionary
    run(
        "preprocess",
        "--only-source",
        "--srcdict",
        corpus / "nmt" / "dict.de.txt",
        "--trainpref",
        corpus / "text" / "train.de",
        "--destdir",
        tmp_path / "lm-de",
    )
    run(
        "train",
        tmp_path / "lm-de",
        "--user-dir",
        "alm_plugin",
        "--task",
        "sentence_language_modeling",
        "--cpu",
        *TRAIN,
        "--arch",
        "amsrn_small",
        "--embed-dim",
        "8",
        "--hidden-size",
        "8",
        "--lr",
        "0.01",
        "--batch-size",
        "32",
        "--max-update",
        "1",
        "--disable-validation",
        "--save-dir",
        tmp_path / "ckpt-de",
    )
    source_side = tmp_path / "nmt-source-dict"
    shutil.copytree(corpus / "nmt", source_side)
    shutil.copyfile(source_side / "dict.de.txt", source_side / "dict.txt")
    generate[1] = source_side
    code, output = run(*generate, "--lm-path", tmp_path / "ckpt-de" / "checkpoint_last.pt", check=False)
    assert code != 0 and "the language model's dictionary (" in output and "is not the translation's target" in output

    # the target-side LM with a dict.txt that is not its own: the checkpoint's fingerprint says so, in
    # --lm-path's words (the LM's dictionary is read from the translation data directory), naming its own
    code, output = run(*generate, "--lm-path", lm / "checkpoint_best.pt", check=False)
    last = output.strip().splitlines()[-1]
    assert code != 0 and last.startswith("fairseq-generate: error: --lm-path: the language model's dictionary is not ")
    assert "(a copy of dict.de.txt): the model was trained with dict.en.txt" in last, last
    assert "dictionary mismatch" not in output

    os.remove(source_side / "dict.txt")
    code, output = run(*generate, "--lm-path", lm / "checkpoint_best.pt", check=False)
    assert (
        code != 0 and "For fairseq-generate --lm-path, which loads the language model's dictionary from there" in output
    )


def test_alm_score_names_a_translation_checkpoint_and_a_translation_data_directory(corpus, nmt, lm, tmp_path):
    """A translation checkpoint and a translation data-bin are each named as such, with what to give instead."""
    checkpoint, _ = nmt
    for data in ([], ["--data", corpus / "lm"]):
        code, _, stderr = run_module("alm_plugin.cli.score", "--path", checkpoint, *data, stdin="the dog\n")
        # without --data its dictionary cannot load (dict.de.txt/dict.en.txt); with it, the model is built
        last = stderr.strip().splitlines()[-1]
        assert (
            code == 1
            and last.startswith(f"alm-score: error: {checkpoint} holds a ")
            and "not a language model: alm-score works with language models" in last
        ), stderr
    translation_data = tmp_path / "nmt-only"
    shutil.copytree(corpus / "nmt", translation_data)
    os.remove(translation_data / "dict.txt")
    code, _, stderr = run_module(
        "alm_plugin.cli.score", "--path", lm / "checkpoint_best.pt", "--data", translation_data, stdin="the dog\n"
    )
    assert code == 1 and "Traceback" not in stderr
    assert (
        "it is a translation data directory (dict.de.txt, dict.en.txt), and a language model reads its "
        "dictionary from dict.txt: give the data-bin the language model was trained on" in stderr
    ), stderr


@needs_shared_data("multi30k", "train.de")
def test_multi30k_preparation_round_trips_the_bpe_text(tmp_path, monkeypatch):
    from alm_plugin.cli.text_forms import TextForms

    script = os.path.join(ROOT, "examples", "translation", "prepare_multi30k.py")
    arguments = [
        script,
        "--train-pairs",
        "300",
        "--eval-pairs",
        "20",
        "--bpe-merges",
        "300",
        "--destdir",
        tmp_path / "nmt",
        "--lm-destdir",
        tmp_path / "lm",
        "--text-dir",
        tmp_path / "text",
    ]
    # run as `python prepare_multi30k.py ...` runs it, in this process (its fairseq-preprocess runs too)
    monkeypatch.setattr(sys, "argv", [str(a) for a in arguments])
    monkeypatch.setattr(subprocess, "run", _PreprocessInProcess.run)
    runpy.run_path(script, run_name="__main__")
    assert (tmp_path / "nmt" / "dict.txt").read_text() == (tmp_path / "nmt" / "dict.en.txt").read_text()
    assert (tmp_path / "lm" / "dict.txt").read_text() == (tmp_path / "nmt" / "dict.en.txt").read_text()
    forms = TextForms("en", str(tmp_path / "nmt" / "bpe.codes"))
    bpe = (tmp_path / "text" / "test.bpe.en").read_text().splitlines()
    tok = (tmp_path / "text" / "test.tok.en").read_text().splitlines()
    raw = (tmp_path / "nmt" / "test.raw.en").read_text().splitlines()
    assert any("@@" in line for line in bpe)
    assert [forms.convert(b, "bpe", "tok") for b in bpe] == tok
    assert sum(forms.convert(t, "tok", "raw") == r for t, r in zip(tok, raw)) >= 18  # detok(tok(x)) == x, nearly always


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_channel_scores_are_the_hand_computed_log2_probabilities(corpus, channel):
    from alm_plugin.cli.channel import ChannelScorer

    scorer = ChannelScorer(str(channel), str(corpus / "nmt"), use_cpu=True, batch_tokens=20)
    hypotheses = ["the dog sees a cat", "a man", "the small red ball runs fast", "the"]
    sources = ["der hund sieht ein katze", "ein mann", "der kleiner roten ball rennt schnell", "der hund"]
    scores = scorer.log2_probs(hypotheses, sources)  # batched: padded, on the left for the encoder
    model, src_dict, tgt_dict = scorer.model, scorer.task.source_dictionary, scorer.task.target_dictionary
    for hypothesis, source, score in zip(hypotheses, sources, scores):
        src = src_dict.encode_line(hypothesis, add_if_not_exist=False).long()[None]
        tgt = tgt_dict.encode_line(source, add_if_not_exist=False).long()
        previous = torch.cat([tgt.new([tgt_dict.eos()]), tgt[:-1]])[None]
        with torch.no_grad():
            out = model(src, torch.tensor([src.size(1)]), previous)
            log_probs = model.get_normalized_probs(out, log_probs=True)[0]
        expected = sum(float(log_probs[t, w]) for t, w in enumerate(tgt)) / math.log(2)
        assert score == pytest.approx(expected, abs=1e-4)


def test_noisy_channel_rescoring_tunes_every_feature_and_records_its_trials(corpus, nmt, lm, channel, tmp_path):
    checkpoint, _ = nmt
    _, output = run(
        "generate", corpus / "nmt", *NMT, "--path", checkpoint, "--gen-subset", "test",
        "--beam", "5", "--nbest", "5", "--batch-size", "16",
    )  # fmt: skip
    nbest = _write(tmp_path / "test.nbest", output)
    command = [
        *("--nbest", nbest, "--lm", lm / "checkpoint_best.pt", lm / "checkpoint_last.pt", "--separate-lms"),
        *("--lm-data", corpus / "lm", "--hyp-form", "tok", "--lm-form", "tok", "--normalize"),
        *("--channel", channel, "--channel-data", corpus / "nmt", "--channel-form", "tok"),
        *("--source", corpus / "text" / "test.de", "--source-form", "tok"),
        *("--tune-nbest", nbest, "--tune-ref", corpus / "text" / "test.en"),
        *("--tune-source", corpus / "text" / "test.de"),
        *("--tuner", "random", "--trials", "30", "--seed", "3", "--ref", corpus / "text" / "test.en", "--cpu"),
        *("--output-trials", tmp_path / "trials.json", "--output-nbest", tmp_path / "out.nbest"),
    ]
    code, stdout, stderr = run_module("alm_plugin.cli.rescore", *command)
    assert code == 0, stderr[-2000:]
    assert "as LM1, LM2" in stdout and "(en -> de) as Ch" in stdout
    chosen = re.search(r"weights: (TM=1,LM1=\S+,LM2=\S+,Ch=\S+,Len=\S+)$", stdout, re.MULTILINE)
    assert chosen, stdout
    record = json.loads((tmp_path / "trials.json").read_text())
    assert record["tuner"] == "random" and record["seed"] == 3 and len(record["trials"]) == 31
    assert max(t["bleu"] for t in record["trials"]) == record["bleu"] >= record["system_bleu"]
    assert ",".join(f"{k}={v:g}" for k, v in record["weights"].items()) == chosen.group(1)
    row = (tmp_path / "out.nbest").read_text().splitlines()[0]
    assert re.match(r"^0 \|\|\| .* \|\|\| TM= \S+ LM1= \S+ LM2= \S+ Ch= -[\d.]+ Len= [\d.]+ \|\|\| \S+$", row), row

    # the same seed draws the same trials
    code, again, _ = run_module("alm_plugin.cli.rescore", *command[: command.index("--output-trials")])
    assert code == 0 and chosen.group(0) in again


@pytest.mark.parametrize(
    "change, message",
    [
        ({"--channel": "LM"}, "is a model of the SentenceLanguageModelingTask task, not a translation model"),
        ({"--channel": "NMT"}, "translates de -> en, but the channel model scores de sources given en hypotheses"),
        ({"--source": "valid.de"}, "valid.de has 40 lines but"),
        ({"--weights": "TM=1,LM=0.2,LM=0.3"}, "the weight of LM is given twice"),
        ({"--weights": "TM=1,Channel=0.5"}, "--weights names Channel, which this run has no feature for"),
        ({"--tuner": "grid"}, "--tuner grid tries every combination of LM, Ch, Len"),
        ({"--output-1best": "test.de"}, "--output-1best"),
        ({"--channel-form": "bpe", "--hyp-form": "bpe"}, "need --source-bpe-codes"),
    ],
)
def test_noisy_channel_bad_input_is_refused_in_one_line(corpus, nmt, lm, channel, tmp_path, change, message):
    checkpoint, _ = nmt
    nbest = _write(tmp_path / "test.nbest", "H-0\t-1.0\tthe dog\nP-0\t-0.3 -0.3 -0.4\n")
    sources = _write(tmp_path / "test.de", "der hund\n")
    shutil.copyfile(corpus / "text" / "valid.de", tmp_path / "valid.de")
    options = {
        "--nbest": nbest, "--lm": lm / "checkpoint_best.pt", "--lm-data": corpus / "lm",
        "--hyp-form": "tok", "--lm-form": "tok", "--channel": channel, "--channel-data": corpus / "nmt",
        "--channel-form": "tok", "--source": sources, "--source-form": "tok",
        "--tune-nbest": nbest, "--tune-ref": _write(tmp_path / "ref.en", "the dog\n"), "--tune-source": sources,
        "--tuner": "random", "--cpu": None,
    }  # fmt: skip
    named = {"LM": lm / "checkpoint_best.pt", "NMT": checkpoint}
    for key, value in change.items():
        options[key] = named.get(value, tmp_path / value if value.endswith(".de") else value)
    command = [str(x) for key, value in options.items() for x in ([key] if value is None else [key, value])]
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    code, _, stderr = run_module("alm_plugin.cli.rescore", *command)
    assert code != 0 and message in stderr.strip().splitlines()[-1], stderr[-1500:]
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before  # nothing written
