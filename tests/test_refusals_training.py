"""fairseq-train refuses what cannot train, in one line naming the problem and the fix: no traceback,
a non-zero exit, nothing written. Sample lengths, sizes out of range, adaptive-softmax clusters,
precisions the CPU has not, a model and a task that do not fit, a --save-dir through a file, a
negative --stream-burn-in."""

import hashlib
import os

import pytest
from cli import ADAM24, TINY, TRAIN_COMMON, last_line, refused, run
from conftest import SAMPLE_DATA

from alm_plugin.errors import OptionError

# ---------------------------------------------------------------- sample lengths


@pytest.mark.parametrize("mode, tokens", [("eos", "-3"), ("none", "0")])  # one check, whatever the mode
def test_the_sentence_task_refuses_samples_of_no_tokens(tmp_path, mode, tokens):
    """Samples of no tokens are refused: eos keeps cutting long training sentences, none never divides by zero."""
    code, output = run(
        "train",
        SAMPLE_DATA,
        *TRAIN_COMMON,
        "--arch",
        "alm_lstm",
        *TINY,
        "--max-update",
        "1",
        "--sample-break-mode",
        mode,
        "--tokens-per-sample",
        tokens,
        "--save-dir",
        tmp_path,
        check=False,
    )
    assert code != 0 and refused(
        output, "fairseq-train", f"--tokens-per-sample {tokens}: a training sample holds at least 1 token"
    )
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("tokens", ["0"])
def test_open_vocabulary_chunks_of_no_words(tmp_path, tokens):
    code, output = run(
        "train",
        SAMPLE_DATA,
        "--user-dir",
        "alm_plugin",
        "--cpu",
        "--task",
        "open_vocabulary_language_modeling",
        "--batch-size",
        "4",
        "--arch",
        "hclm_small",
        "--tokens-per-sample",
        tokens,
        "--max-update",
        "1",
        "--save-dir",
        tmp_path,
        check=False,
    )
    assert code != 0 and f"--tokens-per-sample {tokens}: the words per chunk" in last_line(output)


# ---------------------------------------------------------------- sizes out of range


@pytest.mark.parametrize(
    "arch, options, message",
    [
        # before: torch's negative-dimension traceback
        ("attentive_lm", ["--attention-dim", "-4"], "--attention-dim -4 is out of range: it must be at least 0"),
        # before: a ValueError traceback from the attention module
        ("attentive_lm", ["--memory-window", "-1"], "--memory-window -1 is out of range: it must be at least 0"),
        ("amsrn", ["--memory-window", "-2"], "--memory-window -2 is out of range: it must be at least 0"),
        ("alm_lstm", ["--num-layers", "0"], "--num-layers 0 is out of range: it must be at least 1"),
        # a named size overridden
        (
            "attentive_lm_small",
            ["--embed-dim", "-16", "--hidden-size", "-16"],
            "--embed-dim -16 is out of range: it must be at least 1",
        ),
        ("pointer_sentinel_lm", ["--pointer-window", "0"], "--pointer-window 0 is out of range: it must be at least 1"),
        ("alm_lstm", ["--dropout", "1.5"], "--dropout 1.5 is out of range: a dropout probability lies in [0, 1]"),
        # before: nan a FloatingPointError after the first update, inf trained and stored
        ("alm_lstm", ["--forget-gate-bias", "nan"], "--forget-gate-bias nan: give a finite number"),
        ("attentive_lm", ["--forget-gate-bias", "inf"], "--forget-gate-bias inf: give a finite number"),
        ("amsrn", ["--init-range", "nan"], "--init-range nan: give a finite number"),
    ],
)
def test_sizes_out_of_range_are_refused_by_name(tmp_path, arch, options, message):
    code, output = run(
        "train",
        SAMPLE_DATA,
        *TRAIN_COMMON,
        "--arch",
        arch,
        *TINY,
        *options,
        "--max-update",
        "1",
        "--save-dir",
        tmp_path,
        check=False,
    )
    assert code != 0 and refused(output, "fairseq-train", message)
    assert not list(tmp_path.iterdir())


