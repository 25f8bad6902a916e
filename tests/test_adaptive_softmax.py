"""The adaptive softmax (``--adaptive-softmax-cutoff``) on every word model: a distribution that
sums to 1 and equals the method's formula, the criterion's loss from the target alone, fairseq-eval-lm
against a hand computation, the tied default, and the refusals."""

import math
import os
import shutil

import pytest
import torch
from cli import ADAM24, TRAIN_COMMON, eval_lm_result, json_records, refused, run
from conftest import SAMPLE_DATA, short_split
from fairseq.data import Dictionary, data_utils
from test_end_to_end import hand_computed_nll

from alm_plugin.criterions.attention_cross_entropy import AttentionCrossEntropyCriterion
from alm_plugin.errors import OptionError
from alm_plugin.models.amsrn import AMSRNConfig, AMSRNDecoder, AMSRNLanguageModel
from alm_plugin.models.attentive_lm import AttentiveLanguageModel, AttentiveLMConfig, AttentiveLMDecoder
from alm_plugin.models.lstm_lm import LSTMDecoder, LSTMLanguageModel
from alm_plugin.models.pointer_sentinel_lm import (
    PointerSentinelConfig,
    PointerSentinelDecoder,
    PointerSentinelLanguageModel,
)
from alm_plugin.modules.history_lstm_decoder import RecurrentLMConfig

CUTOFF = "8,16"  # head: ids 0-7 (the special symbols and 4 words); tails 8-15 and 16-end
MODELS = {
    "alm_lstm": (LSTMLanguageModel, LSTMDecoder, RecurrentLMConfig, {}),
    "attentive_lm": (AttentiveLanguageModel, AttentiveLMDecoder, AttentiveLMConfig, {"attention_score": "combined"}),
    "amsrn": (AMSRNLanguageModel, AMSRNDecoder, AMSRNConfig, {}),
    "pointer_sentinel_lm": (
        PointerSentinelLanguageModel,
        PointerSentinelDecoder,
        PointerSentinelConfig,
        {"pointer_window": 5},
    ),
}


@pytest.fixture
def sorted_dictionary():
    """30 words by falling frequency, padded to a multiple of 8 as fairseq-preprocess does."""
    d = Dictionary()
    for i in range(30):
        d.add_symbol(f"w{i}", n=100 - i)
    d.finalize(padding_factor=8)
    return d


def build(name, dictionary, **options):
    model_cls, decoder_cls, config_cls, defaults = MODELS[name]
    cfg = config_cls(
        **{
            "embed_dim": 12,
            "hidden_size": 12,
            "num_layers": 2,
            "dropout": 0.0,
            "adaptive_softmax_cutoff": CUTOFF,
            **defaults,
            **options,
        }
    )
    model = model_cls(decoder_cls(cfg, dictionary))
    for p in model.parameters():  # sharper than the paper's tiny init, so the clusters differ
        torch.nn.init.normal_(p, std=0.3)
    return model.eval()


class Task:
    def __init__(self, d):
        self.source_dictionary = self.target_dictionary = d


def sample_with_every_cluster_start(d):
    """Targets holding each cluster's first ids (8, 16) and ``c_k + pad`` (9, 17: the ids fairseq's
    adaptive_loss drops a term of), the last id, and a padded tail."""
    target = torch.tensor([[8, 9, 16, 17, len(d) - 1, 4, 12, 20], [5, 16, 9, 8, 30, d.pad(), d.pad(), d.pad()]])
    source = torch.cat([torch.full((2, 1), d.eos()), target[:, :-1]], 1).masked_fill(target.eq(d.pad()), d.pad())
    return {
        "net_input": {"src_tokens": source, "src_lengths": source.ne(d.pad()).sum(1)},
        "target": target,
        "ntokens": int(target.ne(d.pad()).sum()),
        "id": torch.arange(2),
    }


@pytest.mark.parametrize("untied", [False, True])
@pytest.mark.parametrize("name", list(MODELS))
def test_distribution_sums_to_one_and_the_loss_is_the_targets_nll(sorted_dictionary, name, untied):
    d = sorted_dictionary
    model = build(name, d, **(dict(adaptive_softmax_untied=True, adaptive_softmax_factor=2.0) if untied else {}))
    sample = sample_with_every_cluster_start(d)
    net_output = model(**sample["net_input"])
    log_p = model.get_normalized_probs(net_output, log_probs=True, sample=sample)  # a sample changes nothing
    torch.testing.assert_close(log_p.exp().sum(-1), torch.ones(2, 8), rtol=0, atol=1e-5)
    torch.testing.assert_close(log_p, model.get_normalized_probs(net_output, log_probs=True))
    target = sample["target"]
    hand = -log_p.gather(2, target.unsqueeze(-1)).squeeze(-1)[target.ne(d.pad())].double().sum()
    loss, _, logged = AttentionCrossEntropyCriterion(Task(d))(model, sample)
    assert float(logged["nll_loss"]) == pytest.approx(float(hand.detach()), rel=1e-5)
    loss.backward()  # the target-only path trains every parameter it reads
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
    # and the whole distribution can be back-propagated (dynamic evaluation needs it)
    model.zero_grad()
    model.get_normalized_probs(model(**sample["net_input"]), log_probs=True)[0, 0, 20].backward()
    assert model.decoder.embed_tokens.weight.grad.abs().sum() > 0


