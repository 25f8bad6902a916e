"""Streams (document_language_modeling): a split read as B streams whose state and memory carry across
chunks, as one stream read whole; every stream starts at a line end and, with --stream-burn-in,
reads the text's opening and its own past before it scores; fairseq-eval-lm, fairseq-train's
validation and alm-score agree with the one-stream reading and with hand computations."""

import os
import shutil

import pytest
import torch
from cli import TRAIN_COMMON, eval_lm_result, json_records, run, run_module
from conftest import SAMPLE_DATA, random_tokens, short_split
from fairseq.data import Dictionary
from test_document_context import CACHE, hand_cache, load, mean_nll_base2, pointer_decoder
from test_history_models import make_decoder

STREAM_COMMON = [*TRAIN_COMMON[:2], "--task", "document_language_modeling", *TRAIN_COMMON[4:]]


# ---------------------------------------------------------------- state and memory carried across chunks


WORD_MODELS = {
    "alm_lstm": dict(plain_lstm=True),
    "attentive single": dict(attention_score="single", memory_window=6),
    "attentive combined + sentinel": dict(attention_score="combined", memory_window=6, attention_sentinel=True),
    "amsrn tied": dict(memory_selection="tied", memory_window=6),
    "pointer_sentinel_lm": None,
}


def stream_log_probs(decoder, tokens, chunk, mode="eval"):
    """Feed ``tokens`` (B, T) as the chunks of B streams; the decoder carries its state."""
    out = []
    for start in range(0, tokens.size(1), chunk):
        piece = tokens[:, start : start + chunk]
        net = decoder(
            piece, stream_ids=torch.arange(tokens.size(0)), stream_positions=torch.full((tokens.size(0),), start)
        )
        out.append(decoder.get_normalized_probs(net, log_probs=True))
    return torch.cat(out, 1)


@pytest.mark.parametrize("name", list(WORD_MODELS))
def test_a_stream_read_in_chunks_equals_it_read_whole(dictionary, name):
    """The state and the last M memory states (and the pointer's words) carry across chunks."""
    decoder = (
        pointer_decoder(dictionary) if WORD_MODELS[name] is None else make_decoder(dictionary, **WORD_MODELS[name])
    )
    tokens = random_tokens(dictionary, 3, 20)
    whole = stream_log_probs(decoder, tokens, 20)
    for chunk in (1, 7):
        decoder.carry.reset()
        torch.testing.assert_close(stream_log_probs(decoder, tokens, chunk), whole, rtol=0, atol=2e-5)
    decoder.carry.reset()
    restarted = torch.cat(
        [
            stream_log_probs(decoder, tokens[:, :7], 7),
            decoder.get_normalized_probs(decoder(tokens[:, 7:]), log_probs=True),
        ],
        1,
    )
    assert not torch.allclose(restarted[:, 7:], whole[:, 7:], atol=1e-3)  # carrying does change the result


@pytest.mark.parametrize("name", ["attentive single", "alm_lstm"])
def test_validation_in_mid_epoch_leaves_the_training_streams_alone(dictionary, name):
    decoder = make_decoder(dictionary, **WORD_MODELS[name])
    tokens, other = random_tokens(dictionary, 2, 14), random_tokens(dictionary, 2, 14)
    decoder.train()  # dropout 0: the same numbers, but the training carry
    expected = stream_log_probs(decoder, tokens, 7)
    decoder.carry.reset()
    first = stream_log_probs(decoder, tokens[:, :7], 7)
    decoder.eval()
    stream_log_probs(decoder, other, 7)  # validation: its own streams from position 0
    decoder.train()
    second = decoder.get_normalized_probs(
        decoder(tokens[:, 7:], stream_ids=torch.arange(2), stream_positions=torch.full((2,), 7)), log_probs=True
    )
    torch.testing.assert_close(torch.cat([first, second], 1), expected, rtol=0, atol=1e-6)


# ------------------------------------------------- fairseq-train and fairseq-eval-lm on streams of the shipped sample


