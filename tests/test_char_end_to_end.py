"""The character models through the real commands: prepare an open-vocabulary corpus from
the shipped sample's text, fairseq-train (and resume), fairseq-eval-lm, fairseq-validate
and alm-cache-posterior, checked against a hand computation and the text's length."""

import collections
import json
import math
import re

import pytest
import torch
from cli import eval_lm_result, json_records, run, run_module
from conftest import SAMPLE_DATA
from fairseq import checkpoint_utils
from fairseq.data import Dictionary, data_utils
from test_prepare_data import run_script

NEW_WORDS = ["Zyzzyva", "Quetzalcoatlus"]  # in no split but test
COMMON = [
    "--user-dir",
    "alm_plugin",
    "--task",
    "open_vocabulary_language_modeling",
    "--cpu",
    "--log-format",
    "json",
    "--no-progress-bar",
    "--num-workers",
    "0",
]
TRAIN = [
    "--arch",
    "char_cache_lm_small",
    "--char-embed-dim",
    "24",
    "--hidden-size",
    "48",
    "--cache-size",
    "20",
    "--criterion",
    "open_vocabulary_cross_entropy",
    "--optimizer",
    "adam",
    "--lr",
    "0.01",
    "--clip-norm",
    "10",
    "--batch-size",
    "8",
    "--tokens-per-sample",
    "20",
    "--log-interval",
    "10",
    "--seed",
    "1",
]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Text of the shipped sample (train 1200 lines, valid/test 60) with two new words in
    test, binarised with a dictionary over all splits."""
    root = tmp_path_factory.mktemp("open_vocab")
    d = Dictionary.load(f"{SAMPLE_DATA}/dict.txt")
    raw = root / "raw"
    raw.mkdir()
    for split, n in (("train", 1200), ("valid", 60), ("test", 60)):
        lines = data_utils.load_indexed_dataset(f"{SAMPLE_DATA}/{split}", d)
        text = [d.string(lines[i]) for i in range(n)]
        if split == "test":
            text[3] = f"{NEW_WORDS[0]} {text[3]} {NEW_WORDS[1]} {NEW_WORDS[0]}"
        (raw / f"{split}.txt").write_text("\n".join(text) + "\n", encoding="utf-8")
    code, _, stderr = run_script(
        "--raw-dir", raw, "--open-vocabulary", "--name", "ov", "--destdir", root, "--text-dir", root / "text"
    )  # prepare_lm_data.py, in this process
    assert code == 0, stderr
    return root / "ov", root / "text" / "ov"


@pytest.fixture(scope="module")
def trained(corpus, tmp_path_factory):
    data, _ = corpus
    save_dir = tmp_path_factory.mktemp("char_ckpt")
    _, output = run("train", data, *COMMON, *TRAIN, "--max-update", "100", "--save-dir", save_dir)
    return save_dir, output


def test_training_loss_falls_and_logs_bpc(trained):
    _, output = trained
    records = json_records(output, "train_inner")
    bpc = [float(r["bpc"]) for r in records]
    assert len(bpc) >= 9 and bpc[-1] < bpc[0] - 1.0, bpc
    assert sum(bpc[-3:]) / 3 < sum(bpc[1:4]) / 3 - 0.3, bpc  # still falling after the first drop
    valid = json_records(output, "valid")[-1]
    assert 0 < float(valid["valid_cache_use"]) < 1 and float(valid["valid_bpc"]) < 4


def test_resume_continues_mid_epoch(trained, corpus, tmp_path):
    import shutil

    save_dir, _ = trained
    shutil.copytree(save_dir, tmp_path / "r")
    _, output = run("train", corpus[0], *COMMON, *TRAIN, "--max-update", "105", "--save-dir", tmp_path / "r")
    assert re.search(r"Loaded checkpoint .*checkpoint_last\.pt \(epoch \d+ @ 100 updates\)", output)
    assert json_records(output, "train")[-1]["train_num_updates"] == "105"


def hand_scored_test(checkpoint, data):
    """log p of every test word, the split read as one stream in one call."""
    models, _, task = checkpoint_utils.load_model_ensemble_and_task(
        [str(checkpoint)], arg_overrides={"data": str(data)}
    )
    model = models[0].eval()
    d = task.target_dictionary
    lines = data_utils.load_indexed_dataset(f"{data}/test", d)
    words = torch.cat([lines[i] for i in range(len(lines))])
    source = torch.cat([words.new([d.eos()]), words[:-1]])
    with torch.no_grad():
        log_probs, _ = model(source[None], target_tokens=words[None])
    return d, words, log_probs.flatten().double()


@pytest.fixture(scope="module")
def hand_scored(trained, corpus):
    """``hand_scored_test`` of checkpoint_best.pt, computed once for the tests that check against it."""
    return hand_scored_test(trained[0] / "checkpoint_best.pt", corpus[0])


def test_eval_lm_and_validate_equal_hand_computation_and_count_every_character(trained, corpus, hand_scored):
    save_dir, _ = trained
    data, text = corpus
    d, words, log_probs = hand_scored
    new = [d.index(w) for w in NEW_WORDS]
    # no word became <unk>: the only <unk>s are the sample's own literal ones
    literal = (text / "test.txt").read_text(encoding="utf-8").split().count("<unk>")
    assert all(i != d.unk() for i in new) and int(words.eq(d.unk()).sum()) == literal
    assert torch.isfinite(log_probs).all()

    _, output = run(
        "eval_lm",
        data,
        *COMMON[:5],
        "--path",
        save_dir / "checkpoint_best.pt",
        "--gen-subset",
        "test",
        "--batch-size",
        "1",
        "--output-word-probs",
    )
    loss, ppl = eval_lm_result(output)
    assert f"Evaluated {words.numel():,} tokens" in output
    assert loss == pytest.approx(-log_probs.mean().item() / math.log(2), abs=1e-4)
    # the unseen words got finite scores, printed by --output-word-probs
    for word in NEW_WORDS:
        scores = re.findall(re.escape(word) + r" \[(-?[\d.]+)\]", output)
        assert scores and all(math.isfinite(float(s)) for s in scores), word

    _, output = run(
        "validate",
        data,
        *COMMON[:5],
        "--path",
        save_dir / "checkpoint_best.pt",
        "--valid-subset",
        "test",
        "--batch-size",
        "1",
    )
    bpc = float(re.search(r"\| bpc ([\d.]+)", output).group(1))
    characters = len((text / "test.txt").read_text(encoding="utf-8"))
    assert bpc == pytest.approx(-log_probs.sum().item() / characters / math.log(2), abs=1e-4)


def alm_score(*args, stdin=None):
    code, stdout, stderr = run_module("alm_plugin.cli.score", *args, stdin=stdin)
    assert code == 0, stderr
    return [json.loads(line) for line in stdout.splitlines()], stderr.strip().splitlines()[-1]


def test_alm_score_reads_the_text_as_eval_lm_does_and_counts_bits_per_character(trained, corpus, hand_scored):
    save_dir, _ = trained
    data, text = corpus
    checkpoint = save_dir / "checkpoint_best.pt"
    d, words, log_probs = hand_scored
    rows, summary = alm_score("--path", checkpoint, "--format", "jsonl", text / "test.txt")
    characters = len((text / "test.txt").read_text(encoding="utf-8"))
    assert sum(r["chars"] for r in rows) == characters and sum(r["tokens"] for r in rows) == words.numel()
    assert sum(r["logprob"] for r in rows) == pytest.approx(log_probs.sum().item(), abs=1e-2)
    _, eval_ppl = eval_lm_result(
        run("eval_lm", data, *COMMON[:5], "--path", checkpoint, "--gen-subset", "test", "--batch-size", "1")[1]
    )
    bpc = -log_probs.sum().item() / characters / math.log(2)
    assert f"{characters} characters, " in summary and f"bpc {bpc:.4f}, word ppl {eval_ppl:.2f}" in summary


def test_alm_score_spells_words_the_dictionary_lacks_and_can_score_lines_alone(trained, corpus):
    save_dir, _ = trained
    checkpoint = save_dir / "checkpoint_best.pt"
    lines = ["the Blorfy game was released .", "Blorfy Blorfy ,", "the game was 日本 ."]
    rows, summary = alm_score(
        "--path", checkpoint, "--data", corpus[0], "--format", "jsonl", stdin="\n".join(lines) + "\n"
    )
    assert [r["unk"] for r in rows] == [0, 0, 1] and all(math.isfinite(r["logprob"]) for r in rows)
    assert rows[1]["chars"] == 2 * len("Blorfy ") + 2
    alone, _ = alm_score(
        "--path",
        checkpoint,
        "--data",
        corpus[0],
        "--format",
        "jsonl",
        "--context",
        "line",
        stdin="\n".join(lines[::-1]) + "\n",
    )
    alone = alone[::-1]
    # the first line has no context either way; the second one's Blorfy was read in the first line
    assert alone[0]["logprob"] == pytest.approx(rows[0]["logprob"], abs=1e-3)
    assert alone[1]["logprob"] < rows[1]["logprob"] - 1.0
    shuffled, _ = alm_score(
        "--path",
        checkpoint,
        "--data",
        corpus[0],
        "--format",
        "jsonl",
        "--context",
        "line",
        "--batch-size",
        "1",
        stdin="\n".join(lines) + "\n",
    )
    assert [r["logprob"] for r in shuffled] == pytest.approx([r["logprob"] for r in alone], abs=1e-3)
    _, _, stderr = run_module("alm_plugin.cli.score", "--path", checkpoint, "--data", corpus[0], stdin=lines[2] + "\n")
    assert "words with characters the model never saw are scored as <unk> (counted in 'unk'), 1 in all" in stderr
    assert "'日本'" in stderr
    # no input and a literal <pad> word: refused in one line; an empty line: its </s>, no bpc
    code, stdout, stderr = run_module("alm_plugin.cli.score", "--path", checkpoint, "--data", corpus[0], stdin="")
    assert code != 0 and stdout == "" and "nothing to score" in stderr.strip().splitlines()[-1]
    code, stdout, stderr = run_module(
        "alm_plugin.cli.score", "--path", checkpoint, "--data", corpus[0], stdin="the cat\nthe <pad> cat\n"
    )
    assert code != 0 and stdout == "" and "stdin:2: the text contains <pad>" in stderr.strip().splitlines()[-1]
    rows, _ = alm_score("--path", checkpoint, "--data", corpus[0], "--format", "jsonl", stdin="the cat\n\n")
    assert [r["tokens"] for r in rows] == [3, 1] and rows[1]["chars"] == 0 and rows[1]["bpc"] is None
    assert all(math.isfinite(r["logprob"]) for r in rows)


def test_cache_posterior_command_lists_copied_and_spelled_words(trained, corpus, tmp_path):
    save_dir, _ = trained
    code, out, stderr = run_module(
        "alm_plugin.cli.cache_posterior",
        "--path",
        save_dir / "checkpoint_best.pt",
        "--data",
        corpus[0],
        "--gen-subset",
        "test",
        "--plot",
        tmp_path / "cache.png",
        "--top",
        "5",
        "--rare-in-train",
        "3",
        "--json",
        tmp_path / "posterior.json",
    )
    assert code == 0, stderr
    assert re.search(r"test: \d+ words, \d+ characters \| bpc [\d.]+", out), out
    table = out.split("spelled by the LM")[1].strip().split("\n\n")[0].splitlines()[1:]
    assert len(table) == 5
    copied, spelled = zip(*[(float(row.split()[1]), float(row.split()[4])) for row in table])
    assert list(copied) == sorted(copied, reverse=True) and min(copied) >= max(spelled)
    assert (tmp_path / "cache.png").stat().st_size > 10_000
    # the JSON holds the printed lists; Table 8's keeps only types rare in the raw training text
    record = json.loads((tmp_path / "posterior.json").read_text())
    every, rare = record["tables"]
    assert [round(p, 3) for _, p, _ in every["copied"]] == list(copied)
    for listed in (every, rare):  # a type is copied or spelled, never both
        assert not {w for w, _, _ in listed["copied"]} & {w for w, _, _ in listed["spelled"]}
    in_train = collections.Counter((corpus[1] / "train.txt").read_text(encoding="utf-8").split())
    in_test = collections.Counter((corpus[1] / "test.txt").read_text(encoding="utf-8").split())
    repeated = [w for w, n in in_test.items() if n >= 2]  # and </s>, in every line of both splits
    assert every["types"] == len(repeated) + 1
    assert rare["types"] == sum(in_train[w] < 3 for w in repeated) > 0  # counted in train, not in the dictionary
    assert all(in_train[w] < 3 for w, _, _ in rare["copied"] + rare["spelled"])
    printed = out.split("spelled by the LM")[2].strip().split("\n\n")[0].splitlines()[1:]
    assert [(row.split()[0], row.split()[3]) for row in printed] == [
        (c[0], s[0]) for c, s in zip(rare["copied"], rare["spelled"])
    ]


def test_char_model_with_the_wrong_task_or_generation_is_a_clear_error(corpus, trained, tmp_path):
    code, output = run(
        "train",
        SAMPLE_DATA,
        "--user-dir",
        "alm_plugin",
        "--task",
        "language_modeling",
        "--cpu",
        "--arch",
        "hclm_small",
        "--max-update",
        "1",
        "--batch-size",
        "4",
        "--save-dir",
        tmp_path,
        check=False,
    )
    assert code != 0 and "--task open_vocabulary_language_modeling" in output
    code, output = run(
        "train",
        corpus[0],
        *COMMON,
        *TRAIN,
        "--batch-size",
        "0",
        "--max-update",
        "1",
        "--save-dir",
        tmp_path / "b",
        check=False,
    )
    assert code != 0 and "pass --batch-size N" in output


def test_hub_of_a_char_model_says_how_to_score(corpus, trained):
    from alm_plugin.models.char_cache_lm import CharCacheLanguageModel

    data, _ = corpus
    save_dir, _ = trained
    lm = CharCacheLanguageModel.from_pretrained(str(save_dir), "checkpoint_best.pt", str(data))
    for method in (lm.score, lm.sample):
        with pytest.raises(
            NotImplementedError,
            match="alm-score --path CHECKPOINT .*fairseq-eval-lm / "
            "fairseq-validate --task open_vocabulary_language_modeling",
        ):
            method("the cat")
