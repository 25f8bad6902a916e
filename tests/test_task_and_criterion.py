"""Sentence batching, and the criterion's figures against hand computations."""

import math

import numpy as np
import pytest
import torch
from cli import ADAM24, run
from conftest import SAMPLE_DATA, short_split
from fairseq import metrics
from fairseq.criterions.cross_entropy import CrossEntropyCriterion
from fairseq.data import MonolingualDataset

from alm_plugin.criterions.attention_cross_entropy import AttentionCrossEntropyCriterion
from alm_plugin.data.sentence_blocks import SentenceBlockDataset, sentence_piece_slices
from alm_plugin.models.attentive_lm import AttentiveLanguageModel, AttentiveLMConfig, AttentiveLMDecoder


def test_long_sentences_are_cut_into_pieces_and_nothing_is_dropped():
    sizes = np.array([5, 1, 12, 4])
    slices = sentence_piece_slices(sizes, 4)
    assert (slices[:, 1] - slices[:, 0]).tolist() == [4, 1, 1, 4, 4, 4, 4]
    covered = np.concatenate([np.arange(s, e) for s, e in slices])
    assert covered.tolist() == list(range(sizes.sum()))


def test_pieces_start_from_the_previous_token(dictionary):
    eos = dictionary.eos()
    words = [
        torch.tensor([4, 5, 6, 7, 8, eos]),
        torch.tensor([eos]),  # an empty line is just </s>
        torch.tensor([9, 10, 11, 12, 13, 14, 4, eos]),
    ]
    blocks = SentenceBlockDataset(words, np.array([len(w) for w in words]), 4, dictionary.pad(), eos)
    samples = [blocks[i] for i in range(len(blocks))]
    sources = [s[0].tolist() for s in samples]
    targets = [s[1].tolist() for s in samples]
    assert targets == [[4, 5, 6, 7], [8, eos], [eos], [9, 10, 11, 12], [13, 14, 4, eos]]
    assert sources == [[eos, 4, 5, 6], [7, 8], [eos], [eos, 9, 10, 11], [12, 13, 14, 4]]


def test_training_sentences_are_cut_but_valid_ones_scored_whole_by_default(sample_task):
    """Sentences are cut at --tokens-per-sample where fairseq's trainer loads a split to train on
    (it alone passes data_selector and tpu); a split scored, whatever its name (eval-lm
    --gen-subset train), is read whole: its figure does not depend on where a sentence is cut."""
    sample_task.args.eval_tokens_per_sample = 0
    sample_task.load_dataset("train", data_selector=None, tpu=False)  # as the trainer calls it
    sample_task.load_dataset("valid")
    train, valid = sample_task.dataset("train"), sample_task.dataset("valid")
    assert train.sizes.max() <= 10 and len(train) > len(train.dataset.dataset)
    assert len(valid) == len(valid.dataset.dataset) == 400 and valid.sizes.max() > 10
    sample_task.load_dataset("train")  # as fairseq-eval-lm --gen-subset train loads it: whole sentences
    scored = sample_task.dataset("train")
    assert len(scored) == len(scored.dataset.dataset) and scored.sizes.max() > 10


def test_task_keeps_every_token_of_the_real_sample(sample_task):
    sample_task.load_dataset("valid")
    dataset = sample_task.dataset("valid")
    assert isinstance(dataset, MonolingualDataset)
    raw = dataset.dataset.dataset  # the indexed sentences
    assert dataset.sizes.max() <= 10
    assert dataset.sizes.sum() == raw.sizes.sum() == 10341  # as counted by fairseq-preprocess, </s> included
    assert len(dataset) > len(raw)  # long sentences became several samples


