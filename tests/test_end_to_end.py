"""The real commands on the shipped WikiText-2 sample: train, resume, evaluate, hub, errors."""

import argparse
import math
import os
import re
import shutil
import subprocess
import sys

import pytest
import torch
from cli import TRAIN_COMMON, eval_lm_result, json_records, run
from conftest import SAMPLE_DATA
from fairseq import checkpoint_utils
from fairseq.data import data_utils

# the models' size in these tests: small enough to train in seconds, large enough to learn the sample
SIZE = ["--embed-dim", "32", "--hidden-size", "32", "--num-layers", "1"]
TRAIN = [
    "--arch",
    "attentive_lm_small",
    *SIZE,
    "--attention-score",
    "combined",
    "--criterion",
    "attention_cross_entropy",
    "--optimizer",
    "adam",
    "--lr",
    "0.003",
    "--clip-norm",
    "5",
    "--batch-size",
    "32",
    "--log-interval",
    "5",
    "--seed",
    "3",
]


@pytest.fixture(scope="module")
def training_runs(tmp_path_factory):
    """``training_runs(device)``: train a 32-wide one-layer attentive_lm_small 60 updates on
    ``device`` (a few seconds on a CPU), once per device (no ``--cpu`` for cuda); the tests below
    reuse each run."""
    runs = {}

    def on(device):
        if device not in runs:
            save_dir = tmp_path_factory.mktemp(f"ckpt-{device}")
            placement = [a for a in TRAIN_COMMON if a != "--cpu" or device == "cpu"]
            _, output = run("train", SAMPLE_DATA, *placement, *TRAIN, "--max-update", "60", "--save-dir", save_dir)
            runs[device] = save_dir, output
        return runs[device]

    return on


@pytest.fixture(scope="module")
def trained(training_runs):
    """The run on the CPU, which the tests without a ``device`` share."""
    return training_runs("cpu")


def test_training_loss_falls_on_real_text(trained):
    _, output = trained
    losses = [float(r["loss"]) for r in json_records(output, "train_inner")]
    assert len(losses) >= 10
    assert max(losses[-3:]) < min(losses[:3]) - 0.5, losses  # bits per token
    valid = json_records(output, "valid")
    assert valid and math.isfinite(float(valid[-1]["valid_ppl"]))
    assert float(valid[-1]["valid_paper_ppl"]) < float(valid[-1]["valid_ppl"])


def test_resume_continues_from_the_last_checkpoint(trained, tmp_path):
    save_dir, _ = trained
    resumed = tmp_path / "resumed"
    shutil.copytree(save_dir, resumed)
    _, output = run("train", SAMPLE_DATA, *TRAIN_COMMON, *TRAIN, "--max-update", "65", "--save-dir", resumed)
    assert re.search(r"Loaded checkpoint .*checkpoint_last\.pt \(epoch \d+ @ 60 updates\)", output), output[-2000:]
    assert json_records(output, "train")[-1]["train_num_updates"] == "65"
    # --restore-file from another directory, with early stopping by --patience
    # (validated every 5 updates, so that it stops within a few dozen updates)
    _, output = run(
        "train",
        SAMPLE_DATA,
        *TRAIN_COMMON,
        *TRAIN,
        "--restore-file",
        save_dir / "checkpoint_best.pt",
        "--save-dir",
        tmp_path / "other",
        "--max-update",
        "200",
        "--validate-interval-updates",
        "5",
        "--patience",
        "1",
        "--lr",
        "0.5",
    )  # too high: valid worsens
    assert "early stop since valid performance hasn't improved for last 1 runs" in output


def hand_computed_nll(checkpoint, sequences, limit):
    """Sum of -ln p over every token: each sequence is read in consecutive pieces of at most
    ``limit`` tokens; a piece's first input is the previous token (or </s> at the start of a
    sequence), as fairseq's LM datasets do. Pieces of equal length share a forward pass (no
    padding, so nothing changes but the speed)."""
    models, _, task = checkpoint_utils.load_model_ensemble_and_task([str(checkpoint)])
    model = models[0].eval()
    pieces = {}  # length -> [(source, target)]
    for sequence in sequences:
        previous = task.dictionary.eos()
        for start in range(0, len(sequence), limit):
            target = sequence[start : start + limit]
            pieces.setdefault(len(target), []).append((torch.cat([target.new([previous]), target[:-1]]), target))
            previous = target[-1].item()
    total, count = 0.0, 0
    with torch.no_grad():
        for same_length in pieces.values():
            source, target = (torch.stack(column) for column in zip(*same_length))
            lprobs = model.get_normalized_probs(model(source), log_probs=True)
            total -= lprobs.gather(2, target[..., None]).double().sum().item()
            count += target.numel()
    return total, count


