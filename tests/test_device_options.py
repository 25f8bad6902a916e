"""The device and precision options that fairseq 0.12 gets wrong, as the plugin handles them: it
mends them or says why (alm_plugin/mends/device.py):

- ``--bf16``: fairseq reads it as ``--tpu``, so fairseq-train dies with ``AttributeError: 'NoneType'
  object has no attribute 'xla_device'`` (on a GPU as on a CPU), and fairseq-eval-lm and
  fairseq-validate ignore it; the plugin refuses it in one line, naming ``--fp16`` / ``--amp``.
- ``fairseq-train --cpu`` on a machine with a GPU: fairseq's ``utils.clip_grad_norm_`` puts the
  gradients' norm on ``cuda:0`` and dies scaling the CPU gradients by it; the plugin's keeps the
  norm on the gradients' device, with fairseq's figures. These tests fake the GPU
  (``torch.cuda.is_available()`` and the few ``torch.cuda`` calls fairseq makes with it), which
  reproduces the failure with fairseq's own function: the norm asked onto ``cuda:0`` (on a machine
  without CUDA, torch refuses that move; on one with a GPU, ``_foreach_mul_`` refuses the CUDA
  scalar).
"""

import pytest
import torch
from cli import TINY, TRAIN_COMMON, json_records, run
from conftest import SAMPLE_DATA
from fairseq import utils

ALM_LSTM = ["--arch", "alm_lstm", *TINY]


def torch_sees_a_gpu(monkeypatch, seen):
    """Make torch report one GPU (``seen``) or none, whatever this machine has; with a GPU seen,
    the calls fairseq makes because of it (device, RNG state, seeds) do nothing."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: seen)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: int(seen))
    if seen:
        monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
        monkeypatch.setattr(torch.cuda, "set_device", lambda device: None)
        monkeypatch.setattr(torch.cuda, "get_rng_state", lambda *a, **k: torch.zeros(16, dtype=torch.uint8))
        monkeypatch.setattr(torch.cuda, "set_rng_state", lambda *a, **k: None)
        monkeypatch.setattr(torch.cuda, "manual_seed", lambda seed: None)
        monkeypatch.setattr(torch.cuda, "manual_seed_all", lambda seed: None)


fairseq_clip_grad_norm_ = getattr(utils.clip_grad_norm_, "fairseq_original", utils.clip_grad_norm_)
needs_fairseq_fallback = pytest.mark.skipif(
    utils.multi_tensor_l2norm_available, reason="with apex's multi_tensor_l2norm fairseq keeps the norm in place"
)


def parameters_with_gradients(seed=0):
    """Parameters of several shapes, one of them a mixture-of-experts one (``expert``: clipped,
    not counted in the norm), one without a gradient."""
    generator = torch.Generator().manual_seed(seed)
    params = [torch.nn.Parameter(torch.randn(shape, generator=generator)) for shape in ((5, 3), (7,), (2, 2, 2), (4,))]
    for p in params[:3]:
        p.grad = torch.randn(p.shape, generator=generator)
    params[2].expert = True
    return params


@needs_fairseq_fallback
def test_the_fake_gpu_reproduces_fairseqs_failure(monkeypatch):
    """fairseq's own function, with a GPU seen and the gradients on the CPU: the norm is asked
    onto cuda:0 and the clip dies (what the tests below would show without the mend)."""
    torch_sees_a_gpu(monkeypatch, True)
    with pytest.raises(RuntimeError):
        fairseq_clip_grad_norm_(parameters_with_gradients(), 1.0)


@needs_fairseq_fallback
@pytest.mark.parametrize("max_norm", [0.0, 0.5, 1e9])
@pytest.mark.parametrize("aggregate", [None, lambda norm: norm * 3], ids=["alone", "aggregated"])
def test_the_clip_keeps_cpu_gradients_norm_on_the_cpu_where_torch_sees_a_gpu(monkeypatch, max_norm, aggregate):
    """fairseq's optimizers call ``utils.clip_grad_norm_``: with a GPU seen it gives exactly what
    fairseq's own gives on a machine without one (norm and clipped gradients)."""
    torch_sees_a_gpu(monkeypatch, False)
    expected = parameters_with_gradients()
    expected_norm = fairseq_clip_grad_norm_(expected, max_norm, aggregate)
    torch_sees_a_gpu(monkeypatch, True)
    params = parameters_with_gradients()
    norm = utils.clip_grad_norm_(params, max_norm, aggregate)
    assert norm.device == torch.device("cpu") and torch.equal(norm, expected_norm)
    for p, q in zip(params, expected):
        assert (p.grad is None and q.grad is None) or torch.equal(p.grad, q.grad)
    if max_norm == 0.5:  # the clip did clip
        assert not torch.equal(params[0].grad, parameters_with_gradients()[0].grad)