def test_every_sample_is_batched_whatever_the_batch_size_multiple(sample_task):
    """fairseq-fixed drops a last batch that is not a multiple of 8: ours must not."""
    sample_task.load_dataset("test")
    dataset = sample_task.dataset("test")
    batches = sample_task.get_batch_iterator(dataset, max_sentences=32, required_batch_size_multiple=8)
    seen = [i for batch in batches.next_epoch_itr(shuffle=False) for i in batch["id"].tolist()]
    assert len(dataset) % 8 != 0 and sorted(seen) == list(range(len(dataset)))


def tiny_model(dictionary):
    cfg = AttentiveLMConfig(embed_dim=8, hidden_size=8, num_layers=1, dropout=0.0)
    model = AttentiveLanguageModel(AttentiveLMDecoder(cfg, dictionary)).eval()
    for p in model.parameters():
        torch.nn.init.normal_(p, std=0.5)
    return model


class FakeTask:
    def __init__(self, dictionary):
        self.source_dictionary = self.target_dictionary = dictionary


def make_sample(dictionary):
    eos, pad = dictionary.eos(), dictionary.pad()
    src = torch.tensor([[eos, 4, 5, 6], [7, 8, 9, pad]])  # a sentence start, a continuation piece
    tgt = torch.tensor([[4, 5, 6, eos], [8, 9, eos, pad]])
    return {
        "net_input": {"src_tokens": src, "src_lengths": torch.tensor([4, 3])},
        "target": tgt,
        "ntokens": 7,
        "id": torch.arange(2),
    }


def reduce(criterion_cls, logging_output):
    with metrics.aggregate() as agg:
        criterion_cls.reduce_metrics([logging_output])
        return agg.get_smoothed_values()


def test_paper_ppl_leaves_out_first_words_but_divides_by_them(dictionary):
    model, sample = tiny_model(dictionary), make_sample(dictionary)
    criterion = AttentionCrossEntropyCriterion(FakeTask(dictionary))
    loss, sample_size, log = criterion(model, sample)
    lprobs = model.get_normalized_probs(model(sample["net_input"]["src_tokens"]), log_probs=True)
    nll = -lprobs.gather(2, sample["target"][..., None])[..., 0]
    real = sample["target"].ne(dictionary.pad())
    total = nll[real].sum()
    torch.testing.assert_close(loss, total)
    values = reduce(AttentionCrossEntropyCriterion, log)
    assert values["ppl"] == pytest.approx(math.exp(total.item() / 7), rel=1e-3)
    # only row 0 starts a sentence: its first word is left out of the sum, not the count
    assert values["paper_ppl"] == pytest.approx(math.exp((total - nll[0, 0]).item() / 7), rel=1e-3)


def test_paper_ppl_leaves_out_the_first_word_of_every_sentence_in_a_sample(dictionary):
    """--sample-break-mode none|complete: several sentences per sample, each first word out."""
    model = tiny_model(dictionary)
    eos, pad = dictionary.eos(), dictionary.pad()
    src = torch.tensor([[eos, 4, 5, eos, 6, 7], [8, eos, 9, 10, pad, pad]])
    tgt = torch.tensor([[4, 5, eos, 6, 7, eos], [eos, 9, 10, eos, pad, pad]])
    sample = {
        "net_input": {"src_tokens": src, "src_lengths": torch.tensor([6, 4])},
        "target": tgt,
        "ntokens": 10,
        "id": torch.arange(2),
    }
    log = AttentionCrossEntropyCriterion(FakeTask(dictionary))(model, sample)[2]
    nll = -model.get_normalized_probs(model(src), log_probs=True).gather(2, tgt[..., None])[..., 0]
    total = nll[tgt.ne(pad)].sum()
    first_words = nll[0, 0] + nll[0, 3] + nll[1, 1]
    assert reduce(AttentionCrossEntropyCriterion, log)["paper_ppl"] == pytest.approx(
        math.exp((total - first_words).item() / 10), rel=1e-3
    )


