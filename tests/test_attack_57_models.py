"""Issue 57, item 2, cases c, d, e and g (the models' side): what an attack of the new surfaces found,
each now computed right or refused in one line (naming the problem and the fix, a non-zero exit,
nothing written).

c. attn_entropy on the document task was averaged over stream rows that are all padding (a stream
   that has ended): fairseq-validate gave 2.369 / 1.185 / 0.118 at --batch-size 1 / 2 / 20 for one
   model and split. Now per row that holds a scored token (and --sentence-avg divides by those rows).
d. Untied adaptive-softmax tails of width 0 (d // factor^k = 0) trained with rc 0; cutoffs 1,2,3 put
   <pad> and </s> into one-word clusters. Both refused by name.
e. Dynamic evaluation over texts shorter than the check's 20 segments was never checked (alm-score
   over 30 files of 10 lines at lr 0.3: 237.62 against 173.92 static, rc 0): the run's texts are
   now checked together, as one text over the same lines is.
g. Tracebacks: --fp16 on the CPU (fairseq's "Torch not compiled with CUDA enabled"); an empty split
   on the sentence task ("cannot mmap an empty file", then "Exception ignored"); the GPU benchmarks
   dynamic_speed.py / step_profile.py on a machine without a GPU.
"""
import os
import runpy
import shutil
import sys

import pytest
import torch
from fairseq import metrics
from fairseq.data import Dictionary, data_utils, indexed_dataset

from alm_plugin.criterions.attention_cross_entropy import AttentionCrossEntropyCriterion
from alm_plugin.errors import OptionError
from cli import TRAIN_COMMON, run, run_module
from conftest import ROOT, SAMPLE_DATA
from test_refusals import last_line, refused

TINY = ["--embed-dim", "24", "--hidden-size", "24", "--num-layers", "1", "--criterion", "attention_cross_entropy",
        "--optimizer", "adam", "--lr", "0.01", "--batch-size", "32", "--no-epoch-checkpoints", "--disable-validation",
        "--seed", "1"]


def short_split(root, lines, name="valid"):
    """``root`` with the sample's dictionary and a ``name`` split of the valid split's first ``lines``
    lines (0: a split binarised from an empty text, whose .bin is empty, as fairseq-preprocess writes it)."""
    os.makedirs(root, exist_ok=True)
    shutil.copy(os.path.join(SAMPLE_DATA, "dict.txt"), root)
    d = Dictionary.load(os.path.join(SAMPLE_DATA, "dict.txt"))
    valid = data_utils.load_indexed_dataset(os.path.join(SAMPLE_DATA, "valid"), d)
    builder = indexed_dataset.make_builder(os.path.join(root, f"{name}.bin"), impl="mmap", vocab_size=len(d))
    for i in range(lines):
        builder.add_item(valid[i])
    builder.finalize(os.path.join(root, f"{name}.idx"))
    return root


@pytest.fixture(scope="module")
def sentence_model(tmp_path_factory):
    """alm_lstm, 30 updates on the sample (Adam): lr 3 dynamic evaluation makes it far worse."""
    save = tmp_path_factory.mktemp("sentence_model")
    run("train", SAMPLE_DATA, *TRAIN_COMMON, "--arch", "alm_lstm", *TINY, "--max-update", "30", "--save-dir", save)
    return save / "checkpoint_last.pt"


# ---------------------------------------------------------------- c. attn_entropy over real rows

def reduced(logging_output):
    with metrics.aggregate() as agg:
        AttentionCrossEntropyCriterion.reduce_metrics([logging_output])
        return agg.get_smoothed_values()


class Task:
    def __init__(self, d):
        self.source_dictionary = self.target_dictionary = d


