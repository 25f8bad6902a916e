"""Document context: the neural cache (Grave et al. 2017) and the Pointer Sentinel-LSTM (Merity et
al. 2017), checked against hand computations, and alm-cache-grid / alm-cache-posterior on them.
How a split is read as streams (the state and memory carried, the burn-in) is in test_streams.py."""

import json
import math
import re
import shlex

import pytest
import torch
from cli import TRAIN_COMMON, eval_lm_result, json_records, run, run_module
from conftest import SAMPLE_DATA, random_tokens, short_split
from fairseq import checkpoint_utils
from test_history_models import make_decoder

from alm_plugin.errors import CheckpointError, OptionError
from alm_plugin.evaluation.neural_cache import NeuralCache, target_cache_probs
from alm_plugin.evaluation.options import EvaluationOptions
from alm_plugin.models.attentive_lm import AttentiveLanguageModel
from alm_plugin.models.pointer_sentinel_lm import PointerSentinelConfig, PointerSentinelDecoder

STREAM_COMMON = [*TRAIN_COMMON[:2], "--task", "document_language_modeling", *TRAIN_COMMON[4:]]


def hand_cache(logits, features, targets, window, theta, lam):
    """Grave et al. Eq. 2-4 for one row of text, one token at a time: ``log p(x_{t+1})`` (T,)."""
    log_model = torch.log_softmax(logits.double(), -1).gather(1, targets.unsqueeze(1)).squeeze(1)
    features = features.double()
    out = []
    for t in range(len(targets)):
        p = math.exp(log_model[t])
        first = max(0, t - window)  # the N previous positions, never t itself
        if lam > 0 and t > first:
            weights = torch.softmax(theta * (features[first:t] @ features[t]), 0)
            cache = float(weights[targets[first:t] == targets[t]].sum())  # the words that followed h_i
            p = (1 - lam) * p + lam * cache
        out.append(math.log(p))
    return torch.tensor(out, dtype=torch.float64)


def random_row(length=11, vocab=7, dim=5, seed=0):
    """A model's log probabilities (normalised logits: log_softmax leaves them as they are),
    features and targets of one row of text."""
    g = torch.Generator().manual_seed(seed)
    return (
        torch.randn(1, length, vocab, generator=g).log_softmax(-1),
        torch.randn(1, length, dim, generator=g),
        torch.randint(0, vocab, (1, length), generator=g),
    )


def picked(log_p, targets):
    return log_p.gather(2, targets.unsqueeze(-1)).squeeze(-1)[0].double()


@pytest.mark.parametrize("window", [1, 3, 50])
def test_cache_equals_the_hand_computation_whole_and_in_chunks(window):
    logits, features, targets = random_row()
    padding = torch.zeros_like(targets, dtype=torch.bool)
    expected = hand_cache(logits[0], features[0], targets[0], window, 0.7, 0.3)
    whole = NeuralCache(window, 0.7, 0.3).log_probs(logits, features, targets, padding)
    torch.testing.assert_close(picked(whole, targets), expected, rtol=0, atol=1e-5)
    cache, row = NeuralCache(window, 0.7, 0.3), torch.zeros(1, dtype=torch.long)
    pieces = [
        cache.log_probs(
            logits[:, s : s + 4],
            features[:, s : s + 4],
            targets[:, s : s + 4],
            padding[:, s : s + 4],
            row,
            torch.full((1,), s),
        )
        for s in range(0, 11, 4)
    ]
    torch.testing.assert_close(picked(torch.cat(pieces, 1), targets), expected, rtol=0, atol=1e-5)
    assert whole.exp().sum(-1).sub(1).abs().max() < 1e-5  # still a distribution
    # two rows (streams) at once: each keeps its own cache, whatever words the other holds
    other = random_row(seed=1)
    both = NeuralCache(window, 0.7, 0.3).log_probs(
        *(torch.cat([a, b]) for a, b in zip((logits, features, targets), other)), torch.zeros(2, 11, dtype=torch.bool)
    )
    for row, (row_logits, row_features, row_targets) in enumerate([(logits, features, targets), other]):
        torch.testing.assert_close(
            picked(both[row : row + 1], row_targets),
            hand_cache(row_logits[0], row_features[0], row_targets[0], window, 0.7, 0.3),
            rtol=0,
            atol=1e-5,
        )


