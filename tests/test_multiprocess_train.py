"""fairseq's own multi-process training, end to end on a CPU: two `fairseq-train` processes
(gloo, legacy_ddp) with batch b each reach the same parameters as one fairseq-train with batch 2b.

Each update reads the whole training split (2b sentences; 2 x b streams), so both runs see
the same data in every update; dropout is 0."""

import json
import os
import shutil
import socket
import subprocess
import sys

import pytest
import torch
from cli import ROOT
from conftest import SAMPLE_DATA

MARK = "=== fairseq-train model "
# fairseq-train's console script once a model, in one fresh process a rank: the first run initialises the
# process group (gloo, over TCP), the next reuses it (fairseq's distributed_init); between runs the globals a
# fresh process starts without (the best validation loss) are cleared
TRAIN_EACH = f"""
import json, sys
from fairseq import checkpoint_utils
from fairseq_cli import train
for name, argv in json.loads(sys.argv.pop(1)):
    print({MARK!r} + name, flush=True)
    for function, attribute in ((checkpoint_utils.save_checkpoint, "best"), (train.should_stop_early, "best"),
                                (train.should_stop_early, "num_runs")):
        if hasattr(function, attribute):
            delattr(function, attribute)
    sys.argv = ["fairseq-train", *argv]
    train.cli_main()
"""
COMMON = [
    "--user-dir",
    "alm_plugin",
    "--cpu",
    "--seed",
    "1",
    "--num-workers",
    "0",
    "--no-progress-bar",
    "--disable-validation",
    "--no-epoch-checkpoints",
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def train_two_ranks(runs):
    """Two fairseq-train processes (ranks 0 and 1, gloo, legacy_ddp), each training ``runs``
    ([(name, argv)]) in turn; returns their outputs."""
    distributed = [
        "--distributed-world-size",
        "2",
        "--distributed-init-method",
        f"tcp://127.0.0.1:{free_port()}",
        "--distributed-no-spawn",
        "--distributed-backend",
        "gloo",
        "--device-id",
        "0",
        "--ddp-backend",
        "legacy_ddp",
    ]
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                TRAIN_EACH,
                json.dumps([(name, [*argv, *distributed, "--distributed-rank", str(rank)]) for name, argv in runs]),
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"},
        )
        for rank in range(2)
    ]
    outputs = [p.communicate(timeout=600)[0] for p in procs]
    for p, output in zip(procs, outputs):
        assert p.returncode == 0, output[-3000:]
    return outputs


def parameters(save_dir):
    state = torch.load(os.path.join(save_dir, "checkpoint_last.pt"), weights_only=True)
    return state["model"], state["optimizer_history"][-1]["num_updates"]


@pytest.fixture(scope="module")
def tiny_corpus(tmp_path_factory):
    """16 training sentences of the shipped sample (short ones: one sample each) and 4 valid ones,
    with its dictionary."""
    from fairseq.data import Dictionary, data_utils, indexed_dataset

    root = tmp_path_factory.mktemp("tiny")
    shutil.copy(os.path.join(SAMPLE_DATA, "dict.txt"), root)
    d = Dictionary.load(os.path.join(SAMPLE_DATA, "dict.txt"))
    for split, n in (("train", 16), ("valid", 4)):
        lines = data_utils.load_indexed_dataset(os.path.join(SAMPLE_DATA, split), d)
        builder = indexed_dataset.make_builder(str(root / f"{split}.bin"), impl="mmap", vocab_size=len(d))
        for line in [lines[i] for i in range(len(lines)) if len(lines[i]) <= 35][:n]:
            builder.add_item(line)
        builder.finalize(str(root / f"{split}.idx"))
    return str(root)


MODELS = {
    "attentive_lm": [
        "--task",
        "sentence_language_modeling",
        "--arch",
        "attentive_lm",
        "--embed-dim",
        "16",
        "--hidden-size",
        "16",
        "--dropout",
        "0",
        "--attention-score",
        "combined",
        "--criterion",
        "attention_cross_entropy",
        "--sentence-avg",
    ],
    # streams are split between ranks: rank r reads streams r*b .. r*b+b-1 of the 2b streams
    "char_cache_lm": [
        "--task",
        "open_vocabulary_language_modeling",
        "--arch",
        "char_cache_lm_small",
        "--char-embed-dim",
        "8",
        "--hidden-size",
        "16",
        "--dropout",
        "0",
        "--cache-size",
        "5",
        "--tokens-per-sample",
        "10",
        "--criterion",
        "open_vocabulary_cross_entropy",
    ],
}


def model_args(name):
    return MODELS[name] + [
        "--optimizer",
        "sgd",
        "--lr",
        "0.5",
        "--clip-norm",
        "5",
        "--max-update",
        "3",
        "--log-format",
        "json",
    ]


B = {"attentive_lm": 8, "char_cache_lm": 2}


@pytest.fixture(scope="module")
def trained(tiny_corpus, tmp_path_factory):
    """{model: (one process's output, rank 0's output, one's save dir, two's save dir)}: each model trained for
    3 updates by one fairseq-train with batch 2b (run in this process) and by two ranks with batch b each (the
    two processes train every model in turn); and the two ranks' whole outputs."""
    from cli import run

    root = tmp_path_factory.mktemp("runs")
    single = {
        name: run(
            "train",
            tiny_corpus,
            *COMMON,
            *model_args(name),
            "--batch-size",
            str(2 * B[name]),
            "--save-dir",
            root / name / "one",
        )[1]
        for name in sorted(MODELS)
    }
    runs = [
        (
            name,
            [
                tiny_corpus,
                *COMMON,
                *model_args(name),
                "--batch-size",
                str(B[name]),
                "--save-dir",
                str(root / name / "two"),
            ],
        )
        for name in sorted(MODELS)
    ]
    outputs = train_two_ranks(runs)
    rank0 = {}
    for part in outputs[0].split(MARK)[1:]:
        name, _, output = part.partition("\n")
        rank0[name] = output
    return {
        name: (single[name], rank0.get(name, ""), root / name / "one", root / name / "two") for name in sorted(MODELS)
    }, outputs


@pytest.mark.parametrize("name", sorted(MODELS))
def test_two_ranks_of_b_equal_one_rank_of_2b(name, trained):
    runs, outputs = trained
    single, rank0, one_dir, two_dir = runs[name]
    assert "distributed init (rank 1)" in "".join(outputs)
    sentences = 16 if name == "attentive_lm" else 2 * B[name]  # per update: the whole split, or a chunk of every stream
    for output in (single, rank0):
        assert f'"train_bsz": "{sentences}"' in output, output[-2000:]
    one, updates_one = parameters(one_dir)
    two, updates_two = parameters(two_dir)
    assert updates_one == updates_two == 3
    assert one.keys() == two.keys()
    for key in one:
        torch.testing.assert_close(two[key], one[key], rtol=1e-4, atol=1e-5, msg=key)