@pytest.mark.parametrize("sentence_avg", [False, True])
def test_attn_entropy_and_sentence_avg_leave_out_rows_of_padding(dictionary, sentence_avg):
    """Two streams with words and three that have ended (rows of padding, as the document task hands
    them at 20 streams): the same figures as the two alone. Before: attn_entropy 2/5 of it, and
    --sentence-avg divided the loss by 5 rows."""
    from alm_plugin.models.attentive_lm import AttentiveLanguageModel, AttentiveLMConfig, AttentiveLMDecoder
    model = AttentiveLanguageModel(AttentiveLMDecoder(AttentiveLMConfig(embed_dim=8, hidden_size=8, num_layers=1,
                                                                        dropout=0.0), dictionary)).eval()
    for p in model.parameters():
        torch.nn.init.normal_(p, std=0.5)
    eos, pad = dictionary.eos(), dictionary.pad()
    source = torch.tensor([[eos, 4, 5, 6], [7, 8, 9, 10]])
    target = torch.tensor([[4, 5, 6, eos], [8, 9, 10, pad]])
    ended = torch.full((3, 4), pad)

    def sample(src, tgt):
        return {"net_input": {"src_tokens": src, "src_lengths": tgt.ne(pad).sum(1)}, "target": tgt,
                "ntokens": int(tgt.ne(pad).sum()), "nsentences": src.size(0), "id": torch.arange(src.size(0))}

    criterion = AttentionCrossEntropyCriterion(Task(dictionary), attention_entropy_weight=0.5,
                                               sentence_avg=sentence_avg)
    loss, size, log = criterion(model, sample(source, target))
    padded_loss, padded_size, padded_log = criterion(model, sample(torch.cat([source, ended]),
                                                                   torch.cat([target, ended])))
    assert padded_size == size == (2 if sentence_avg else 7)
    torch.testing.assert_close(padded_loss, loss)
    expected, got = reduced(log), reduced(padded_log)
    assert expected["attn_entropy"] > 0.1
    assert got["attn_entropy"] == pytest.approx(expected["attn_entropy"], abs=1e-3)
    assert got["loss"] == pytest.approx(expected["loss"], abs=1e-3)


@pytest.fixture(scope="module")
def attentive_stream(tmp_path_factory):
    save = tmp_path_factory.mktemp("attentive_stream")
    run("train", SAMPLE_DATA, "--user-dir", "alm_plugin", "--task", "document_language_modeling", "--cpu",
        "--no-progress-bar", "--num-workers", "0", "--arch", "attentive_lm", *TINY, "--memory-window", "20",
        "--batch-size", "10", "--tokens-per-sample", "35", "--max-update", "5", "--save-dir", save)
    return save / "checkpoint_last.pt"


def test_fairseq_validate_logs_one_attn_entropy_at_every_batch_size(attentive_stream, tmp_path):
    """A 40-line split read as 1 and 20 streams: the same attn_entropy (before: 2.97 / 1.68, most of the
    20 streams' rows padding in the last chunks). The streams start from real context (item 1), so
    the attention memory the figure comes from is the same too."""
    data = short_split(tmp_path / "data", 40)
    figures = []
    for streams in (1, 20):
        _, output = run("validate", data, "--path", attentive_stream, "--user-dir", "alm_plugin", "--task",
                        "document_language_modeling", "--cpu", "--valid-subset", "valid", "--batch-size", streams)
        summary = [line for line in output.splitlines() if "valid on 'valid' subset |" in line][-1]
        figures.append(float(summary.split("attn_entropy ")[1].split()[0]))
    assert figures[0] > 1.0
    assert all(abs(f / figures[0] - 1) < 0.03 for f in figures), figures


# ---------------------------------------------------------------- d. adaptive-softmax clusters

SENTENCE_TRAIN = [SAMPLE_DATA, *TRAIN_COMMON, "--criterion", "attention_cross_entropy", "--optimizer", "adam",
                  "--lr", "0.01", "--batch-size", "32", "--max-update", "1", "--disable-validation"]