@pytest.mark.parametrize("window", [1, 3, 50])
def test_the_grids_target_cache_equals_the_hand_computation_for_every_theta_across_blocks(window):
    """alm-cache-grid's ``target_cache_probs`` (one masked shift for all thetas, query blocks of
    3 here) against Eq. 2-4 one token at a time: theta 0 (uniform), a usual one, one so large the
    softmax is one-hot; an empty cache (the first token) gives 0, never NaN."""
    logits, features, targets = random_row(length=40, vocab=5, dim=4, seed=2)
    thetas = [0.0, 0.7, 1e4]
    probs, filled = target_cache_probs(features[0] * 3, targets[0], window, thetas, chunk=3)
    assert not filled[0] and filled[1:].all() and probs[:, 0].eq(0).all()
    p_model = picked(logits.log_softmax(-1), targets).exp()
    for k, theta in enumerate(thetas):
        expected = hand_cache(logits[0], features[0] * 3, targets[0], window, theta, 0.5)[1:].exp()
        torch.testing.assert_close(0.5 * p_model[1:] + 0.5 * probs[k, 1:].double(), expected, rtol=0, atol=1e-6)


def test_cache_never_holds_the_word_being_predicted_and_lambda_0_is_the_model():
    logits, features, targets = random_row()
    padding = torch.zeros_like(targets, dtype=torch.bool)
    cache = NeuralCache(50, 1.0, 0.5)
    before = cache.log_probs(logits, features, targets, padding)
    for t in range(11):
        changed = targets.clone()
        changed[0, t] = (targets[0, t] + 1) % 7
        after = cache.log_probs(logits, features, changed, padding)
        torch.testing.assert_close(after[:, : t + 1], before[:, : t + 1], rtol=0, atol=0)  # x_{t+1} unseen at t
    torch.testing.assert_close(before[:, 0], torch.log_softmax(logits[:, 0], -1))  # empty cache: the model
    for off in (NeuralCache(50, 1.0, 0.0), NeuralCache(0, 1.0, 0.5)):
        torch.testing.assert_close(off.log_probs(logits, features, targets, padding), torch.log_softmax(logits, -1))


def pointer_decoder(dictionary, **overrides):
    decoder = PointerSentinelDecoder(
        PointerSentinelConfig(
            **{"embed_dim": 12, "hidden_size": 12, "num_layers": 2, "dropout": 0.0, "pointer_window": 6, **overrides}
        ),
        dictionary,
    )
    for p in decoder.parameters():
        torch.nn.init.normal_(p, std=0.5)
    return decoder.eval()


def test_a_model_without_features_is_refused_by_the_cache():
    class Plain(torch.nn.Module):
        pass

    with pytest.raises(ValueError, match="does not hand its output features to the cache.*Drop the"):
        EvaluationOptions(cache=(100, 0.3, 0.1)).attach(Plain())


# ---- end to end: fairseq-train, fairseq-eval-lm and alm-score on the shipped sample ----

CACHE = ["--neural-cache-window", "60", "--neural-cache-theta", "0.4", "--neural-cache-lambda", "0.25"]


def load(checkpoint, data=None):
    """The checkpoint's model (in eval mode) and task, reading ``data`` if given, else the data it was trained on."""
    overrides = {"data": str(data)} if data else None
    models, _, task = checkpoint_utils.load_model_ensemble_and_task([str(checkpoint)], arg_overrides=overrides)
    return models[0].eval(), task


def mean_nll_base2(log_p):
    return float(-log_p.mean() / math.log(2))


@pytest.fixture(scope="module")
def short_valid(tmp_path_factory):
    """The sample's dictionary and its valid split's first 80 lines (1,974 words)."""
    return short_split(tmp_path_factory.mktemp("short_valid"), 80)