def test_stream_training_lowers_the_loss_on_real_text(stream_models):
    _, outputs = stream_models
    for arch, output in outputs.items():
        losses = [float(r["loss"]) for r in json_records(output, "train_inner")]
        assert len(losses) >= 5 and losses[-1] < 0.9 * losses[0], (arch, losses)


def test_training_says_what_its_validation_measures(stream_models):
    """The checkpoint fairseq-train picks is chosen on valid read as --batch-size streams: the log
    says so, and what eval-lm --batch-size 1 reads instead."""
    _, outputs = stream_models
    for output in outputs.values():
        assert (
            "'valid' is read as 10 streams, each but the first after reading up to 100 words before it (not "
            "scored); fairseq-eval-lm --batch-size 1 reads it as one stream" in output
        )


@pytest.fixture(scope="module")
def short_valid(tmp_path_factory):
    """The sample's dictionary and its valid split's first 80 lines (1,974 words): 57 chunks of 35."""
    return short_split(tmp_path_factory.mktemp("short_valid"), 80)


@pytest.fixture(scope="module")
def shorter_valid(tmp_path_factory):
    """The sample's dictionary and its valid split's first 40 lines (966 words): 28 chunks of 35."""
    return short_split(tmp_path_factory.mktemp("shorter_valid"), 40)


@pytest.mark.parametrize("arch", ["alm_lstm", "attentive_lm", "pointer_sentinel_lm"])
def test_stream_eval_lm_equals_one_pass_over_the_split_with_and_without_the_cache(stream_models, shorter_valid, arch):
    root, _ = stream_models
    checkpoint = root / arch / "checkpoint_last.pt"
    model, task = load(checkpoint, shorter_valid)
    words = task.load_words("valid")
    stream = torch.cat([words.new_tensor([task.dictionary.eos()]), words])
    with torch.no_grad():  # one forward pass over the whole split: no chunks, nothing carried
        net_output = model(stream[:-1].unsqueeze(0))
        out, extra = model.get_normalized_probs(net_output, log_probs=True), net_output[1]
    targets = stream[1:]
    plain = mean_nll_base2(torch.log_softmax(out[0].double(), -1).gather(1, targets.unsqueeze(1)))
    cached = mean_nll_base2(hand_cache(out[0], extra["features"][0], targets, 60, 0.4, 0.25))
    common = [
        shorter_valid,
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
    ]
    assert eval_lm_result(run("eval_lm", *common)[1])[0] == pytest.approx(plain, abs=2e-4)
    assert eval_lm_result(run("eval_lm", *common, *CACHE)[1])[0] == pytest.approx(cached, abs=2e-4)


# ---------------------------------------------------------------- where each stream starts, and the burn-in


@pytest.mark.parametrize("streams, shards", [(20, 1), (4, 1), (5, 2)])
def test_every_stream_starts_at_a_line_end_from_its_eos(streams, shards):
    """A fresh state's first input is ``</s>`` on every stream, as in the one-stream reading:
    a stream cut mid-sentence starts a state that an Adam-trained model never leaves (cut so,
    valid read 379 as one stream, 71,510 as 20). Every word is still a target exactly once, and the
    streams stay about equal."""
    from fairseq.data import data_utils

    from alm_plugin.data.word_streams import WordStreamDataset

    d = Dictionary.load(os.path.join(SAMPLE_DATA, "dict.txt"))
    lines = data_utils.load_indexed_dataset(os.path.join(SAMPLE_DATA, "valid"), d)
    words = torch.cat([lines[i] for i in range(len(lines))])
    shards_data = [WordStreamDataset(words, streams, 35, d.pad(), d.eos(), shard, shards) for shard in range(shards)]
    targets = []
    for data in shards_data:
        source = torch.cat([data[i]["source"] for i in range(len(data))], 1)
        target = torch.cat([data[i]["target"] for i in range(len(data))], 1)
        assert (source[:, 0] == d.eos()).all()
        lengths = target.ne(d.pad()).sum(1)
        assert lengths.max() <= 1.1 * words.numel() / (streams * shards)
        # each row is a run of whole lines of the text, in order
        targets += [row[row.ne(d.pad())] for row in target]
    torch.testing.assert_close(torch.cat(targets), words)