@pytest.fixture(scope="module")
def whole_sentence_nll(training_runs):
    """``whole_sentence_nll(device)``: the hand computation (on the CPU) over whole test sentences
    of the model trained on ``device``, done once for every eval-lm check."""
    sentences = list(data_utils.load_indexed_dataset(os.path.join(SAMPLE_DATA, "test"), None))
    done = {}

    def of(device):
        if device not in done:
            done[device] = hand_computed_nll(training_runs(device)[0] / "checkpoint_best.pt", sentences, limit=10**6)
        return done[device]

    return of


@pytest.mark.parametrize("tokens_per_sample", ["35", "5"])
def test_eval_lm_perplexity_equals_hand_computation(training_runs, whole_sentence_nll, tokens_per_sample, device):
    """Every test sentence scored whole, whatever --tokens-per-sample (a training option); on
    the GPU too where there is one, trained there and scored there (the hand computation stays
    on the CPU)."""
    save_dir, training = training_runs(device)
    assert ("CUDA enviroments for all" in training) == (device == "cuda")  # fairseq's trainer on the GPU says so
    checkpoint = save_dir / "checkpoint_best.pt"
    _, output = run(
        "eval_lm",
        SAMPLE_DATA,
        "--path",
        checkpoint,
        "--user-dir",
        "alm_plugin",
        "--task",
        "sentence_language_modeling",
        *(["--cpu"] if device == "cpu" else []),
        "--batch-size",
        "7",
        "--output-word-probs",
        "--tokens-per-sample",
        tokens_per_sample,
    )
    loss_base2, ppl = eval_lm_result(output)
    sentences = list(data_utils.load_indexed_dataset(os.path.join(SAMPLE_DATA, "test"), None))
    assert max(len(s) for s in sentences) > 35  # the sample has sentences to cut
    nll, count = whole_sentence_nll(device)
    assert re.search(rf"Evaluated {count:,} tokens", output)
    assert loss_base2 == pytest.approx(nll / count / math.log(2), abs=1e-3)
    assert ppl == pytest.approx(math.exp(nll / count), rel=1e-3)
    word_prob_lines = [line for line in output.splitlines() if re.search(r"\S+ \[-?[\d.]+\]", line)]
    assert len(word_prob_lines) >= len(sentences)  # one line per sample: every sentence scored


def test_eval_lm_cutting_sentences_is_exact_and_warned(trained):
    save_dir, _ = trained
    checkpoint = save_dir / "checkpoint_best.pt"
    _, output = run(
        "eval_lm",
        SAMPLE_DATA,
        "--path",
        checkpoint,
        "--user-dir",
        "alm_plugin",
        "--task",
        "sentence_language_modeling",
        "--cpu",
        "--batch-size",
        "64",
        "--eval-tokens-per-sample",
        "5",
    )
    sentences = list(data_utils.load_indexed_dataset(os.path.join(SAMPLE_DATA, "test"), None))
    n_cut = sum(len(s) > 5 for s in sentences)
    assert re.search(
        rf"WARNING[: ].*test: {n_cut} of {len(sentences)} sentences are longer than "
        r"--eval-tokens-per-sample 5",
        output,
    ), output[-2000:]
    nll, count = hand_computed_nll(checkpoint, sentences, limit=5)
    assert eval_lm_result(output)[0] == pytest.approx(nll / count / math.log(2), abs=1e-3)


def test_eval_lm_without_the_task_warns_and_scores_fairseq_streams(trained):
    """Plain fairseq-eval-lm uses language_modeling's 1024-token blocks: still exact, and said."""
    save_dir, _ = trained
    checkpoint = save_dir / "checkpoint_best.pt"
    # blocks of 256 tokens (the default 1,024 is the same check, four times the attention cost)
    _, output = run(
        "eval_lm",
        SAMPLE_DATA,
        "--path",
        checkpoint,
        "--user-dir",
        "alm_plugin",
        "--cpu",
        "--batch-size",
        "4",
        "--tokens-per-sample",
        "256",
    )
    assert "add --task sentence_language_modeling" in output
    loss_base2, _ = eval_lm_result(output)
    stream = torch.cat(list(data_utils.load_indexed_dataset(os.path.join(SAMPLE_DATA, "test"), None)))
    nll, count = hand_computed_nll(checkpoint, [stream], limit=256)
    assert loss_base2 == pytest.approx(nll / count / math.log(2), abs=1e-3)