@pytest.fixture(scope="module")
def sentence_model(tmp_path_factory):
    root = tmp_path_factory.mktemp("sentence_cache")
    run(
        "train",
        SAMPLE_DATA,
        *TRAIN_COMMON,
        "--arch",
        "attentive_lm",
        "--embed-dim",
        "24",
        "--hidden-size",
        "24",
        "--optimizer",
        "adam",
        "--lr",
        "0.01",
        "--batch-size",
        "32",
        "--max-update",
        "25",
        "--save-dir",
        root,
        "--no-epoch-checkpoints",
        "--disable-validation",
    )
    return root / "checkpoint_last.pt"


def test_cache_grid_reads_sentences_as_eval_lm_does_whatever_training_validated_with(
    sentence_model, short_valid, tmp_path
):
    """A checkpoint trained with --eval-tokens-per-sample N keeps N in its task config; the grid,
    like fairseq-eval-lm, scores whole sentences unless told otherwise (else its choice and its
    valid figures would be on another reading than eval-lm's, silently)."""
    state = torch.load(sentence_model, map_location="cpu", weights_only=True)
    state["cfg"]["task"]["eval_tokens_per_sample"] = 4
    cut = tmp_path / "cut.pt"
    torch.save(state, cut)
    for grid_option, eval_option in (([], []), (["--eval-tokens-per-sample", "4"], ["--eval-tokens-per-sample", "4"])):
        code, _, stderr = run_module(
            "alm_plugin.cli.cache_grid",
            "--path",
            cut,
            "--data",
            short_valid,
            "--windows",
            "60",
            "--thetas",
            "0.4",
            "--lambdas",
            "0.25",
            "--json",
            tmp_path / "g.json",
            "--cpu",
            *grid_option,
        )
        assert code == 0, stderr
        grid = json.loads((tmp_path / "g.json").read_text())
        _, output = run(
            "eval_lm",
            short_valid,
            "--user-dir",
            "alm_plugin",
            "--task",
            "sentence_language_modeling",
            "--path",
            cut,
            "--gen-subset",
            "valid",
            "--cpu",
            *eval_option,
        )
        assert eval_lm_result(output)[1] == pytest.approx(grid["ppl_without_cache"], rel=1e-4), grid_option
    assert "scored in pieces" in output  # the split has sentences longer than 4: the two readings differ


def test_eval_lm_with_the_cache_equals_the_hand_computation_at_batch_1_and_8(sentence_model, short_valid, tmp_path):
    """A sentence model scores each valid sentence from a fresh state; the cache spans them, in corpus order."""
    model, task = load(sentence_model, short_valid)
    task.load_dataset("valid")
    dataset = task.dataset("valid")
    logits, features, targets = [], [], []
    with torch.no_grad():
        for i in range(len(dataset)):
            item = dataset[i]
            out, extra = model(item["source"].unsqueeze(0))
            logits.append(out[0]), features.append(extra["features"][0]), targets.append(item["target"])
    logits, features, targets = torch.cat(logits), torch.cat(features), torch.cat(targets)
    expected = mean_nll_base2(hand_cache(logits, features, targets, 60, 0.4, 0.25))
    plain = mean_nll_base2(torch.log_softmax(logits.double(), -1).gather(1, targets.unsqueeze(1)))
    assert expected < plain  # the cache helps on this text, so an ignored flag would show
    for batch in ("1", "8"):
        _, output = run(
            "eval_lm",
            short_valid,
            "--user-dir",
            "alm_plugin",
            "--task",
            "sentence_language_modeling",
            "--path",
            sentence_model,
            "--gen-subset",
            "valid",
            "--cpu",
            "--batch-size",
            batch,
            *CACHE,
        )
        assert eval_lm_result(output)[0] == pytest.approx(expected, abs=2e-4)
    text = tmp_path / "valid.txt"
    text.write_text(
        "".join(task.dictionary.string(dataset[i]["target"][:-1]) + "\n" for i in range(len(dataset))), encoding="utf-8"
    )
    code, stdout, stderr = run_module(
        "alm_plugin.cli.score", "--path", sentence_model, text, "--format", "jsonl", *CACHE
    )
    assert code == 0, stderr
    rows = [json.loads(line) for line in stdout.splitlines()]
    total = sum(r["logprob"] for r in rows)
    assert sum(r["tokens"] for r in rows) == len(targets)
    assert -total / len(targets) / math.log(2) == pytest.approx(expected, abs=2e-4)