@pytest.mark.parametrize("streams, burn_in", [(20, 100), (4, 35), (7, 1000)])
def test_a_burnt_in_stream_reads_the_openings_and_its_own_past_before_it_scores(streams, burn_in):
    """With --stream-burn-in B every stream but the first reads, unscored, the text's opening lines
    and then its own text from the line start at or before B words back (a fresh state in
    mid-document can strand an Adam-trained model for good; the opening is where the one-stream
    reading starts fresh): every word is still scored exactly once, the neural cache remembers the
    burn-in but not the opening, and eval-lm's scorer is told where each row's scores begin."""
    from fairseq.data import data_utils

    from alm_plugin.data.word_streams import PREAMBLE, WordStreamDataset
    from alm_plugin.tasks.stream_task import WordStreamTask

    d = Dictionary.load(os.path.join(SAMPLE_DATA, "dict.txt"))
    lines = data_utils.load_indexed_dataset(os.path.join(SAMPLE_DATA, "valid"), d)
    words = torch.cat([lines[i] for i in range(len(lines))])
    data = WordStreamDataset(words, streams, 35, d.pad(), d.eos(), burn_in=burn_in)
    plain = WordStreamDataset(words, streams, 35, d.pad(), d.eos())
    chunks = [data[i] for i in range(len(data))]
    source = torch.cat([c["source"] for c in chunks], 1)
    target, read = torch.cat([c["target"] for c in chunks], 1), torch.cat([c["read_target"] for c in chunks], 1)
    scored = [row[row.ne(d.pad())] for row in target]
    torch.testing.assert_close(torch.cat(scored), words)  # each word once, in order
    plain_target = torch.cat([plain[i]["target"] for i in range(len(plain))], 1)
    assert all(torch.equal(a, b[b.ne(d.pad())]) for a, b in zip(scored, plain_target))  # the same rows scored
    stream = torch.cat([words.new_tensor([d.eos()]), words])
    line_starts = (words == d.eos()).nonzero().flatten() + 1
    opening = int(line_starts[line_starts >= PREAMBLE][0])  # the opening's inputs: stream[:opening]
    for r in range(1, streams):
        first = int(target[r].ne(d.pad()).nonzero()[0])  # the column of its first scored word
        start = int((torch.cumsum(torch.tensor([len(s) for s in scored]), 0) - len(scored[r]))[r])
        begin = start - (first - opening)
        assert torch.equal(source[r, :opening], stream[:opening])  # the text's opening, from its </s>
        assert torch.equal(source[r, opening : first + 1], stream[begin : start + 1])  # then its own text ...
        assert start - begin >= min(burn_in, start - opening) and stream[begin] == d.eos()  # ... from a line start
        assert read[r, : opening - 1].eq(d.pad()).all() and torch.equal(
            read[r, opening:first], stream[begin + 1 : start + 1]
        )
    assert torch.equal(source[0, : len(scored[0])], stream[: len(scored[0])])  # the first starts the text, fresh
    task = WordStreamTask.__new__(WordStreamTask)
    task.dictionary = d
    for item in chunks[:5]:
        sample = task.collate([item])
        for row, begin in zip(sample["target"], sample["start_indices"]):
            assert row[:begin].eq(d.pad()).all() and (begin == len(row) or row[begin] != d.pad())


