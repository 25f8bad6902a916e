"""fairseq's own multi-process training, end to end on a CPU: two `fairseq-train` processes
(gloo, legacy_ddp) with batch b each reach the same parameters as one process with batch 2b.

Each update reads the whole training split (2b sentences; 2 x b streams), so both runs see
the same data in every update; dropout is 0."""

import os
import socket
import subprocess
import sys

import pytest
import torch
from cli import ROOT
from conftest import SAMPLE_DATA

LAUNCH = "import sys; from fairseq_cli.train import cli_main; sys.argv[0] = 'fairseq-train'; cli_main()"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def train(data, args, world, save_dir):
    command = [
        sys.executable,
        "-c",
        LAUNCH,
        data,
        "--user-dir",
        "alm_plugin",
        "--cpu",
        "--seed",
        "1",
        "--num-workers",
        "0",
        "--no-progress-bar",
        "--disable-validation",
        "--save-dir",
        save_dir,
        "--no-epoch-checkpoints",
        *args,
    ]
    if world > 1:
        port = free_port()
        command += [
            "--distributed-world-size",
            str(world),
            "--distributed-init-method",
            f"tcp://127.0.0.1:{port}",
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
            command + (["--distributed-rank", str(rank)] if world > 1 else []),
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "OMP_NUM_THREADS": "1"},
        )
        for rank in range(world)
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
    """16 training sentences of the shipped sample (short ones: one sample each), binarised
    with its dictionary."""
    from fairseq.data import Dictionary, data_utils

    root = tmp_path_factory.mktemp("tiny")
    d = Dictionary.load(os.path.join(SAMPLE_DATA, "dict.txt"))
    for split, n in (("train", 16), ("valid", 4)):
        lines = data_utils.load_indexed_dataset(os.path.join(SAMPLE_DATA, split), d)
        short = [d.string(lines[i]) for i in range(len(lines)) if len(lines[i]) <= 35][:n]
        (root / f"{split}.txt").write_text("".join(line + "\n" for line in short))
    subprocess.run(
        [
            sys.executable,
            "-c",
            "from fairseq_cli.preprocess import cli_main; cli_main()",
            "--only-source",
            "--srcdict",
            os.path.join(SAMPLE_DATA, "dict.txt"),
            "--trainpref",
            root / "train.txt",
            "--validpref",
            root / "valid.txt",
            "--destdir",
            root / "bin",
            "--workers",
            "1",
        ],
        check=True,
        capture_output=True,
    )
    return str(root / "bin")


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


@pytest.mark.parametrize("name", sorted(MODELS))
def test_two_ranks_of_b_equal_one_rank_of_2b(name, tiny_corpus, tmp_path):
    args = MODELS[name] + [
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
    b = 8 if name == "attentive_lm" else 2
    single = train(tiny_corpus, args + ["--batch-size", str(2 * b)], 1, tmp_path / "one")[0]
    outputs = train(tiny_corpus, args + ["--batch-size", str(b)], 2, tmp_path / "two")
    assert "distributed init (rank 1)" in "".join(outputs)
    sentences = 16 if name == "attentive_lm" else 2 * b  # per update: the whole split, or a chunk of every stream
    for output in (single, outputs[0]):
        assert f'"train_bsz": "{sentences}"' in output, output[-2000:]
    one, updates_one = parameters(tmp_path / "one")
    two, updates_two = parameters(tmp_path / "two")
    assert updates_one == updates_two == 3
    assert one.keys() == two.keys()
    for key in one:
        torch.testing.assert_close(two[key], one[key], rtol=1e-4, atol=1e-5, msg=key)