@pytest.mark.parametrize("options, message", [
    (["--arch", "alm_lstm", "--embed-dim", "32", "--hidden-size", "32", "--adaptive-softmax-untied",
      "--adaptive-softmax-factor", "8", "--adaptive-softmax-cutoff", "1000,3000"],
     "tail 2 of 2 (--adaptive-softmax-cutoff 1000,3000) would project the decoder's 32-dimensional output "
     "(--embed-dim) to 32 // 8^2 = 0 dimensions, so its words would ignore the context: use "
     "--adaptive-softmax-factor 5.65 or less, at most 1 cutoff at this factor, or a larger --embed-dim"),
    (["--arch", "alm_lstm", "--num-layers", "1", "--adaptive-softmax-untied",  # 650 wide, factor 4
      "--adaptive-softmax-cutoff", "100,200,400,800,1600"],
     "tail 5 of 5 (--adaptive-softmax-cutoff 100,200,400,800,1600) would project the decoder's 650-dimensional "
     "output (--embed-dim) to 650 // 4^5 = 0 dimensions"),
    (["--arch", "alm_lstm", *TINY[:6], "--adaptive-softmax-cutoff", "1,2,3"],
     "--adaptive-softmax-cutoff 1,2,3: a head ending at id 1 puts special symbols (ids 0-3: <s>, <pad>, </s>, "
     "<unk>; </s> ends every line) into tail clusters: start the cutoffs above 4"),
    (["--arch", "attentive_lm", *TINY[:6], "--adaptive-softmax-cutoff", "4,1000"],
     "a head ending at id 4 gives the head the 4 special symbols and no word: start the cutoffs above 4"),
])
def test_adaptive_softmax_clusters_that_cannot_work_are_refused_before_training(tmp_path, options, message):
    """Before: rc 0, a (0, 32) projection (the last 3,208 words scored without the context), or
    <pad> and </s> each a cluster of its own."""
    code, output = run("train", *SENTENCE_TRAIN, *options, "--save-dir", tmp_path, check=False)
    assert code == 1 and refused(output, "fairseq-train", message)
    assert not list(tmp_path.iterdir())


def test_the_first_cutoff_above_the_special_symbols_and_wide_enough_tails_build(dictionary):
    from alm_plugin.modules.adaptive_softmax import check_clusters
    check_clusters([5, 8], 4, 32)  # the head: the special symbols and one word
    check_clusters([1000, 3000], 4, 32, untied=True, factor=5.65)  # 32 // 5.65^2 = 1
    check_clusters([100, 200, 400, 800], 4, 650, untied=True)  # 650 // 4^4 = 2
    with pytest.raises(OptionError, match="32 // 5.66\\^2 = 0 dimensions"):
        check_clusters([1000, 3000], 4, 32, untied=True, factor=5.66)


# ---------------------------------------------------------------- e. dynamic evaluation over short texts

def test_short_texts_are_checked_together_as_one_text_is():
    """Texts of 10 segments, each from the trained weights (alm-score's files, hub calls): none reaches
    the check's 20 segments alone; together they are checked as one text of the same segments is
    (tests/test_dynamic_evaluation.py: one text, stopped at its 20th). Before: no check at all."""
    from alm_plugin.modules.dynamic_evaluation import DynamicEvalSettings, DynamicEvaluator
    from test_adaptive_softmax import build
    from test_dynamic_evaluation import random_segments, segment_log_probs
    d, segments = random_segments(seed=1, length=10, count=30)
    torch.manual_seed(0)
    model = build("alm_lstm", d, adaptive_softmax_cutoff=None)
    model.dynamic_eval = DynamicEvaluator(model, DynamicEvalSettings(18.0, 0.0, "sgd", 2e-5, 20, 1))
    with pytest.raises(OptionError, match=r"made the model worse: over texts 1-2 \(each from the trained weights\) "
                                          r"the 20 segments scored at the trained weights too average [\d.]+ nats a "
                                          r"token adapted against [\d.]+ \(perplexity x[\d.]+\): lower "
                                          r"--dynamic-eval-lr or raise --dynamic-eval-decay"):
        with torch.no_grad():
            for text in range(3):
                model.start_text()
                segment_log_probs(model, segments[10 * text: 10 * text + 10], None)
    model.start_text()
    # a gentle lr over short texts: no refusal, each text from the trained weights, the run's count kept
    model.dynamic_eval = DynamicEvaluator(model, DynamicEvalSettings(0.01, 0.0, "sgd", 2e-5, 20, 1))
    trained = [p.detach().clone() for p in model.parameters()]
    with torch.no_grad():
        for text in range(3):
            model.start_text()
            for p, q in zip(model.parameters(), trained):
                torch.testing.assert_close(p, q)
            segment_log_probs(model, segments[4 * text: 4 * text + 4], None)
    assert model.dynamic_eval.earlier_texts == 2 and model.dynamic_eval.earlier_shadowed == 8