def test_cache_grid_prints_the_eval_lm_command_that_reproduces_its_choice(sentence_model, short_valid, tmp_path):
    """sentence_language_modeling keeps its data path in task.args (its task.cfg is None): the
    suggested command names that path, not a placeholder, and gives the grid's perplexity."""
    code, stdout, stderr = run_module(
        "alm_plugin.cli.cache_grid",
        "--path",
        sentence_model,
        "--data",
        short_valid,
        "--windows",
        "60",
        "--thetas",
        "0.1,0.4",
        "--lambdas",
        "0.25",
        "--json",
        tmp_path / "grid.json",
        "--cpu",
    )
    assert code == 0, stderr
    command = re.search(r"^use: fairseq-eval-lm (.*)$", stdout, re.M).group(1).split()
    assert command[0] == str(short_valid) and command[command.index("--task") + 1] == "sentence_language_modeling"
    chosen = json.loads((tmp_path / "grid.json").read_text())
    _, output = run("eval_lm", *command, "--gen-subset", "valid", "--cpu")
    assert eval_lm_result(output)[1] == pytest.approx(chosen["ppl_with_cache"], rel=1e-3)


def test_the_pointer_gate_is_logged_and_a_probability(stream_models):
    _, outputs = stream_models
    gates = [float(r["pointer_gate"]) for r in json_records(outputs["pointer_sentinel_lm"], "train_inner")]
    assert gates and all(0 < g <= 1 for g in gates)
    assert 0 < float(json_records(outputs["pointer_sentinel_lm"], "valid")[-1]["valid_pointer_gate"]) <= 1


def test_pointer_distribution_sums_to_one_and_copies_a_remembered_word(dictionary):
    decoder = pointer_decoder(dictionary).requires_grad_(False)
    tokens = random_tokens(dictionary, 2, 9)
    log_p = decoder.get_normalized_probs(decoder(tokens), log_probs=True)
    torch.testing.assert_close(log_p.exp().sum(-1), torch.ones(2, 9), rtol=0, atol=1e-5)
    with torch.no_grad():  # q = 0: the sentinel and the L = 6 slots all weigh 1/7 (Eq. 6-7)
        decoder.query.weight.fill_(0)
        decoder.query.bias.fill_(0)
    net_output = decoder(tokens)
    log_p, extra = decoder.get_normalized_probs(net_output, log_probs=True), net_output[1]
    t = 7  # the window holds the outputs of positions 2..7 (h_t included)
    torch.testing.assert_close(extra["pointer_gate"][0, t], torch.tensor(1 / 7))
    vocab = torch.softmax(decoder.output_layer(extra["features"])[0, t], -1)
    for word in set(tokens[0].tolist()):
        copies = int((tokens[0, 2 : t + 1] == word).sum())  # the pointer copies the input word of each slot
        assert log_p[0, t, word].exp() == pytest.approx(float(vocab[word]) / 7 + copies / 7, abs=1e-6)
        target = torch.full((2, 9), word)
        posterior = decoder.copy_posterior(log_p.gather(2, target.unsqueeze(-1)).squeeze(-1), extra, target)[
            0, t
        ]  # the pointer's share of p(word)
        assert float(posterior) == pytest.approx(copies / (float(vocab[word]) + copies), abs=1e-5)