def test_character_model_sizes_and_python_configs_are_checked(tmp_path):
    code, output = run(
        "train",
        SAMPLE_DATA,
        "--user-dir",
        "alm_plugin",
        "--cpu",
        "--task",
        "open_vocabulary_language_modeling",
        "--batch-size",
        "4",
        "--arch",
        "char_cache_lm_small",
        "--cache-size",
        "-1",
        "--max-update",
        "1",
        "--save-dir",
        tmp_path,
        check=False,
    )
    assert code != 0 and refused(output, "fairseq-train", "--cache-size -1 is out of range: it must be at least 0")
    from types import SimpleNamespace

    from fairseq.data import Dictionary

    from alm_plugin.errors import OptionError
    from alm_plugin.models.attentive_lm import AttentiveLanguageModel, AttentiveLMConfig

    task = SimpleNamespace(target_dictionary=Dictionary())
    with pytest.raises(OptionError, match="--attention-dim -4 is out of range"):
        AttentiveLanguageModel.build_model(AttentiveLMConfig(attention_dim=-4), task)
    from alm_plugin.models.char_lstm_lm import CharLSTMLanguageModel, CharLSTMLMConfig

    # every model family's floats checked where their ranges are (torch refuses a nan bound with a traceback)
    with pytest.raises(OptionError, match="--init-range nan: give a finite number"):
        CharLSTMLanguageModel.build_model(CharLSTMLMConfig(init_range=float("nan")), task)


# ---------------------------------------------------------------- adaptive-softmax clusters


@pytest.mark.parametrize("cutoff", ["--adaptive-softmax-cutoff=", "--adaptive-softmax-cutoff= , "])
def test_an_empty_cutoff_list_is_refused_not_trained_as_the_full_softmax(tmp_path, cutoff):
    code, output = run(
        "train",
        SAMPLE_DATA,
        *TRAIN_COMMON,
        "--arch",
        "alm_lstm",
        *ADAM24,
        cutoff,
        "--max-update",
        "1",
        "--save-dir",
        tmp_path,
        check=False,
    )
    assert code == 1 and refused(output, "fairseq-train", "holds no word id: give the cutoffs, comma-separated")
    assert not list(tmp_path.iterdir())


SENTENCE_TRAIN = [
    SAMPLE_DATA,
    *TRAIN_COMMON,
    "--criterion",
    "attention_cross_entropy",
    "--optimizer",
    "adam",
    "--lr",
    "0.01",
    "--batch-size",
    "32",
    "--max-update",
    "1",
    "--disable-validation",
]


@pytest.mark.parametrize(
    "options, message",
    [
        (
            [
                "--arch",
                "alm_lstm",
                "--embed-dim",
                "32",
                "--hidden-size",
                "32",
                "--adaptive-softmax-untied",
                "--adaptive-softmax-factor",
                "8",
                "--adaptive-softmax-cutoff",
                "1000,3000",
            ],
            "tail 2 of 2 (--adaptive-softmax-cutoff 1000,3000) would project the decoder's 32-dimensional output "
            "(--embed-dim) to 32 // 8^2 = 0 dimensions, so its words would ignore the context: use "
            "--adaptive-softmax-factor 5.65 or less, at most 1 cutoff at this factor, or a larger --embed-dim",
        ),
        (
            [
                "--arch",
                "alm_lstm",
                "--num-layers",
                "1",
                "--adaptive-softmax-untied",  # 650 wide, factor 4
                "--adaptive-softmax-cutoff",
                "100,200,400,800,1600",
            ],
            "tail 5 of 5 (--adaptive-softmax-cutoff 100,200,400,800,1600) would project the decoder's 650-dimensional "
            "output (--embed-dim) to 650 // 4^5 = 0 dimensions",
        ),
        (
            ["--arch", "alm_lstm", *ADAM24[:6], "--adaptive-softmax-cutoff", "1,2,3"],
            "--adaptive-softmax-cutoff 1,2,3: a head ending at id 1 puts special symbols (ids 0-3: <s>, <pad>, </s>, "
            "<unk>; </s> ends every line) into tail clusters: start the cutoffs above 4",
        ),
        (
            ["--arch", "attentive_lm", *ADAM24[:6], "--adaptive-softmax-cutoff", "4,1000"],
            "a head ending at id 4 gives the head the 4 special symbols and no word: start the cutoffs above 4",
        ),
    ],
)
def test_adaptive_softmax_clusters_that_cannot_work_are_refused_before_training(tmp_path, options, message):
    """Clusters that cannot work (a projection of no dimension, special symbols in tail clusters) are refused
    before training."""
    code, output = run("train", *SENTENCE_TRAIN, *options, "--save-dir", tmp_path, check=False)
    assert code == 1 and refused(output, "fairseq-train", message)
    assert not list(tmp_path.iterdir())