def test_paper_ppl_of_a_translation_model_reads_the_target_side(dictionary):
    """The source sentence says nothing about where target sentences start."""
    model = tiny_model(dictionary)
    eos = dictionary.eos()
    prev = torch.tensor([[eos, 4, 5], [eos, 6, 7]])
    tgt = torch.tensor([[4, 5, eos], [6, 7, eos]])
    source = torch.tensor([[9, 10, eos], [8, 8, eos]])  # never starts with </s>
    sample = {
        "net_input": {"src_tokens": source, "src_lengths": torch.tensor([3, 3]), "prev_output_tokens": prev},
        "target": tgt,
        "ntokens": 6,
        "id": torch.arange(2),
    }

    class TranslationLike(torch.nn.Module):  # an LM reading prev_output_tokens as its input
        def __init__(self):
            super().__init__()
            self.lm = model

        def forward(self, src_tokens, src_lengths, prev_output_tokens):
            return self.lm(prev_output_tokens)

        def get_normalized_probs(self, *args, **kwargs):
            return self.lm.get_normalized_probs(*args, **kwargs)

        def get_targets(self, sample, net_output):
            return sample["target"]

    log = AttentionCrossEntropyCriterion(FakeTask(dictionary))(TranslationLike(), sample)[2]
    nll = -model.get_normalized_probs(model(prev), log_probs=True).gather(2, tgt[..., None])[..., 0]
    assert reduce(AttentionCrossEntropyCriterion, log)["paper_ppl"] == pytest.approx(
        math.exp((nll.sum() - nll[:, 0].sum()).item() / 6), rel=1e-3
    )


def test_weight_zero_is_fairseq_cross_entropy(dictionary):
    model, sample = tiny_model(dictionary), make_sample(dictionary)
    ours = AttentionCrossEntropyCriterion(FakeTask(dictionary))(model, sample)
    theirs = CrossEntropyCriterion(FakeTask(dictionary), sentence_avg=False)(model, sample)
    torch.testing.assert_close(ours[0], theirs[0])
    assert ours[1] == theirs[1]


class FixedAttentionModel(torch.nn.Module):
    """A model whose outputs and history attention are set by hand."""

    def __init__(self, logits, weights):
        super().__init__()
        self.logits, self.weights = torch.nn.Parameter(logits), weights

    def forward(self, src_tokens, src_lengths=None):
        return self.logits, {"attn": [None], "history_attn": [self.weights]}

    def get_normalized_probs(self, net_output, log_probs):
        return torch.log_softmax(net_output[0], -1)

    def get_targets(self, sample, net_output):
        return sample["target"]


def hand_made_attention():
    weights = torch.zeros(2, 4, 4)
    weights[:, 1, 0] = 1.0  # entropy 0
    weights[:, 2, :2] = 0.5  # ln 2
    weights[:, 3, :3] = torch.tensor([0.5, 0.25, 0.25])  # 1.5 ln 2
    return weights  # row 0: empty memory, entropy 0


@pytest.mark.parametrize("weight", [0.0, 0.7, -0.3])
def test_logged_entropy_and_regularised_loss_follow_the_formula(dictionary, weight):
    sample = make_sample(dictionary)
    model = FixedAttentionModel(torch.randn(2, 4, len(dictionary)), hand_made_attention())
    criterion = AttentionCrossEntropyCriterion(FakeTask(dictionary), attention_entropy_weight=weight)
    loss, _, log = criterion(model, sample)
    ln2 = math.log(2)
    # R = sum_s 1/|s| sum_{t in s} H(alpha_t); sentence 1 has 3 real tokens, so its step 3 is padding
    expected_r = (0 + ln2 + 1.5 * ln2) / 4 + (0 + ln2) / 3
    assert log["attn_entropy"].item() == pytest.approx(expected_r, rel=1e-5)
    assert loss.item() == pytest.approx(log["nll_loss"].item() + weight * expected_r, rel=1e-5)
    values = reduce(AttentionCrossEntropyCriterion, log)
    assert values["attn_entropy"] == pytest.approx(expected_r / 2, abs=1e-3)  # per sentence
    assert values["ppl"] == pytest.approx(2 ** (log["nll_loss"].item() / 7 / ln2), rel=1e-3)