def test_the_tied_distribution_is_the_method_by_hand(sorted_dictionary):
    """p(w) = softmax(head)[w] in the head, softmax(head)[c_0 + k] * softmax(E_k h + b_k)[w] in tail k."""
    d = sorted_dictionary
    model = build("alm_lstm", d)
    tokens = torch.randint(d.nspecial, len(d), (2, 5))
    net_output = model(tokens)
    log_p = model.get_normalized_probs(net_output, log_probs=True)
    h = net_output[1]["features"].double()
    E, b = model.decoder.embed_tokens.weight.double(), model.decoder.output_bias.double()
    clusters = model.decoder.adaptive_softmax.clusters
    head = torch.softmax(
        torch.cat([h @ E[:8].t() + b[:8], h @ clusters.weight.double().t() + clusters.bias.double()], -1), -1
    )
    expected = torch.cat(
        [
            head[..., :8],
            head[..., 8:9] * torch.softmax(h @ E[8:16].t() + b[8:16], -1),
            head[..., 9:10] * torch.softmax(h @ E[16:].t() + b[16:], -1),
        ],
        -1,
    )
    torch.testing.assert_close(log_p.exp().double(), expected, rtol=1e-5, atol=1e-7)


def test_tied_by_default_untied_on_request(sorted_dictionary):
    d = sorted_dictionary

    def count(m):
        return sum(p.numel() for p in m.parameters())

    full = build("alm_lstm", d, adaptive_softmax_cutoff=None)
    tied, untied = build("alm_lstm", d), build("alm_lstm", d, adaptive_softmax_untied=True, adaptive_softmax_factor=2.0)
    assert count(tied) == count(full) + 2 * (12 + 1)  # one logit per tail cluster: U h + u
    assert count(untied) > count(tied) + (len(d) - 8) * 12 // 16  # the tails' own projections and words
    # a tail word's probability is read from its embedding row
    nll = -model_log_p(tied, d, 20)
    nll.backward()
    assert tied.decoder.embed_tokens.weight.grad[20].abs().sum() > 0
    nll = -model_log_p(untied, d, 20)
    nll.backward()
    assert untied.decoder.embed_tokens.weight.grad[20].abs().sum() == 0  # only as an input: not read


def model_log_p(model, d, word):
    tokens = torch.tensor([[d.eos(), 5, 6]])
    target = torch.tensor([[5, 6, word]])
    return model.decoder.target_log_probs(model(tokens), target)[0, -1]


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(adaptive_softmax_cutoff="8,48"), "every cutoff must lie below the dictionary's size (40"),
        (dict(adaptive_softmax_cutoff="16,8"), "must be positive and strictly increasing"),
        (dict(adaptive_softmax_cutoff="8,8"), "must be positive and strictly increasing"),
        (dict(adaptive_softmax_cutoff="8,x"), "expected comma-separated word ids"),
        (dict(adaptive_softmax_factor=2.0), "--adaptive-softmax-factor does nothing without --adaptive-softmax-untied"),
        (
            dict(adaptive_softmax_untied=True, adaptive_softmax_factor=0.0),
            "--adaptive-softmax-factor 0.0 is out of range",
        ),
        (
            dict(adaptive_softmax_cutoff=None, adaptive_softmax_untied=True),
            "--adaptive-softmax-untied does nothing without --adaptive-softmax-cutoff",
        ),
    ],
)
def test_bad_cutoffs_and_combinations_are_refused_by_name(sorted_dictionary, options, message):
    with pytest.raises(OptionError, match=message.replace("(", r"\(")):
        build("attentive_lm", sorted_dictionary, **options)


def test_a_dictionary_not_sorted_by_frequency_is_refused(sorted_dictionary):
    d = Dictionary()
    for word, count in (("common", 50), ("rare", 2), ("frequent", 40)):
        d.add_symbol(word, n=count)
    with pytest.raises(OptionError, match="lists 'rare' \\(count 2\\) before 'frequent' \\(count 40\\)"):
        build("alm_lstm", d, adaptive_softmax_cutoff="5")
    build("alm_lstm", sorted_dictionary)  # the zero-count madeupword padding at the end is fine


# ---------------------------------------------------------------- the real commands, tiny models

CLIPPED = [*ADAM24, "--clip-norm", "5", "--log-interval", "5"]
CUTOFFS = ["--adaptive-softmax-cutoff", "500,2000"]  # the sample's 6,208 ids: head 500, tails to 2,000 and the rest