def test_the_first_cutoff_above_the_special_symbols_and_wide_enough_tails_build(dictionary):
    from alm_plugin.options.adaptive_softmax import check_clusters

    check_clusters([5, 8], 4, 32)  # the head: the special symbols and one word
    check_clusters([1000, 3000], 4, 32, untied=True, factor=5.65)  # 32 // 5.65^2 = 1
    check_clusters([100, 200, 400, 800], 4, 650, untied=True)  # 650 // 4^4 = 2
    with pytest.raises(OptionError, match="32 // 5.66\\^2 = 0 dimensions"):
        check_clusters([1000, 3000], 4, 32, untied=True, factor=5.66)


# ---------------------------------------------------------------- precisions the CPU has not


def test_fp16_on_the_cpu_is_refused_in_one_line(tmp_path):
    """--fp16 without a GPU is refused in one line, not fairseq's FP16Optimizer's CUDA traceback."""
    code, output = run(
        "train", *SENTENCE_TRAIN, "--arch", "alm_lstm", *ADAM24[:6], "--fp16", "--save-dir", tmp_path, check=False
    )
    assert code == 1 and refused(
        output,
        "fairseq-train",
        "--fp16: fairseq's float16 training keeps a float32 copy of "
        "the weights on the GPU, and this run trains on the CPU",
    )
    assert "drop --fp16" in output and not list(tmp_path.iterdir())


def test_amp_on_the_cpu_is_refused_instead_of_training_in_float32(tmp_path):
    """--amp on the CPU is refused: autocast casts CUDA operations only, so it would train in float32 without a
    word."""
    code, output = run(
        "train",
        SAMPLE_DATA,
        *TRAIN_COMMON,
        "--arch",
        "alm_lstm",
        *TINY,
        "--max-update",
        "1",
        "--amp",
        "--save-dir",
        tmp_path,
        check=False,
    )
    assert code == 1 and refused(
        output,
        "fairseq-train",
        "--amp: fairseq's automatic mixed precision casts CUDA "
        "operations only, and this run trains on the CPU (--cpu, or "
        "no GPU torch can use): it would train in float32 as without "
        "the flag; drop --amp, or train on a GPU without --cpu",
    )
    assert not list(tmp_path.iterdir())


# ---------------------------------------------------------------- a model and a task that do not fit


def test_a_translation_architecture_with_a_language_model_task(tmp_path):
    code, output = run(
        "train",
        SAMPLE_DATA,
        *TRAIN_COMMON,
        "--arch",
        "attentive_nmt_small",
        "--batch-size",
        "4",
        "--max-update",
        "1",
        "--save-dir",
        tmp_path,
        check=False,
    )
    assert code != 0 and "is a translation model: train it with --task translation" in last_line(output)