def test_entropy_gradient_sharpens_or_smooths(dictionary):
    scores = torch.zeros(1, 3, requires_grad=True)
    weights = torch.softmax(scores + torch.tensor([[1.0, 0.0, 0.0]]), -1)
    from alm_plugin.criterions.attention_cross_entropy import attention_entropy

    attention_entropy(weights).sum().backward()
    # minimising entropy (lambda > 0) raises the already largest weight's score
    assert scores.grad[0, 0] < 0 < scores.grad[0, 1]


def test_entropy_gradient_is_finite_when_a_weight_underflows_to_zero():
    from alm_plugin.criterions.attention_cross_entropy import attention_entropy
    from alm_plugin.modules.history_attention import masked_softmax

    scores = torch.tensor([[[0.0, 200.0, -200.0, 5.0]]], requires_grad=True)  # exp(-400) == 0 in float32
    allowed = torch.tensor([[[True, True, True, False]]])
    weights = masked_softmax(scores, allowed)
    assert weights[0, 0, 0] == 0 and weights[0, 0, 2] == 0
    attention_entropy(weights).sum().backward()
    assert torch.isfinite(scores.grad).all()


def test_entropy_weight_on_a_model_without_attention_is_a_clear_error(dictionary):
    from fairseq.models.lstm import LSTMDecoder
    from fairseq.models.lstm_lm import LSTMLanguageModel

    model = LSTMLanguageModel(
        LSTMDecoder(dictionary, embed_dim=8, hidden_size=8, out_embed_dim=8, encoder_output_units=0, attention=False)
    )
    sample = make_sample(dictionary)
    loss, _, _ = AttentionCrossEntropyCriterion(FakeTask(dictionary))(model, sample)  # weight 0: fine
    assert torch.isfinite(loss)
    with pytest.raises(ValueError, match="needs a model that returns its history attention"):
        AttentionCrossEntropyCriterion(FakeTask(dictionary), attention_entropy_weight=0.1)(model, sample)


def test_entropy_weight_warns_when_the_best_checkpoint_follows_the_regularised_loss(dictionary, caplog):
    with caplog.at_level("WARNING"):
        AttentionCrossEntropyCriterion(FakeTask(dictionary), 0.5, best_checkpoint_metric="loss")
    assert "--best-checkpoint-metric nll_loss" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING"):
        AttentionCrossEntropyCriterion(FakeTask(dictionary), 0.5, best_checkpoint_metric="nll_loss")
        AttentionCrossEntropyCriterion(FakeTask(dictionary), 0.0, best_checkpoint_metric="loss")
    assert caplog.text == ""


# ---------------------------------------------------------------- rows of padding (streams that have ended)