def test_eval_lm_on_burnt_in_streams_equals_the_hand_computation_and_the_one_stream_figure(stream_models, short_valid):
    """fairseq-eval-lm --batch-size 4 scores each stream's words after its burn-in and nothing else:
    the hand computation reads each row whole (the opening, its own past, then its words) in one
    pass and sums log p over the scored words; eval-lm at 4 streams gives the one-stream figure
    (streams started fresh read 0.3-26% off it), and so does fairseq-train's validation (10 streams
    of the whole valid split)."""
    from alm_plugin.data.word_streams import WordStreamDataset

    root, outputs = stream_models
    checkpoint = root / "attentive_lm" / "checkpoint_last.pt"
    model, task = load(checkpoint, short_valid)
    d = task.dictionary
    data = WordStreamDataset(task.load_words("valid"), 4, 35, d.pad(), d.eos(), burn_in=100)
    source = torch.cat([data[i]["source"] for i in range(len(data))], 1)
    target = torch.cat([data[i]["target"] for i in range(len(data))], 1)
    log_p = []
    with torch.no_grad():
        for row, targets in zip(source, target):
            scored = targets.ne(d.pad())
            length = int(scored.nonzero().max()) + 1  # the row up to its last scored word, read in one pass
            out = model.get_normalized_probs(model(row[:length].unsqueeze(0)), log_probs=True)[0]
            log_p.append(out.gather(1, targets[:length].unsqueeze(1)).squeeze(1)[scored[:length]])
    hand = mean_nll_base2(torch.cat(log_p).double())
    common = [
        "--user-dir",
        "alm_plugin",
        "--task",
        "document_language_modeling",
        "--path",
        checkpoint,
        "--gen-subset",
        "valid",
        "--cpu",
        "--tokens-per-sample",
        "35",
        "--stream-burn-in",
        "100",
    ]
    four = eval_lm_result(run("eval_lm", short_valid, *common, "--batch-size", "4")[1])[0]
    assert four == pytest.approx(hand, abs=2e-4)
    one = eval_lm_result(run("eval_lm", short_valid, *common, "--batch-size", "1")[1])[0]
    assert four == pytest.approx(one, rel=5e-4)
    whole = eval_lm_result(run("eval_lm", SAMPLE_DATA, *common, "--batch-size", "1")[1])[0]
    validated = float(json_records(outputs["attentive_lm"], "valid")[-1]["valid_nll_loss"])  # 10 streams, update 40
    assert validated == pytest.approx(whole, rel=5e-4)
    # with the neural cache each stream's past is at least its window: its cache holds what one stream's would
    cached = [
        eval_lm_result(
            run("eval_lm", short_valid, *common, "--batch-size", streams, *CACHE, "--stream-burn-in", "30")[1]
        )[0]
        for streams in ("1", "4")
    ]
    assert cached[1] == pytest.approx(cached[0], rel=5e-4) and cached[0] < one


# ---------------------------------------------------------------- any split, refusals, an Adam model


def test_a_split_named_train_is_scored_as_any_split_is(stream_models, tmp_path):
    """Only fairseq's trainer reads a split as training does: fairseq-eval-lm --gen-subset train
    with dynamic evaluation reads it as one stream of --dynamic-eval-segment words, as it reads
    valid, whatever --tokens-per-sample (a reading that ignored the segment gave 224.14 / 218.65 /
    204.26 at --tokens-per-sample 35 / 20 / 7)."""
    root, _ = stream_models
    data = short_split(tmp_path / "db", 20, name="train")  # valid's first 20 lines under both names
    short_split(data, 20)
    common = [
        data,
        "--user-dir",
        "alm_plugin",
        "--task",
        "document_language_modeling",
        "--path",
        root / "alm_lstm" / "checkpoint_last.pt",
        "--cpu",
        "--batch-size",
        "4",
        "--dynamic-eval-lr",
        "0.3",
    ]

    def figure(*more):
        return eval_lm_result(run("eval_lm", *common, *more)[1])[1]

    valid = figure("--gen-subset", "valid")
    assert figure("--gen-subset", "train", "--tokens-per-sample", "7") == figure("--gen-subset", "train") == valid
    assert figure("--gen-subset", "train", "--dynamic-eval-segment", "5") != valid  # the segment is read