@needs_fairseq_fallback
def test_fairseq_train_cpu_trains_where_torch_sees_a_gpu(monkeypatch, tmp_path):
    """The whole ``fairseq-train --cpu`` with gradient clipping on a machine with a GPU: it trains,
    and its losses and gradient norms are those of the same run on a machine without one."""
    args = [
        SAMPLE_DATA,
        *TRAIN_COMMON,
        *ALM_LSTM,
        "--max-update",
        "2",
        "--clip-norm",
        "0.1",
        "--no-save",
        "--save-dir",
        tmp_path,
    ]
    records = {}
    for seen in (False, True):
        torch_sees_a_gpu(monkeypatch, seen)
        code, output = run("train", *args, check=False)
        assert code == 0, output[-3000:]
        records[seen] = [
            {k: v for k, v in r.items() if k in ("train_loss", "train_gnorm", "train_clip")}
            for r in json_records(output, "train")
        ]
    assert records[True] == records[False] and records[True][0]["train_clip"] == "100"


# ---------------------------------------------------------------------- --bf16

BF16 = "fairseq 0.12 reads it as --tpu, which needs torch_xla"
FIX = "use --fp16 or --amp"


def refused(output, program, message):
    """The run's last line is ``program: error: ...message...``, no traceback before it, and it
    ends naming the fix."""
    last = output.strip().splitlines()[-1]
    assert "Traceback" not in output, output[-3000:]
    assert last.startswith(f"{program}: error: ") and message in last and last.endswith(FIX), output[-3000:]
    return True


def translation_data(root):
    """Ten German-English sentence pairs, binarised."""
    words = {"der": "the", "hund": "dog", "sieht": "sees", "ein": "a", "ball": "ball"}
    for split in ("train", "valid"):
        pairs = [list(words)[i % 5 :] + list(words)[: i % 5] for i in range(10)]
        (root / f"{split}.de").write_text("".join(" ".join(p) + "\n" for p in pairs))
        (root / f"{split}.en").write_text("".join(" ".join(words[w] for w in p) + "\n" for p in pairs))
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
    )
    return root / "bin"


@pytest.mark.parametrize(
    "case", ["sentence", "document", "open_vocabulary", "language_modeling", "translation", "memory_efficient"]
)
def test_fairseq_train_refuses_bf16_in_one_line(tmp_path, case):
    """fairseq-train refuses --bf16 (and --memory-efficient-bf16) in one line on every task, where
    fairseq's trainer would die asking torch_xla for its device (a traceback)."""
    data, options, flag = SAMPLE_DATA, ["--task", "sentence_language_modeling", *ALM_LSTM], "--bf16"
    if case == "document":
        options = ["--task", "document_language_modeling", *ALM_LSTM]
    elif case == "open_vocabulary":
        options = ["--task", "open_vocabulary_language_modeling", "--arch", "char_lstm_lm_small", "--batch-size", "4"]
    elif case == "language_modeling":
        options = [
            "--task",
            "language_modeling",
            "--arch",
            "attentive_lm_small",
            "--tokens-per-sample",
            "35",
            "--batch-size",
            "8",
        ]
    elif case == "translation":
        data = translation_data(tmp_path)
        options = [
            "--task",
            "translation",
            "--arch",
            "attentive_nmt_small",
            "--optimizer",
            "adam",
            "--max-tokens",
            "400",
        ]
    elif case == "memory_efficient":
        flag = "--memory-efficient-bf16"
    save = tmp_path / "save"
    code, output = run(
        "train", data, *TRAIN_COMMON, *options, "--max-update", "1", flag, "--save-dir", save, check=False
    )
    assert code != 0 and refused(output, "fairseq-train", f"error: {flag}: {BF16}")
    assert not save.exists() or not list(save.iterdir())  # fairseq makes the directory first; nothing in it


@pytest.fixture
def checkpoint(tiny_lstm):
    """The shared tiny alm_lstm (sentence_language_modeling): the refusal comes before a batch is read."""
    return tiny_lstm[0]


@pytest.mark.parametrize("tool", ["eval_lm", "validate"])
def test_evaluation_refuses_bf16_in_one_line(checkpoint, tool):
    """fairseq-eval-lm and fairseq-validate refuse --bf16 in one line, where fairseq would ignore it
    and compute in float32 without a word."""
    code, output = run(
        tool,
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
        "--bf16",
        check=False,
    )
    program = "fairseq-" + tool.replace("_", "-")
    assert code != 0 and refused(output, program, f"error: --bf16: {BF16}")