def test_checkpoint_loads_with_weights_only(trained):
    save_dir, _ = trained
    state = torch.load(save_dir / "checkpoint_best.pt", weights_only=True)
    assert state["cfg"]["model"]["_name"] == "attentive_lm_small"


def test_hub_interface_scores_and_samples(trained):
    from alm_plugin.models.attentive_lm import AttentiveLanguageModel

    save_dir, _ = trained
    lm = AttentiveLanguageModel.from_pretrained(
        str(save_dir), "checkpoint_best.pt", data_name_or_path=SAMPLE_DATA, user_dir="alm_plugin"
    )
    lm.eval()
    scored = lm.score("The game was released in Japan .")
    assert scored["positional_scores"].shape == (7,)  # the hub scores the words, not </s>
    assert torch.isfinite(scored["positional_scores"]).all()
    unknown = lm.score("The zyzzyvaquux was released .")  # an unknown word scores as <unk>
    assert lm.task.dictionary.unk() in unknown["tokens"] and torch.isfinite(unknown["positional_scores"]).all()
    torch.manual_seed(1)  # a draw that continues the prefix (a few in ten end it at once: </s> is in the top 10)
    sample = lm.sample("The game", beam=1, sampling=True, sampling_topk=10, max_len_b=12)
    assert sample.startswith("The game") and len(sample.split()) > 2
    assert greedy_matches_full_forward(lm, "The game")


def test_attention_heatmap_command_draws_the_weights(trained, tmp_path):
    from PIL import Image

    from alm_plugin.cli.model_loading import load_models
    from alm_plugin.cli.plot_attention import attention_rows, main

    save_dir, _ = trained
    ((model, task),) = load_models([str(save_dir / "checkpoint_best.pt")], SAMPLE_DATA, use_cpu=True)
    inputs, predicted, weights = attention_rows(model, task.source_dictionary, "The game was released .")
    assert inputs[0] == "</s>" and predicted[-1] == "</s>" and weights.shape == (6, 6)
    assert weights[0].sum() == 0 and abs(weights[1:].sum(1) - 1).max() < 1e-5
    out = tmp_path / "attention.png"
    main(
        ["--path", str(save_dir / "checkpoint_best.pt"), "--out", str(out), "The game was released .", "It sold well ."]
    )
    assert Image.open(out).size[0] > 500


def test_dictionary_mismatch_is_a_clear_error(trained, tmp_path):
    save_dir, _ = trained
    other = tmp_path / "other-data"
    shutil.copytree(SAMPLE_DATA, other)
    lines = open(other / "dict.txt").read().splitlines()
    lines[10], lines[11] = lines[11], lines[10]  # same size, different word ids
    (other / "dict.txt").write_text("\n".join(lines) + "\n")
    code, output = run(
        "eval_lm", other, "--path", save_dir / "checkpoint_best.pt", "--user-dir", "alm_plugin", "--cpu", check=False
    )
    assert code != 0 and "dictionary mismatch" in output


def greedy_matches_full_forward(lm, prefix, max_len_b=6):
    """Greedy incremental generation picks the full forward's argmax at every new step (a
    </s> that ends a hypothesis at the length limit is forced there, not picked)."""
    greedy = lm.generate(lm.encode(prefix), beam=1, max_len_b=max_len_b)[0]["tokens"]
    source = torch.cat([greedy.new([lm.task.dictionary.eos()]), greedy[:-1]])
    full = lm.models[0](source[None])[0][0].argmax(-1)
    n_prefix = len(lm.encode(prefix)) - 1
    n_picked = len(greedy) - 1 if len(greedy) == max_len_b + 1 else len(greedy)
    return n_picked > n_prefix and torch.equal(full[n_prefix:n_picked], greedy[n_prefix:n_picked])


# each model's own options beside the shared recipe: AMSRN with memory selection and the entropy term
MODELS = {
    "amsrn_small": [*SIZE, "--memory-selection", "independent", "--attention-entropy-weight", "0.5"],
    "alm_lstm": ["--embed-dim", "16", "--hidden-size", "16", "--num-layers", "1"],  # the PTB table's baseline
}