def test_a_word_model_with_the_open_vocabulary_task(tmp_path):
    code, output = run(
        "train",
        SAMPLE_DATA,
        "--user-dir",
        "alm_plugin",
        "--cpu",
        "--task",
        "open_vocabulary_language_modeling",
        "--batch-size",
        "4",
        "--arch",
        "attentive_lm_small",
        "--max-update",
        "1",
        "--save-dir",
        tmp_path,
        check=False,
    )
    assert code != 0 and "is a word-level language model" in last_line(output)


@pytest.fixture(scope="module")
def translation_data(tmp_path_factory):
    from test_translation_end_to_end import sentence_pairs

    root = tmp_path_factory.mktemp("nmt")
    for split, n in (("train", 200), ("valid", 20)):
        pairs = list(sentence_pairs(n, seed=len(split)))
        (root / f"{split}.de").write_text("".join(de + "\n" for de, _ in pairs))
        (root / f"{split}.en").write_text("".join(en + "\n" for _, en in pairs))
    run(
        "preprocess",
        "--source-lang",
        "de",
        "--target-lang",
        "en",
        "--trainpref",
        root / "train",
        "--validpref",
        root / "valid",
        "--destdir",
        root / "bin",
        "--workers",
        "1",
    )
    return root / "bin"


def train_translation(data, save, criterion):
    return run(
        "train",
        data,
        "--user-dir",
        "alm_plugin",
        "--task",
        "translation",
        "--source-lang",
        "de",
        "--target-lang",
        "en",
        "--cpu",
        "--arch",
        "attentive_nmt_small",
        "--embed-dim",
        "16",
        "--hidden-size",
        "16",
        "--encoder-embed-dim",
        "16",
        "--encoder-hidden-size",
        "16",
        "--adaptive-softmax-cutoff",
        "8",
        *criterion,
        "--optimizer",
        "adam",
        "--lr",
        "0.01",
        "--max-tokens",
        "400",
        "--max-update",
        "2",
        "--no-epoch-checkpoints",
        "--disable-validation",
        "--no-progress-bar",
        "--num-workers",
        "0",
        "--save-dir",
        save,
        check=False,
    )


@pytest.mark.parametrize("criterion", ["adaptive_loss", "cross_entropy"])
def test_a_translation_decoders_adaptive_softmax_refuses_fairseqs_criteria_by_name(
    translation_data, tmp_path, criterion
):
    """adaptive_loss and cross_entropy are refused by name with a translation decoder's adaptive softmax, as the
    LM tasks refuse them (models.md and troubleshooting.md say so)."""
    code, output = train_translation(translation_data, tmp_path, ["--criterion", criterion])
    assert code == 1 and refused(
        output, "fairseq-train", f"--criterion {criterion} cannot train a model with --adaptive-softmax-cutoff"
    )
    assert "use --criterion attention_cross_entropy (or label_smoothed_cross_entropy" in output
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    "criterion",
    [
        ["--criterion", "attention_cross_entropy"],
        ["--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1"],
    ],
)
def test_a_translation_decoders_adaptive_softmax_trains_with_ours_or_label_smoothing(
    translation_data, tmp_path, criterion
):
    code, output = train_translation(translation_data, tmp_path, criterion)
    assert code == 0, output[-3000:]
    assert (tmp_path / "checkpoint_last.pt").exists()


# --------------------------------------------------------------- save-dir through a file, a negative --stream-burn-in


COMMON = [
    "--user-dir",
    "alm_plugin",
    "--cpu",
    "--no-progress-bar",
    "--num-workers",
    "0",
    "--arch",
    "alm_lstm",
    "--embed-dim",
    "16",
    "--hidden-size",
    "16",
    "--optimizer",
    "adam",
    "--lr",
    "0.01",
    "--max-update",
    "1",
]


TASKS = {
    "sentence_language_modeling": ["--batch-size", "8"],
    "document_language_modeling": ["--batch-size", "4", "--tokens-per-sample", "20"],
}