@pytest.mark.parametrize("scope", ["found", "all"])
def test_pointer_loss_is_merity_extra_term_by_hand(dictionary, scope):
    """``--pointer-loss``: the criterion adds -log(g + sum_{i: x_i = y} a_i) at the targets in the
    window ('found') or at every target ('all'), beside the NLL, which it leaves as it was."""
    from test_task_and_criterion import FakeTask

    from alm_plugin.criterions.attention_cross_entropy import AttentionCrossEntropyCriterion
    from alm_plugin.models.pointer_sentinel_lm import PointerSentinelLanguageModel

    model = PointerSentinelLanguageModel(pointer_decoder(dictionary))
    with torch.no_grad():  # q = 0: the sentinel and the n slots in the window all weigh 1 / (n + 1)
        model.decoder.query.weight.fill_(0)
        model.decoder.query.bias.fill_(0)
    tokens = torch.tensor([[4, 5, 4, 6, 7, 4, 8, 9, 5, 10], [6, 6, 7, 8, 9, 10, 11, 12, 13, 6]])
    target = torch.cat([tokens[:, 1:], torch.full((2, 1), dictionary.eos())], 1)
    sample = {
        "net_input": {"src_tokens": tokens, "src_lengths": torch.tensor([10, 10])},
        "target": target,
        "ntokens": 20,
        "id": torch.arange(2),
    }
    expected, applied = 0.0, 0
    for b in range(2):
        for t in range(10):
            window = tokens[b, max(0, t - 5) : t + 1].tolist()  # L = 6, h_t included
            copies = window.count(int(target[b, t]))
            if scope == "all" or copies:
                expected -= math.log((1 + copies) / (len(window) + 1))
                applied += 1
    assert 0 < applied < 20 or scope == "all"
    plain_loss, _, plain = AttentionCrossEntropyCriterion(FakeTask(dictionary))(model, sample)
    loss, _, logged = AttentionCrossEntropyCriterion(FakeTask(dictionary), pointer_loss=scope)(model, sample)
    assert float(logged["pointer_loss"]) == pytest.approx(expected, rel=1e-5)
    assert float((loss - plain_loss).detach()) == pytest.approx(expected, rel=1e-5)
    assert float(logged["nll_loss"]) == pytest.approx(float(plain["nll_loss"]), rel=1e-6)
    with pytest.raises(OptionError, match="--pointer-loss found trains the Pointer Sentinel-LSTM's gate"):
        AttentionCrossEntropyCriterion(FakeTask(dictionary), pointer_loss="found")(
            AttentiveLanguageModel(make_decoder(dictionary, plain_lstm=True)), sample
        )


def test_sentinel_scale_slows_the_sentinel_not_the_model(dictionary):
    """``--sentinel-scale c`` stores s / c: with the stored vector 1/c times the paper model's s the
    two models are one function, and the stored vector's gradient is c times s's (SGD moves s at c^2
    the rate)."""
    paper, scaled = pointer_decoder(dictionary, sentinel_scale=1.0), pointer_decoder(dictionary, sentinel_scale=0.1)
    scaled.load_state_dict(paper.state_dict())
    with torch.no_grad():
        scaled.sentinel_vector.mul_(10)
    tokens = random_tokens(dictionary, 2, 9)
    outputs = [decoder.get_normalized_probs(decoder(tokens), log_probs=True) for decoder in (paper, scaled)]
    torch.testing.assert_close(outputs[0], outputs[1], rtol=0, atol=1e-6)
    for out in outputs:
        out[:, :, 5].sum().backward()
    assert paper.sentinel_vector.grad.abs().max() > 0
    torch.testing.assert_close(scaled.sentinel_vector.grad, 0.1 * paper.sentinel_vector.grad, rtol=1e-4, atol=1e-7)
    with pytest.raises(OptionError, match="--sentinel-scale 0 is out of range: it must be above 0"):
        pointer_decoder(dictionary, sentinel_scale=0)


def test_resume_and_hub_of_a_pointer_model(stream_models, tmp_path):
    import shutil

    from alm_plugin.models.pointer_sentinel_lm import PointerSentinelLanguageModel

    root, _ = stream_models
    shutil.copytree(root / "pointer_sentinel_lm", tmp_path / "r")
    _, output = run(
        "train",
        SAMPLE_DATA,
        *STREAM_COMMON,
        "--arch",
        "pointer_sentinel_lm",
        "--pointer-window",
        "20",
        "--criterion",
        "attention_cross_entropy",
        "--embed-dim",
        "32",
        "--hidden-size",
        "32",
        "--optimizer",
        "sgd",
        "--lr",
        "1.0",
        "--clip-norm",
        "5",
        "--sentence-avg",
        "--batch-size",
        "10",
        "--tokens-per-sample",
        "35",
        "--max-update",
        "44",
        "--save-dir",
        tmp_path / "r",
        "--disable-validation",
    )
    assert "Loaded checkpoint" in output and "(epoch 1 @ 40 updates)" in output
    assert json_records(output, "train")[-1]["train_num_updates"] == "44"
    lm = PointerSentinelLanguageModel.from_pretrained(
        str(root / "pointer_sentinel_lm"), "checkpoint_last.pt", data_name_or_path=SAMPLE_DATA
    )
    # the hub loads it and samples; its score() reads sentences alone, which a stream model never learned: refused
    assert lm.eval().sample("The game", beam=1, maxlen_b=3).startswith("The game")
    with pytest.raises(CheckpointError, match="was trained on document streams"):
        lm.score("The game was released in Japan .")