@pytest.fixture(scope="module")
def short_test_data(tmp_path_factory):
    """The shipped sample with its test split cut to the first 60 lines (the whole training split)."""
    root = short_split(tmp_path_factory.mktemp("adaptive") / "data", 60, name="test", source="test")
    for suffix in ("bin", "idx"):
        shutil.copy(os.path.join(SAMPLE_DATA, f"train.{suffix}"), root)
    return root


@pytest.mark.parametrize(
    "arch, extra",
    [
        ("alm_lstm", []),
        ("attentive_lm", []),
        ("amsrn", []),
        ("pointer_sentinel_lm", ["--pointer-window", "10"]),
        ("alm_lstm", ["--adaptive-softmax-untied"]),
    ],
)
def test_train_then_eval_lm_equals_the_hand_computation(tmp_path, short_test_data, arch, extra):
    _, output = run(
        "train",
        short_test_data,
        *TRAIN_COMMON,
        "--arch",
        arch,
        *CLIPPED,
        *CUTOFFS,
        *extra,
        "--max-update",
        "15",
        "--save-dir",
        tmp_path,
    )
    losses = [float(r["loss"]) for r in json_records(output, "train_inner")]
    assert losses[-1] < losses[0] - 0.5, losses  # it learns on real text
    checkpoint = tmp_path / "checkpoint_last.pt"
    test_split = list(data_utils.load_indexed_dataset(os.path.join(short_test_data, "test"), None))
    nll, count = hand_computed_nll(checkpoint, test_split, limit=10**6)
    batching = ["--batch-size", "16"] + (["--softmax-batch", "100"] if arch == "alm_lstm" and not extra else [])
    _, output = run(
        "eval_lm",
        short_test_data,
        "--path",
        checkpoint,
        "--user-dir",
        "alm_plugin",
        "--task",
        "sentence_language_modeling",
        "--cpu",
        *batching,
    )
    loss_base2, _ = eval_lm_result(output)
    assert f"Evaluated {count:,} tokens" in output
    assert loss_base2 == pytest.approx(nll / count / math.log(2), abs=1e-3)
    if arch == "alm_lstm" and not extra:  # another cutoff than the checkpoint's is refused by name
        code, output = run(
            "eval_lm",
            short_test_data,
            "--path",
            checkpoint,
            "--user-dir",
            "alm_plugin",
            "--task",
            "sentence_language_modeling",
            "--cpu",
            "--model-overrides",
            "{'adaptive_softmax_cutoff': '1000'}",
            check=False,
        )
        assert code != 0 and refused(output, "fairseq-eval-lm", "trained with --adaptive-softmax-cutoff 500,2000")


@pytest.mark.parametrize(
    "options, message",
    [
        (["--adaptive-softmax-cutoff", "500,6208"], "every cutoff must lie below the dictionary's size (6208"),
        (["--adaptive-softmax-cutoff", "2000,500"], "strictly increasing"),
        (
            ["--adaptive-softmax-cutoff", "500", "--criterion", "cross_entropy"],
            "--criterion cross_entropy cannot train a model with --adaptive-softmax-cutoff",
        ),
        (
            ["--adaptive-softmax-cutoff", "500", "--criterion", "adaptive_loss"],
            "use --criterion attention_cross_entropy",
        ),
    ],
)
def test_fairseq_train_refuses_in_one_line_and_writes_nothing(tmp_path, options, message):
    code, output = run(
        "train",
        SAMPLE_DATA,
        *TRAIN_COMMON,
        "--arch",
        "alm_lstm",
        *CLIPPED,
        *options,
        "--max-update",
        "1",
        "--save-dir",
        tmp_path,
        check=False,
    )
    assert code != 0 and refused(output, "fairseq-train", message)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("name", ["alm_lstm", "pointer_sentinel_lm"])
def test_a_bfloat16_model_forms_its_distribution_in_float32(sorted_dictionary, name):
    model = build(name, sorted_dictionary).to(torch.bfloat16)
    tokens = torch.randint(4, len(sorted_dictionary), (2, 6))
    log_p = model.get_normalized_probs(model(tokens), log_probs=True)
    assert log_p.dtype == torch.float32
    torch.testing.assert_close(log_p.exp().sum(-1), torch.ones(2, 6), rtol=0, atol=1e-5)


def test_sampling_at_another_temperature_is_refused_where_fairseq_would_divide_the_features(sorted_dictionary):
    """fairseq's generator divides the decoder's first output by --temperature: the features of an
    adaptive model, the pointer's vocabulary logits before the mixture."""
    from argparse import Namespace

    from alm_plugin.options.adaptive_softmax import check_temperature

    full = build("alm_lstm", sorted_dictionary, adaptive_softmax_cutoff=None)
    check_temperature([full], Namespace(temperature=0.7))  # logits: dividing them is what temperature means
    for model in (
        build("alm_lstm", sorted_dictionary),
        build("pointer_sentinel_lm", sorted_dictionary, adaptive_softmax_cutoff=None),
    ):
        check_temperature([model], Namespace(temperature=1.0))
        with pytest.raises(OptionError, match="sample at --temperature 1"):
            check_temperature([model], Namespace(temperature=0.7))