@pytest.mark.parametrize(
    "task, where, says",
    [  # one check in front of fairseq's, whatever the task: each task and each kind of path once
        ("sentence_language_modeling", "dict.txt", "is a file, not a folder"),
        ("document_language_modeling", "valid.bin/checkpoints", "runs through {data}/valid.bin, a file, not a folder"),
    ],
)
def test_a_save_dir_naming_a_file_is_refused_in_one_line(tiny_attentive, tmp_path, task, where, says):
    _, sample = tiny_attentive
    data = tmp_path / "data"
    data.mkdir()
    for name in ("dict.txt", "train.bin", "train.idx", "valid.bin", "valid.idx"):
        (data / name).write_bytes((sample / name).read_bytes())
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in data.iterdir()}
    save = data / where
    code, output = run("train", data, *COMMON, "--task", task, *TASKS[task], "--save-dir", save, check=False)
    assert code == 1 and refused(
        output,
        "fairseq-train",
        f"--save-dir {save} {says.format(data=data)}: give the folder the checkpoints go to (made if missing)",
    )
    assert {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in data.iterdir()} == before


@pytest.mark.parametrize(
    "name, link, says",
    [  # each kind of link once, under each kind of checkpoint name fairseq writes
        ("checkpoint_last.pt", os.symlink, "is a symbolic link (to {target})"),
        ("checkpoint_best.pt", os.link, "is a hard link, its data shared with another file"),
    ],
)
def test_a_checkpoint_name_linked_to_another_runs_file_is_refused_before_training(
    tiny_attentive, tmp_path, name, link, says
):
    """fairseq writes checkpoint_best.pt and copies it onto checkpoint_last.pt through whatever the names are: a
    link planted in --save-dir would overwrite another run's checkpoint. Refused in one line; that file unchanged."""
    checkpoint, sample = tiny_attentive
    other = tmp_path / "other_run" / "checkpoint_last.pt"
    other.parent.mkdir()
    other.write_bytes(checkpoint.read_bytes())
    before = hashlib.sha256(other.read_bytes()).hexdigest()
    save = tmp_path / "run2"
    save.mkdir()
    link(other, save / name)
    task = "sentence_language_modeling"
    code, output = run("train", sample, *COMMON, "--task", task, *TASKS[task], "--save-dir", save, check=False)
    assert code == 1 and refused(
        output,
        "fairseq-train",
        f"--save-dir {save}: {name} {says.format(target=other)}, and fairseq would write this run's checkpoint "
        f"through it: remove it (rm {save / name};",
    )
    assert hashlib.sha256(other.read_bytes()).hexdigest() == before and sorted(os.listdir(save)) == [name]


@pytest.mark.parametrize("value", ["-1"])
def test_a_negative_stream_burn_in_is_refused_when_nothing_is_validated(tiny_pointer, tmp_path, value):
    _, data = tiny_pointer
    code, output = run(
        "train",
        data,
        *COMMON,
        "--task",
        "document_language_modeling",
        *TASKS["document_language_modeling"],
        "--stream-burn-in",
        value,
        "--disable-validation",
        "--save-dir",
        tmp_path / "save",
        check=False,
    )
    assert code == 1 and refused(
        output,
        "fairseq-train",
        f"--stream-burn-in {value}: the words a stream reads before it scores must be 0 or more (default 100)",
    )
    assert not (tmp_path / "save").exists() or not list((tmp_path / "save").iterdir())


def test_a_negative_stream_burn_in_is_refused_by_eval_lm_on_one_stream(tiny_pointer):
    checkpoint, data = tiny_pointer
    code, output = run(
        "eval_lm",
        data,
        "--user-dir",
        "alm_plugin",
        "--task",
        "document_language_modeling",
        "--cpu",
        "--path",
        checkpoint,
        "--batch-size",
        "1",
        "--stream-burn-in",
        "-5",
        check=False,
    )
    assert code == 1 and refused(output, "fairseq-eval-lm", "--stream-burn-in -5: the words a stream reads")