def test_a_pointer_checkpoint_from_before_the_sentinel_scale_is_read_at_scale_1(stream_models, tmp_path):
    """The default is 0.1 now; a checkpoint saved before the option existed was trained at 1 (its
    stored vector is s itself). fairseq fills a missing option with today's default when it builds
    a model named after its class: read at 0.1 it would be another model, silently. Loaded through
    fairseq, the old file must score as the model it was trained as; forced to 0.1, it is refused."""
    import json as json_lib

    from fairseq import checkpoint_utils

    root, _ = stream_models
    new_path = root / "pointer_sentinel_lm" / "checkpoint_last.pt"
    state = torch.load(new_path, map_location="cpu", weights_only=True)
    assert state["cfg"]["model"]["_name"] == "pointer_sentinel_lm" and state["cfg"]["model"]["sentinel_scale"] == 0.1
    del state["cfg"]["model"]["sentinel_scale"]  # as saved before the option: no field, no saved option, s as is
    # and as such checkpoints hold the options and the fingerprint: buffers of the state dict
    entry = state.pop("alm_plugin")
    options = json_lib.loads(entry["architecture_options"])
    del options["sentinel_scale"]
    state["model"]["architecture_options"] = torch.tensor(
        list(json_lib.dumps(options, sort_keys=True).encode()), dtype=torch.uint8
    )
    for name, fingerprint in entry["fingerprints"].items():
        state["model"][name] = torch.tensor(fingerprint, dtype=torch.long)
    state["model"]["decoder.sentinel_vector"] = 0.1 * state["model"]["decoder.sentinel_vector"]
    old_path = tmp_path / "old.pt"
    torch.save(state, old_path)
    (new,), _ = checkpoint_utils.load_model_ensemble([str(new_path)], arg_overrides={"data": SAMPLE_DATA})
    (old,), _ = checkpoint_utils.load_model_ensemble([str(old_path)], arg_overrides={"data": SAMPLE_DATA})
    assert old.decoder.cfg.sentinel_scale == 1.0
    tokens = torch.randint(4, 100, (2, 12))
    scores = [m.eval().get_normalized_probs(m(tokens), log_probs=True) for m in (new, old)]
    torch.testing.assert_close(scores[0], scores[1], rtol=0, atol=1e-5)
    with pytest.raises(
        OptionError, match="trained with --sentinel-scale 1.0, but the model being built has --sentinel-scale 0.1"
    ):
        checkpoint_utils.load_model_ensemble(
            [str(old_path)], arg_overrides={"data": SAMPLE_DATA, "sentinel_scale": 0.1}
        )


def test_cache_posterior_command_shows_the_pointer_gate(stream_models, short_valid):
    root, _ = stream_models
    checkpoint = root / "pointer_sentinel_lm" / "checkpoint_last.pt"
    code, stdout, stderr = run_module(
        "alm_plugin.cli.cache_posterior", "--path", checkpoint, "--gen-subset", "valid", "--data", short_valid
    )
    assert code == 0, stderr
    summary = stdout.splitlines()[0]
    _, ppl = eval_lm_result(
        run(
            "eval_lm",
            short_valid,
            "--user-dir",
            "alm_plugin",
            "--task",
            "document_language_modeling",
            "--path",
            checkpoint,
            "--gen-subset",
            "valid",
            "--cpu",
            "--batch-size",
            "1",
            "--tokens-per-sample",
            "35",
        )[1]
    )
    assert f"word ppl {ppl:.2f}" in summary and "mean sentinel gate" in summary
    gate = float(summary.split("mean sentinel gate ")[1])
    posterior = float(summary.split("mean cache posterior ")[1].split()[0])
    # a share of p(w), not of the mass: a word the softmax finds unlikely is nearly all pointer even at g = 0.9
    assert 0 < gate <= 1 and 0 <= posterior <= 1
    assert stdout.splitlines()[2].startswith("word types seen at least 2 times in valid (")
    assert stdout.splitlines()[3].split() == ["copied", "by", "the", "pointer", "from", "the", "softmax"]


