"""The plugin's cheaper per-update seeding and clip (``alm_plugin/mends/device.py``) give
fairseq's numbers: the seeding before every update (the generators seeded directly, not
through ``torch.manual_seed``'s queued seeders) and the clip (the gradients' norms in one
``torch._foreach_norm``, not one ``torch.norm`` each)."""

import pytest
import torch
from fairseq import utils

from alm_plugin.mends import device as device_mends

fairseq_set_torch_seed = device_mends.set_torch_seed.fairseq_original
fairseq_clip_grad_norm_ = device_mends.clip_grad_norm_.fairseq_original


def test_the_mends_are_what_fairseqs_trainer_calls():
    assert utils.set_torch_seed is device_mends.set_torch_seed
    assert utils.clip_grad_norm_ is device_mends.clip_grad_norm_


def draws():
    """What training draws: uniform (init), normal, integers, and dropout's Bernoulli masks."""
    return [
        torch.rand(5),
        torch.randn(4),
        torch.randint(0, 1000, (6,)),
        torch.empty(64).bernoulli_(0.5),
        torch.nn.functional.dropout(torch.ones(64), 0.3),
    ]


@pytest.mark.parametrize("seed", [1, 1 + 7919, 2**31 + 5])
def test_seeding_leaves_the_generator_where_fairseqs_does(seed):
    fairseq_set_torch_seed(seed)
    expected_state, expected = torch.get_rng_state(), draws()
    torch.manual_seed(12345)
    utils.set_torch_seed(seed)
    assert torch.equal(torch.get_rng_state(), expected_state)
    assert all(torch.equal(a, b) for a, b in zip(draws(), expected))


def test_seeding_still_restores_the_generator_as_a_context_manager():
    torch.manual_seed(3)
    before = torch.get_rng_state()
    with utils.set_torch_seed(7):
        assert torch.equal(torch.rand(3), (torch.manual_seed(7), torch.rand(3))[1])
    assert torch.equal(torch.get_rng_state(), before)


def test_seeding_seeds_every_cuda_device_as_torch_manual_seed_does(monkeypatch):
    """CUDA started: every device's generator gets the seed (``torch.manual_seed`` seeds all of
    them); available but not started: queued, as torch queues it."""
    generators = (torch.Generator(), torch.Generator())
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "default_generators", generators)
    utils.set_torch_seed(42)
    assert [g.initial_seed() for g in generators] == [42, 42]
    queued = []
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_rng_state", lambda *a, **k: torch.zeros(16, dtype=torch.uint8))
    monkeypatch.setattr(torch.cuda, "manual_seed_all", queued.append)
    utils.set_torch_seed(43)
    assert queued == [43]


def parameters_with_gradients(device, dtype, seed=0):
    """Parameters of several shapes, one a mixture-of-experts one (``expert``: clipped, not counted
    in the norm), one without a gradient."""
    generator = torch.Generator().manual_seed(seed)
    params = [
        torch.nn.Parameter(torch.randn(shape, generator=generator).to(device, dtype))
        for shape in ((50, 30), (7,), (2, 2, 2), (4,), (300,))
    ]
    for p in params[:3] + params[4:]:
        p.grad = torch.randn(p.shape, generator=generator).to(device, dtype)
    params[2].expert = True
    return params


@pytest.mark.parametrize("max_norm", [0.0, 5.0, 1e9])
@pytest.mark.parametrize("aggregate", [None, lambda norm: norm * 3], ids=["alone", "aggregated"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
def test_the_clip_in_one_foreach_norm_gives_fairseqs_norm_and_gradients(
    device, max_norm, aggregate, dtype, monkeypatch
):
    """The norm and the clipped gradients of fairseq's one-norm-per-gradient loop: the same bits on
    the CPU (the same kernel per gradient); CUDA's fused kernel may sum in another order."""
    expected = parameters_with_gradients(device, dtype)
    expected_norm = fairseq_clip_grad_norm_(expected, max_norm, aggregate)
    params = parameters_with_gradients(device, dtype)

    def not_taken(*args):
        raise AssertionError("fell back to fairseq's loop")

    monkeypatch.setattr(device_mends, "_fairseq_clip_grad_norm_", not_taken)
    norm = utils.clip_grad_norm_(params, max_norm, aggregate)
    same = torch.equal if device == "cpu" else (lambda a, b: torch.allclose(a, b, rtol=1e-6, atol=0))
    assert norm.dtype == torch.float32 and same(norm, expected_norm)
    for p, q in zip(params, expected):
        assert (p.grad is None and q.grad is None) or same(p.grad, q.grad)
    if max_norm == 5.0:  # the clip did clip
        assert not torch.equal(params[0].grad, parameters_with_gradients(device, dtype)[0].grad)


def test_the_clip_leaves_gradients_on_several_devices_to_fairseq(monkeypatch):
    """Gradients on two devices (model parallel): fairseq's own code."""
    calls = []
    monkeypatch.setattr(device_mends, "_fairseq_clip_grad_norm_", lambda *args: calls.append(args) or torch.zeros(()))
    params = parameters_with_gradients("cpu", torch.float32)
    params[0] = torch.nn.Parameter(torch.zeros(3, device="meta"))
    params[0].grad = torch.zeros(3, device="meta")
    utils.clip_grad_norm_(params, 1.0)
    assert len(calls) == 1