@pytest.fixture(scope="module")
def ten_line_texts(tmp_path_factory):
    root = tmp_path_factory.mktemp("texts")
    d = Dictionary.load(os.path.join(SAMPLE_DATA, "dict.txt"))
    lines = data_utils.load_indexed_dataset(os.path.join(SAMPLE_DATA, "valid"), d)
    files = []
    for text in range(3):
        files.append(root / f"text{text}.txt")
        files[-1].write_text("".join(d.string(lines[i]) + "\n" for i in range(10 * text, 10 * text + 10)),
                             encoding="utf-8")
    return files


def test_alm_score_over_many_short_files_is_stopped_where_it_makes_the_model_worse(sentence_model, ten_line_texts):
    """Before: ppl 7,086.69 against 302.35 static, rc 0 (each file 10 lines, below the check's 20)."""
    code, out, err = run_module("alm_plugin.cli.score", "--path", sentence_model, "--dynamic-eval-lr", "3",
                                *ten_line_texts)
    assert code == 1 and refused(err, "alm-score", "dynamic evaluation made the model worse: over texts 1-2")
    assert out == ""  # no row: no figure for part of the texts


# ---------------------------------------------------------------- g. tracebacks

def test_fp16_on_the_cpu_is_refused_in_one_line(tmp_path):
    """Before: fairseq's FP16Optimizer asked CUDA for its float32 copy: 'Torch not compiled with CUDA
    enabled' (a traceback), on a machine without a GPU as with --cpu."""
    code, output = run("train", *SENTENCE_TRAIN, "--arch", "alm_lstm", *TINY[:6], "--fp16",
                       "--save-dir", tmp_path, check=False)
    assert code == 1 and refused(output, "fairseq-train", "--fp16: fairseq's float16 training keeps a float32 copy of "
                                                          "the weights on the GPU, and this run trains on the CPU")
    assert "drop --fp16" in output and not list(tmp_path.iterdir())


EMPTY = "the 'valid' split in {} holds no line (valid.bin is empty): binarise a text of at least one line"


@pytest.mark.parametrize("tool", ["eval_lm", "validate", "alm-cache-grid"])
def test_an_empty_split_of_the_sentence_task_is_refused_by_name(sentence_model, tmp_path, tool):
    """Before: 'cannot mmap an empty file' (a traceback in eval-lm, a line naming no split in the tools),
    then an 'Exception ignored' traceback from fairseq's MMapIndexedDataset.__del__."""
    data = short_split(tmp_path / "empty", 0)
    assert os.path.getsize(data / "valid.bin") == 0
    if tool == "alm-cache-grid":
        code, _, output = run_module("alm_plugin.cli.cache_grid", "--path", sentence_model, "--data", data,
                                     "--gen-subset", "valid", "--cpu")
        name = "alm-cache-grid"
    else:
        subset = "--gen-subset" if tool == "eval_lm" else "--valid-subset"
        code, output = run(tool, data, "--path", sentence_model, "--user-dir", "alm_plugin", "--task",
                           "sentence_language_modeling", "--cpu", subset, "valid", "--batch-size", "8", check=False)
        name = f"fairseq-{tool.replace('_', '-')}"
    assert code == 1 and refused(output, name, EMPTY.format(data))
    assert "Exception ignored" not in output and "mmap" not in output


@pytest.mark.parametrize("script", ["dynamic_speed.py", "step_profile.py"])
@pytest.mark.parametrize("flags", [[], ["--device", "cuda"]], ids=["default", "cuda"])
def test_the_gpu_benchmarks_on_a_machine_without_a_gpu_say_so_in_one_line(monkeypatch, capsys, script, flags):
    """Before: dynamic_speed.py / step_profile.py --device cuda died in torch's CUDA assertion (and
    without --device they measured the CPU under a GPU benchmark's name). Run as a machine without a
    GPU sees torch (in this process: no benchmark starts on a machine with one)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "argv", [script, *flags])
    with pytest.raises(SystemExit) as exit:
        runpy.run_path(os.path.join(ROOT, "benchmarks", "gpu", script), run_name="__main__")
    err = capsys.readouterr().err
    assert exit.value.code == 2 and len(err.strip().splitlines()) == 1, err
    assert last_line(err) == (f"{script}: error: --device cuda (the default): this benchmark needs a GPU and torch "
                              "sees none: run it on a GPU machine, or pass --device cpu for a quick look here")