def test_stream_reading_refusals(stream_models, tmp_path):
    """--num-shards on the document task (each shard scored the whole split), a negative burn-in, an
    empty split (fairseq's 'cannot mmap an empty file' traceback), rms dynamic evaluation of a
    stream model in alm-score and alm-cache-grid (a traceback: the task's options held no segment)."""
    root, _ = stream_models
    checkpoint = root / "alm_lstm" / "checkpoint_last.pt"
    common = ["--user-dir", "alm_plugin", "--task", "document_language_modeling", "--path", checkpoint, "--cpu"]
    code, output = run(
        "eval_lm", SAMPLE_DATA, *common, "--gen-subset", "valid", "--batch-size", "2", "--num-shards", "2", check=False
    )
    assert code != 0 and "--num-shards 2: the streams of a split are read in one process; drop" in output
    code, output = run(
        "eval_lm",
        SAMPLE_DATA,
        *common,
        "--gen-subset",
        "valid",
        "--batch-size",
        "2",
        "--stream-burn-in",
        "-1",
        check=False,
    )
    assert code != 0 and "--stream-burn-in -1: the words a stream reads before it scores must be 0 or more" in output
    empty = short_split(tmp_path / "empty", 0)  # valid.bin empty, as fairseq-preprocess writes an empty text
    code, output = run("eval_lm", empty, *common, "--gen-subset", "valid", "--batch-size", "2", check=False)
    assert code != 0 and "the 'valid' split in" in output and "holds no line (valid.bin is empty)" in output
    assert "Traceback" not in output
    text = tmp_path / "text.txt"
    text.write_text("the game was released in japan .\n" * 3)
    short = short_split(tmp_path / "short", 20)  # the sample's training split, valid's first 20 lines
    for name in ("train.bin", "train.idx"):
        shutil.copy(os.path.join(SAMPLE_DATA, name), short)
    rms = ["--dynamic-eval-lr", "0.01", "--dynamic-eval-rule", "rms", "--dynamic-eval-stats-batches", "2"]
    code, out, err = run_module("alm_plugin.cli.score", "--path", checkpoint, "--data", short, "--cpu", *rms, text)
    assert code == 0 and "ppl" in out, out + err
    code, out, err = run_module(
        "alm_plugin.cli.cache_grid",
        "--path",
        checkpoint,
        "--data",
        short,
        "--cpu",
        "--windows",
        "10",
        "--dynamic-lrs",
        "0.01",
        "--dynamic-decays",
        "0",
        "--dynamic-rule",
        "rms",
    )
    assert code == 0 and "best:" in out, out + err


def test_an_adam_model_scores_as_many_streams_as_it_does_as_one(tmp_path):
    """Streams started fresh misread an Adam-trained model: amsrn_small after 30 Adam updates reads
    valid's first 200 lines 2.5% off its one-stream figure on 20 fresh streams (--stream-burn-in 0).
    Every stream reads the text's opening and its own past before it scores: fairseq-train's
    validation (20 streams) and eval-lm at 20 streams give the one-stream figure."""
    data = short_split(tmp_path / "data", 200)  # the sample's training split, valid's first 200 lines
    for name in ("train.bin", "train.idx"):
        shutil.copy(os.path.join(SAMPLE_DATA, name), data)
    _, output = run(
        "train",
        data,
        *STREAM_COMMON,
        "--arch",
        "amsrn_small",
        "--memory-window",
        "20",
        "--batch-size",
        "20",
        "--tokens-per-sample",
        "35",
        "--clip-norm",
        "5",
        "--optimizer",
        "adam",
        "--lr",
        "0.01",
        "--seed",
        "2",
        "--max-update",
        "30",
        "--save-dir",
        tmp_path / "save",
        "--no-epoch-checkpoints",
        "--criterion",
        "attention_cross_entropy",
    )
    common = [
        data,
        "--user-dir",
        "alm_plugin",
        "--task",
        "document_language_modeling",
        "--path",
        tmp_path / "save" / "checkpoint_last.pt",
        "--gen-subset",
        "valid",
        "--cpu",
    ]
    one = eval_lm_result(run("eval_lm", *common, "--batch-size", "1")[1])[0]
    assert eval_lm_result(run("eval_lm", *common, "--batch-size", "20")[1])[0] == pytest.approx(one, rel=5e-4)
    assert float(json_records(output, "valid")[-1]["valid_nll_loss"]) == pytest.approx(one, rel=5e-4)