@pytest.mark.parametrize("arch", sorted(MODELS))
def test_each_model_trains_and_eval_lm_equals_hand_computation(arch, tmp_path):
    """The same task, criterion and scoring path as the attentive rows: the loss falls on the
    sample, eval-lm's loss equals whole sentences scored by hand, and the hub's greedy output
    matches a full forward."""
    args = ["--arch", arch, *MODELS[arch], "--criterion", "attention_cross_entropy", "--optimizer", "adam"]
    args += ["--lr", "0.003", "--clip-norm", "5", "--batch-size", "32", "--log-interval", "5"]
    _, output = run("train", SAMPLE_DATA, *TRAIN_COMMON, *args, "--max-update", "40", "--save-dir", tmp_path)
    inner = json_records(output, "train_inner")
    losses = [float(r["loss"]) for r in inner]
    assert losses[-1] < losses[0] - 0.5, losses
    assert all("attn_entropy" in r for r in inner) == ("--attention-entropy-weight" in args)

    checkpoint = tmp_path / "checkpoint_best.pt"
    _, output = run(
        "eval_lm",
        SAMPLE_DATA,
        "--path",
        checkpoint,
        "--user-dir",
        "alm_plugin",
        "--task",
        "sentence_language_modeling",
        "--cpu",
        "--batch-size",
        "16",
    )
    loss_base2, _ = eval_lm_result(output)
    sentences = list(data_utils.load_indexed_dataset(os.path.join(SAMPLE_DATA, "test"), None))
    nll, count = hand_computed_nll(checkpoint, sentences, limit=10**6)  # whole sentences, as eval-lm
    assert loss_base2 == pytest.approx(nll / count / math.log(2), abs=1e-3)

    from fairseq.models import ARCH_MODEL_REGISTRY

    lm = (
        ARCH_MODEL_REGISTRY[arch]
        .from_pretrained(str(tmp_path), "checkpoint_best.pt", data_name_or_path=SAMPLE_DATA, user_dir="alm_plugin")
        .eval()
    )
    assert greedy_matches_full_forward(lm, "The game")


@pytest.fixture(scope="module")
def fairseq_lstm_lm(tmp_path_factory):
    """fairseq's own lstm_lm, two updates on the sample: its checkpoint_last.pt (an argparse.Namespace inside)."""
    save_dir = tmp_path_factory.mktemp("fairseq_lstm_lm")
    run(
        "train",
        SAMPLE_DATA,
        *TRAIN_COMMON,
        "--arch",
        "lstm_lm",
        "--decoder-embed-dim",
        "16",
        "--decoder-hidden-size",
        "16",
        "--decoder-out-embed-dim",
        "16",
        "--optimizer",
        "adam",
        "--lr",
        "0.003",
        "--batch-size",
        "32",
        "--max-update",
        "2",
        "--save-dir",
        save_dir,
    )
    return str(save_dir / "checkpoint_last.pt")


def test_checkpoint_of_another_architecture_is_a_clear_error(tmp_path, fairseq_lstm_lm):
    code, output = run(
        "train",
        SAMPLE_DATA,
        *TRAIN_COMMON,
        *TRAIN,
        "--max-update",
        "4",
        "--save-dir",
        tmp_path / "ours",
        "--restore-file",
        fairseq_lstm_lm,
        check=False,
    )
    assert code != 0
    assert "this checkpoint does not fit AttentiveLanguageModel" in output
    assert "It was saved by another --arch" in output


def test_allowlist_lets_safe_loading_read_fairseq_namespace_checkpoints(fairseq_lstm_lm):
    """lstm_lm checkpoints hold an argparse.Namespace: refused by torch's safe loading on
    its own, accepted once the plugin has allow-listed exactly that type."""
    checkpoint = fairseq_lstm_lm
    plain = subprocess.run(
        [sys.executable, "-c", f"import torch; torch.load({checkpoint!r})"],  # the default: weights_only=True
        capture_output=True,
        text=True,
    )
    assert plain.returncode != 0 and "Weights only load failed" in plain.stderr
    state = torch.load(checkpoint, weights_only=True)  # conftest imported alm_plugin
    assert isinstance(state["cfg"]["model"], argparse.Namespace)