@pytest.mark.parametrize("sentence_avg", [False, True])
def test_attn_entropy_and_sentence_avg_leave_out_rows_of_padding(dictionary, sentence_avg):
    """Two streams with words and three that have ended (rows of padding, as the document task hands
    them at 20 streams): the same figures as the two alone. Before: attn_entropy 2/5 of it, and
    --sentence-avg divided the loss by 5 rows."""
    from alm_plugin.models.attentive_lm import AttentiveLanguageModel, AttentiveLMConfig, AttentiveLMDecoder

    model = AttentiveLanguageModel(
        AttentiveLMDecoder(AttentiveLMConfig(embed_dim=8, hidden_size=8, num_layers=1, dropout=0.0), dictionary)
    ).eval()
    for p in model.parameters():
        torch.nn.init.normal_(p, std=0.5)
    eos, pad = dictionary.eos(), dictionary.pad()
    source = torch.tensor([[eos, 4, 5, 6], [7, 8, 9, 10]])
    target = torch.tensor([[4, 5, 6, eos], [8, 9, 10, pad]])
    ended = torch.full((3, 4), pad)

    def sample(src, tgt):
        return {
            "net_input": {"src_tokens": src, "src_lengths": tgt.ne(pad).sum(1)},
            "target": tgt,
            "ntokens": int(tgt.ne(pad).sum()),
            "nsentences": src.size(0),
            "id": torch.arange(src.size(0)),
        }

    criterion = AttentionCrossEntropyCriterion(
        FakeTask(dictionary), attention_entropy_weight=0.5, sentence_avg=sentence_avg
    )
    loss, size, log = criterion(model, sample(source, target))
    padded_loss, padded_size, padded_log = criterion(
        model, sample(torch.cat([source, ended]), torch.cat([target, ended]))
    )
    assert padded_size == size == (2 if sentence_avg else 7)
    torch.testing.assert_close(padded_loss, loss)
    expected, got = reduce(AttentionCrossEntropyCriterion, log), reduce(AttentionCrossEntropyCriterion, padded_log)
    assert expected["attn_entropy"] > 0.1
    assert got["attn_entropy"] == pytest.approx(expected["attn_entropy"], abs=1e-3)
    assert got["loss"] == pytest.approx(expected["loss"], abs=1e-3)


@pytest.fixture(scope="module")
def attentive_stream(tmp_path_factory):
    save = tmp_path_factory.mktemp("attentive_stream")
    run(
        "train",
        SAMPLE_DATA,
        "--user-dir",
        "alm_plugin",
        "--task",
        "document_language_modeling",
        "--cpu",
        "--no-progress-bar",
        "--num-workers",
        "0",
        "--arch",
        "attentive_lm",
        *ADAM24,
        "--memory-window",
        "20",
        "--batch-size",
        "10",
        "--tokens-per-sample",
        "35",
        "--max-update",
        "5",
        "--save-dir",
        save,
    )
    return save / "checkpoint_last.pt"


def test_fairseq_validate_logs_one_attn_entropy_at_every_batch_size(attentive_stream, tmp_path):
    """A 40-line split read as 1 and 20 streams: the same attn_entropy (before: 2.97 / 1.68, most of the
    20 streams' rows padding in the last chunks). The streams start from real context (item 1), so
    the attention memory the figure comes from is the same too."""
    data = short_split(tmp_path / "data", 40)
    figures = []
    for streams in (1, 20):
        _, output = run(
            "validate",
            data,
            "--path",
            attentive_stream,
            "--user-dir",
            "alm_plugin",
            "--task",
            "document_language_modeling",
            "--cpu",
            "--valid-subset",
            "valid",
            "--batch-size",
            streams,
        )
        summary = [line for line in output.splitlines() if "valid on 'valid' subset |" in line][-1]
        figures.append(float(summary.split("attn_entropy ")[1].split()[0]))
    assert figures[0] > 1.0
    assert all(abs(f / figures[0] - 1) < 0.03 for f in figures), figures


def test_corpus_order_trains_on_consecutive_sentences_the_same_every_epoch(sample_task, tmp_path):
    """--corpus-order (the released code's batches): a training batch is consecutive samples in
    the corpus's order, never shuffled; by default fairseq shuffles batches of like-length samples.
    The training split: the sample's first 200 lines."""
    sample_task.args.data = str(short_split(tmp_path / "data", 200, name="train", source="train"))

    def epochs(task, count=2):
        task.load_dataset("train", data_selector=None, tpu=False)
        iterator = task.get_batch_iterator(task.dataset("train"), max_sentences=8, seed=1)
        return [[batch["id"].tolist() for batch in iterator.next_epoch_itr(shuffle=True)] for _ in range(count)]

    sample_task.args.corpus_order = True
    first, second = epochs(sample_task)
    assert first == second and first[0] == list(range(8)) and first[1] == list(range(8, 16))
    sample_task.args.corpus_order = False
    first, second = epochs(sample_task)
    assert first != second and first[0] != list(range(8))
