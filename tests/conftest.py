# first: the plugin quiets what importing fairseq prints, registers itself (the root is on the path: pyproject.toml)
import alm_plugin  # noqa: F401  # isort: skip

import atexit
import os
import shutil
import tempfile
from argparse import Namespace

import pytest
import torch
from fairseq.data import Dictionary

from alm_plugin.tasks.sentence_language_modeling import SentenceLanguageModelingTask

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SAMPLE_DATA = os.path.join(ROOT, "data-bin", "wikitext-2-sample")
SHARED_DATA = os.path.join(ROOT, "..", "shared", "data")


DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def pytest_configure(config):
    config.addinivalue_line("markers", "cuda: the test runs on the GPU (pytest -m cuda runs only those)")
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers > 1:  # the cores shared out: torch's threads in several workers would fight over each core
        threads = str(max(1, (os.cpu_count() or 1) // workers))
        os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = threads  # the fairseq tools a test runs
        torch.set_num_threads(int(threads))


def pytest_generate_tests(metafunc):
    """A test that takes ``device`` runs on the CPU and, where torch sees one, on the GPU too
    (marked ``cuda``): the same assertions, no skipped copies on a CPU-only machine."""
    if "device" in metafunc.fixturenames:
        metafunc.parametrize(
            "device", [pytest.param(d, marks=[pytest.mark.cuda] if d == "cuda" else []) for d in DEVICES]
        )


@pytest.fixture(autouse=True)
def _full_fp32_on_the_gpu():
    """cuDNN's LSTMs may use TF32 (10-bit mantissa) by default: compare in full float32."""
    if torch.cuda.is_available():
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False


@pytest.fixture
def dictionary():
    d = Dictionary()
    for word in "the cat sat on a mat and dog ran far away".split():
        d.add_symbol(word)
    return d


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def random_tokens(dictionary, bsz, length, generator=None):
    return torch.randint(dictionary.nspecial, len(dictionary), (bsz, length), generator=generator)


def short_split(root, lines, name="valid", source="valid"):
    """``root`` with the sample's dictionary and a ``name`` split of the ``source`` split's first ``lines``
    lines (0: a split binarised from an empty text, whose .bin is empty, as fairseq-preprocess writes it)."""
    from fairseq.data import data_utils, indexed_dataset

    os.makedirs(root, exist_ok=True)
    shutil.copy(os.path.join(SAMPLE_DATA, "dict.txt"), root)
    d = Dictionary.load(os.path.join(SAMPLE_DATA, "dict.txt"))
    valid = data_utils.load_indexed_dataset(os.path.join(SAMPLE_DATA, source), d)
    builder = indexed_dataset.make_builder(os.path.join(root, f"{name}.bin"), impl="mmap", vocab_size=len(d))
    for i in range(lines):
        builder.add_item(valid[i])
    builder.finalize(os.path.join(root, f"{name}.idx"))
    return root


SAVE_DIR = tempfile.mkdtemp(prefix="alm_tests_")  # one a test process, removed when it exits
atexit.register(shutil.rmtree, SAVE_DIR, ignore_errors=True)


def fairseq_trainer(argv):
    """fairseq's trainer for ``fairseq-train argv`` as fairseq-train builds it, and the batches of
    its first epoch in order."""
    from fairseq import options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from fairseq.trainer import Trainer

    if "--save-dir" not in argv:  # where fairseq saves a crash.pt if an update fails: never the working tree
        argv = [*argv, "--save-dir", SAVE_DIR]
    cfg = convert_namespace_to_omegaconf(options.parse_args_and_arch(options.get_training_parser(), argv))
    task = tasks.setup_task(cfg.task)
    trainer = Trainer(cfg, task, task.build_model(cfg.model), task.build_criterion(cfg.criterion))
    epoch = trainer.get_train_iterator(epoch=1, load_dataset=True)
    trainer.begin_epoch(1)
    return trainer, list(epoch.next_epoch_itr(shuffle=False))


def benchmarks_module(name):
    """The module benchmarks.NAME, imported when a test asks for it."""
    import importlib

    return importlib.import_module(f"benchmarks.{name}")


def needs_shared_data(*parts):
    path = os.path.join(SHARED_DATA, *parts)
    return pytest.mark.skipif(
        not os.path.exists(path), reason=f"needs the real corpora in ../shared/data ({path} is absent)"
    )


@pytest.fixture
def sample_task():
    """The sentence task over the shipped sample, set up as fairseq sets it up from its options."""
    args = Namespace(
        data=SAMPLE_DATA,
        sample_break_mode="eos",
        tokens_per_sample=10,
        output_dictionary_size=-1,
        self_target=False,
        future_target=False,
        past_target=False,
        add_bos_token=False,
        max_target_positions=None,
        shorten_method="none",
        shorten_data_split_list="",
        pad_to_fixed_length=False,
        pad_to_fixed_bsz=False,
        seed=1,
        batch_size=8,
        batch_size_valid=8,
        dataset_impl=None,
        data_buffer_size=10,
        tpu=False,
        use_plasma_view=False,
        plasma_path=None,
        eval_tokens_per_sample=10,
    )
    return SentenceLanguageModelingTask.setup_task(args)


# ---------------------------------------------------------------- tiny models shared by the session
# Trained once per test session (a few seconds each, 2 updates), each on a copy of the shipped
# sample it saves as its data directory, so a test that corrupted it would never harm the sample.

TINY_TRAINING = [
    "--cpu",
    "--no-progress-bar",
    "--num-workers",
    "0",
    "--optimizer",
    "adam",
    "--lr",
    "0.01",
    "--max-update",
    "2",
    "--no-epoch-checkpoints",
    "--disable-validation",
    "--seed",
    "1",
]


def _tiny(tmp_path_factory, name, options):
    from cli import run

    root = tmp_path_factory.mktemp(name)
    data = root / "data"
    shutil.copytree(SAMPLE_DATA, data)
    run("train", data, "--user-dir", "alm_plugin", *options, *TINY_TRAINING, "--save-dir", root / "save")
    return root / "save" / "checkpoint_last.pt", data


@pytest.fixture(scope="session")
def tiny_attentive(tmp_path_factory):
    """(checkpoint, data): an attentive_lm (16 wide) on sentence_language_modeling."""
    return _tiny(
        tmp_path_factory,
        "tiny_attentive",
        [
            "--task",
            "sentence_language_modeling",
            "--arch",
            "attentive_lm",
            "--embed-dim",
            "16",
            "--hidden-size",
            "16",
            "--num-layers",
            "1",
            "--batch-size",
            "64",
        ],
    )


@pytest.fixture(scope="session")
def tiny_pointer(tmp_path_factory):
    """(checkpoint, data): a pointer_sentinel_lm (16 wide) on document_language_modeling."""
    return _tiny(
        tmp_path_factory,
        "tiny_pointer",
        [
            "--task",
            "document_language_modeling",
            "--arch",
            "pointer_sentinel_lm",
            "--pointer-window",
            "10",
            "--embed-dim",
            "16",
            "--hidden-size",
            "16",
            "--num-layers",
            "1",
            "--criterion",
            "attention_cross_entropy",
            "--batch-size",
            "10",
            "--tokens-per-sample",
            "35",
        ],
    )


@pytest.fixture(scope="session")
def tiny_lstm(tmp_path_factory):
    """(checkpoint, data): an alm_lstm (16 wide, 2 layers) on sentence_language_modeling."""
    return _tiny(
        tmp_path_factory,
        "tiny_lstm",
        [
            "--task",
            "sentence_language_modeling",
            "--arch",
            "alm_lstm",
            "--embed-dim",
            "16",
            "--hidden-size",
            "16",
            "--batch-size",
            "64",
        ],
    )


@pytest.fixture
def attentive(tiny_attentive):
    """The shared tiny attentive_lm's checkpoint (sentence_language_modeling)."""
    return tiny_attentive[0]


@pytest.fixture
def tiny_lm(tiny_lstm):
    """The shared tiny alm_lstm's checkpoint (sentence_language_modeling)."""
    return tiny_lstm[0]


@pytest.fixture(scope="session")
def tiny_lstm_stream(tmp_path_factory):
    """(checkpoint, data): an alm_lstm (16 wide) on document_language_modeling."""
    return _tiny(
        tmp_path_factory,
        "tiny_lstm_stream",
        [
            "--task",
            "document_language_modeling",
            "--arch",
            "alm_lstm",
            "--embed-dim",
            "16",
            "--hidden-size",
            "16",
            "--num-layers",
            "1",
            "--criterion",
            "attention_cross_entropy",
            "--batch-size",
            "10",
            "--tokens-per-sample",
            "35",
        ],
    )


@pytest.fixture(scope="session")
def tiny_char(tmp_path_factory):
    """(checkpoint, data): a char_lstm_lm_small on open_vocabulary_language_modeling."""
    return _tiny(
        tmp_path_factory,
        "tiny_char",
        [
            "--task",
            "open_vocabulary_language_modeling",
            "--arch",
            "char_lstm_lm_small",
            "--criterion",
            "open_vocabulary_cross_entropy",
            "--batch-size",
            "4",
            "--tokens-per-sample",
            "20",
        ],
    )


# ---------------------------------------------------------------- trained models shared by several files
# Longer trainings than the tiny models', for tests whose figures need a model that has learnt something.


@pytest.fixture(scope="session")
def adaptive_sentence(tmp_path_factory):
    """alm_lstm (24 wide) with the adaptive softmax (--adaptive-softmax-cutoff 500,2000), 20 Adam
    updates on sentences of the shipped sample."""
    from cli import ADAM24, TRAIN_COMMON, run

    save = tmp_path_factory.mktemp("adaptive_sentence")
    run(
        "train",
        SAMPLE_DATA,
        *TRAIN_COMMON,
        "--arch",
        "alm_lstm",
        *ADAM24,
        "--adaptive-softmax-cutoff",
        "500,2000",
        "--max-update",
        "20",
        "--save-dir",
        save,
    )
    return save / "checkpoint_last.pt"


@pytest.fixture(scope="session")
def stream_models(tmp_path_factory):
    """(root, {arch: fairseq-train's output}): alm_lstm, attentive_lm and pointer_sentinel_lm (32 wide,
    40 SGD updates) trained on streams of the shipped sample (state and memory carried), validated
    at update 20 and 40; each checkpoint is ``root / arch / "checkpoint_last.pt"``."""
    from cli import TRAIN_COMMON, run

    stream_common = [*TRAIN_COMMON[:2], "--task", "document_language_modeling", *TRAIN_COMMON[4:]]
    root = tmp_path_factory.mktemp("stream")
    outputs = {}
    for arch, extra in (
        ("alm_lstm", []),
        ("attentive_lm", ["--memory-window", "20"]),
        ("pointer_sentinel_lm", ["--pointer-window", "20", "--criterion", "attention_cross_entropy"]),
    ):
        _, outputs[arch] = run(
            "train",
            SAMPLE_DATA,
            *stream_common,
            "--arch",
            arch,
            *extra,
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
            "40",
            "--log-interval",
            "8",
            "--save-dir",
            root / arch,
            "--no-epoch-checkpoints",
            "--validate-interval-updates",
            "20",
        )
    return root, outputs


@pytest.fixture
def lstm_stream(tiny_lstm_stream):
    """The shared tiny alm_lstm's checkpoint (document_language_modeling)."""
    return tiny_lstm_stream[0]