def test_cache_grid_on_a_stream_model_with_dynamic_evaluation_reproduces_its_best_with_eval_lm(stream_models, tmp_path):
    """The route the WikiText-2 table's stream rows take: the split read as one stream in segments,
    adapting, its per-token results kept in a block that grows (a list of them pinned the heap and
    was OOM-killed past 21 GB); the figure is eval-lm's for the command it prints."""
    root, _ = stream_models
    code, stdout, stderr = run_module(
        "alm_plugin.cli.cache_grid",
        "--path",
        root / "attentive_lm" / "checkpoint_last.pt",
        "--data",
        short_split(tmp_path / "data", 40),  # valid's first 40 lines
        "--windows",
        "60",
        "--thetas",
        "0.4",
        "--lambdas",
        "0.25",
        "--dynamic-lrs",
        "1",
        "--dynamic-segment",
        "10",
        "--cpu",
    )
    assert code == 0, stderr
    best = float(re.search(r"^best: ([\d.]+)", stdout, re.M).group(1))
    command = shlex.split(re.search(r"^use: fairseq-eval-lm (.*)$", stdout, re.M).group(1))
    assert "--dynamic-eval-lr" in command and "--neural-cache-window" in command  # both chosen, as on WikiText-2
    assert eval_lm_result(run("eval_lm", *command, "--cpu")[1])[1] == pytest.approx(best, rel=1e-3)


def test_cache_grid_keeps_per_token_rows_in_order_across_growth():
    from alm_plugin.evaluation.grid_search import Rows

    rows, parts = Rows(capacity=3), [torch.randn(n, 4) for n in (2, 1, 5, 0, 7)]
    for part in parts:
        rows.append(part)
    assert torch.equal(rows.kept(), torch.cat(parts))


def test_document_context_refusals(stream_models, sentence_model, tmp_path):
    root, _ = stream_models
    code, output = run(
        "train",
        SAMPLE_DATA,
        *STREAM_COMMON,
        "--arch",
        "attentive_lm",
        "--batch-size",
        "4",
        "--max-update",
        "1",
        "--save-dir",
        tmp_path,
        check=False,
    )
    assert code != 0 and "bound it with --memory-window M" in output
    code, output = run(
        "train",
        SAMPLE_DATA,
        *STREAM_COMMON,
        "--arch",
        "alm_lstm",
        "--batch-size",
        "4",
        "--optimizer",
        "sgd",
        "--lr",
        "1",
        "--max-update",
        "1",
        "--save-dir",
        tmp_path,
        *CACHE,
        check=False,
    )
    assert code != 0 and "Drop --neural-cache-* from fairseq-train" in output
    code, output = run(
        "eval_lm",
        SAMPLE_DATA,
        "--user-dir",
        "alm_plugin",
        "--task",
        "sentence_language_modeling",
        "--path",
        sentence_model,
        "--gen-subset",
        "valid",
        "--cpu",
        "--batch-size",
        "8",
        "--softmax-batch",
        "16",
        *CACHE,
        check=False,
    )
    assert code != 0 and "drop --softmax-batch" in output
    code, output = run(
        "eval_lm",
        SAMPLE_DATA,
        "--user-dir",
        "alm_plugin",
        "--task",
        "document_language_modeling",
        "--path",
        root / "alm_lstm" / "checkpoint_last.pt",
        "--gen-subset",
        "valid",
        "--cpu",
        "--batch-size",
        "1",
        "--neural-cache-lambda",
        "1.5",
        "--neural-cache-window",
        "10",
        check=False,
    )
    assert code != 0 and "--neural-cache-lambda 1.5 is out of range: it must be below 1" in output
