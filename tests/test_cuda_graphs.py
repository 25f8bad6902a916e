"""``--cuda-graphs`` (alm_plugin/modules/cuda_graphs.py): the graphed update is the eager update.

There is no GPU here, so ``ReplayingBackend`` plays CUDA's part: its capture runs the step once and
keeps what it returned, its replay runs the step again and writes the results into those tensors,
as a graph writes into the memory it was captured with. Everything the graphed step does around
the graph then runs through fairseq's own trainer on the CPU: the batch copied into the graph's
inputs, one graph per batch shape, the gradients handed to the parameters, the counts added from
the batch, the generators put back after the warm-up passes (the dropout drawn is the eager
update's), the eager fallback of an ``--update-freq`` group. Every update's logged figures and the
trained weights equal the eager run's. The capture itself needs a GPU: ``benchmarks/gpu/run.sh
tests`` checks the same equality there, and ``run.sh timing`` times both.
"""

import contextlib

import cli
import pytest
import torch
from cli import last_line, refused
from conftest import SAMPLE_DATA, fairseq_trainer
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from alm_plugin.errors import OptionError
from alm_plugin.modules import cuda_graphs
from alm_plugin.modules.history_attention import CausalHistoryAttention
from alm_plugin.modules.lstm_helpers import layer_by_layer
from benchmarks.host_overhead import case_args

FIGURES = ("loss", "nll_loss", "attn_entropy", "sample_size", "gnorm")  # the same bits either way
SUMMED_ANOTHER_WAY = ("paper_nll_loss",)  # a masked sum in the graph, a gather eagerly


class NoHostScalarCopies(TorchDispatchMode):
    """Refuses what CUDA refuses to record: a host value copied into a tensor (``t[0] = 5`` is a
    ``copy_`` from a 0-dim host tensor; on a GPU: "Cannot copy between CPU and CUDA tensors during
    CUDA graph capture"). Here every tensor is the host's: a 0-dim source stands for one."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is torch.ops.aten.copy_.default and args[1].dim() == 0:
            raise AssertionError(f"a scalar copied into a tensor of shape {tuple(args[0].shape)} while recording")
        return func(*args, **(kwargs or {}))


class ReplayingBackend:
    """CUDA's graph played on the CPU (module docstring)."""

    def __init__(self):
        self.captures, self.replays = 0, 0
        self.model = None  # whose parameters' .grad a replay leaves as it found them, as a graph does

    def serves(self, cpu):
        return True

    def side_stream(self):
        return contextlib.nullcontext()

    def new_pool(self):
        return None

    def capture(self, pool, step):
        self.captures += 1
        outputs = self._run(step)

        def replay():
            self.replays += 1
            params = list(self.model.parameters())
            held = [p.grad for p in params]
            for kept, fresh in zip(tree_leaves(outputs), tree_leaves(self._run(step))):
                kept.detach().copy_(fresh.detach())
            for param, grad in zip(params, held):
                param.grad = grad

        return replay, outputs

    def _run(self, step):
        with cuda_graphs.recording(), NoHostScalarCopies():  # what a graph recorded, run again
            return step()

    def rng_states(self):
        return torch.get_rng_state()

    def set_rng_states(self, state):
        torch.set_rng_state(state)


@pytest.fixture
def replaying(monkeypatch):
    backend = ReplayingBackend()
    monkeypatch.setattr(cuda_graphs, "BACKEND", backend)
    return backend


@pytest.fixture
def backend(device, monkeypatch):
    """The CPU's stand-in, or on a GPU CUDA itself (with its TF32 off, as for every test)."""
    if device == "cpu":
        monkeypatch.setattr(cuda_graphs, "BACKEND", ReplayingBackend())
    return cuda_graphs.BACKEND


def train(case, updates, device, *extra):
    """``(trainer, the figures of each update, the weights after, the batches)``: fairseq's trainer on the
    sample's first batches, ``updates`` a list of how many batches each update reads."""
    torch.manual_seed(0)
    trainer, batches = fairseq_trainer([*case_args(case, SAMPLE_DATA, device=device), "--dropout", "0.3", *extra])
    if isinstance(cuda_graphs.BACKEND, ReplayingBackend):
        cuda_graphs.BACKEND.model = trainer.model
    start_weights = {name: p.detach().cpu().clone() for name, p in trainer.model.named_parameters()}
    logs, start = [], 0
    for count in updates:
        logs.append(trainer.train_step(batches[start : start + count]))
        start += count
    return (
        trainer,
        logs,
        {name: (start_weights[name], p.detach().cpu().clone()) for name, p in trainer.model.named_parameters()},
        batches,
    )


@pytest.mark.parametrize("case", ["sentence lstm", "sentence single", "sentence combined", "sentence amsrn"])
def test_the_graphed_update_trains_as_the_eager_update(backend, device, case, monkeypatch):
    updates = [1, 1, 2, 1, 1]  # the third an --update-freq group of two: the second batch eager
    with monkeypatch.context() as patch:
        # on a GPU the eager pass runs as a graph's: the LSTM one layer at a time (cuDNN's dropout is another draw)
        if device == "cuda":
            patch.setattr(cuda_graphs, "capturing", lambda: True)
        _, eager_logs, eager_weights, _ = train(case, updates, device)
    trainer, graphed_logs, graphed_weights, batches = train(case, updates, device, "--cuda-graphs")
    firsts = [sum(updates[:i]) for i in range(len(updates))]  # the batches that replay a graph
    shapes = {tuple(batches[i]["target"].shape) for i in firsts}
    step = trainer.task.graphed_step
    assert len(shapes) > 1 and len(step.graphs) == len(shapes)
    assert all(p.grad is g for p, g in zip(step.params, step.grads))  # one set of gradients for every graph
    if device == "cpu":
        assert backend.captures == len(shapes) and backend.replays == len(updates)
    exact = device == "cpu"  # a GPU's capture may pick other kernels than the eager pass: the last bits
    for eager, graphed in zip(eager_logs, graphed_logs):
        for name in [*FIGURES, *SUMMED_ANOTHER_WAY]:
            if name in eager:
                close = exact and name not in SUMMED_ANOTHER_WAY
                assert graphed[name] == (eager[name] if close else pytest.approx(eager[name], rel=1e-5)), name
    assert eager_weights.keys() == graphed_weights.keys()
    for name, (start, weight) in eager_weights.items():
        if exact:
            assert torch.equal(weight, graphed_weights[name][1]), name
        else:  # against how far training moved it. On an H100 the runs end <= 4% of that apart in the LSTM's weights
            # that move little (small gradients, sums that cancel: the capture's other kernels, other last bits;
            # 8% for one that hardly moved), <= 0.1% elsewhere; another dropout draw between the layers: 14-44%
            moved, apart = (weight - start).norm(), (graphed_weights[name][1] - weight).norm()
            assert apart <= 0.1 * moved + 1e-7, f"{name}: the runs {apart:.3g} apart, training moved it {moved:.3g}"
    if case == "sentence combined":  # the pair indices each graph reads stay alive whatever the cache drops
        attention = next(m for m in trainer.model.modules() if isinstance(m, CausalHistoryAttention))
        assert len(attention._pairs_in_graphs) >= len(shapes)


@pytest.mark.parametrize("batch_first", [True, False])
def test_the_lstm_layer_by_layer_is_the_lstm(batch_first):
    """What a graph records of a 2-layer LSTM with dropout (``layer_by_layer``): on the CPU the
    multi-layer call's outputs, final states and gradients, to the bit, under the same seed."""
    lstm = torch.nn.LSTM(8, 8, 2, batch_first=batch_first, dropout=0.4)
    inputs = torch.randn(3, 5, 8)  # 3 x 5 samples x steps, or steps x samples
    rows = 3 if batch_first else 5
    for state in (None, (torch.randn(2, rows, 8), torch.randn(2, rows, 8))):
        results = []
        for run in (lstm, lambda x, s: layer_by_layer(lstm, x, s)):
            torch.manual_seed(1)
            outputs, (h, c) = run(inputs, state)
            lstm.zero_grad()
            (outputs.sum() + h.sum() + c.sum()).backward()
            results.append([outputs, h, c, *(p.grad for p in lstm.parameters())])
        assert all(torch.equal(a, b) for a, b in zip(*results))


def test_the_graphs_replay_the_batch_they_are_given(replaying):
    """A graph captured on one batch, replayed on another of its shape, gives the other's loss."""
    trainer, batches = fairseq_trainer([*case_args("sentence single", SAMPLE_DATA), "--cuda-graphs"])
    shape = next(
        b["target"].shape
        for b in batches
        if b["target"].size(1) >= 10 and sum(c["target"].shape == b["target"].shape for c in batches) >= 2
    )
    same_shape = [b for b in batches if b["target"].shape == shape][:2]
    model, criterion = trainer.model.eval(), trainer.criterion  # no dropout: the eager loss is the same draw
    replaying.model = model
    with torch.no_grad():
        for weight in model.parameters():  # a model whose losses tell batches apart
            weight.normal_(0, 0.5)
    step = cuda_graphs.GraphedTrainStep(model, criterion, trainer.optimizer)
    losses = []
    for batch in same_shape:
        losses.append(float(step(model, batch)[0]))
        model.zero_grad(set_to_none=True)
    eager = [float(criterion(model, batch)[0].detach()) for batch in same_shape]
    assert replaying.captures == 1 and losses == pytest.approx(eager, rel=1e-6) and losses[0] != losses[1]


@pytest.mark.parametrize(
    "extra, says",
    [
        (["--adaptive-softmax-cutoff", "100"], "--cuda-graphs cannot hold the adaptive softmax"),
        (["--criterion", "cross_entropy"], "--cuda-graphs needs --criterion attention_cross_entropy"),
    ],
)
def test_what_a_graph_cannot_hold_is_refused_by_name_before_training(replaying, extra, says):
    with pytest.raises(OptionError, match=says):
        fairseq_trainer([*case_args("sentence single", SAMPLE_DATA), "--cuda-graphs", *extra])


def test_a_scaled_loss_is_refused(replaying):
    """--fp16 and --amp scale the loss by a figure that changes; a graph would freeze it."""
    trainer, _ = fairseq_trainer([*case_args("sentence single", SAMPLE_DATA), "--cuda-graphs"])

    class ScalingOptimizer(type(trainer.optimizer)):
        def backward(self, loss):
            (loss * 2.0).backward()

    with pytest.raises(OptionError, match="--cuda-graphs trains in float32: --fp16 and --amp scale the loss"):
        cuda_graphs.GraphedTrainStep(trainer.model, trainer.criterion, ScalingOptimizer.__new__(ScalingOptimizer))


def test_cuda_graphs_on_the_cpu_are_refused_in_one_line(tmp_path):
    code, output = cli.run(
        "train",
        *case_args("sentence single", SAMPLE_DATA),
        "--cuda-graphs",
        "--max-update",
        "1",
        "--save-dir",
        tmp_path / "save",
        check=False,
    )
    assert code == 1 and refused(output, "fairseq-train", "--cuda-graphs replays the update as a CUDA graph")
    assert last_line(output).startswith(
        "fairseq-train: error: --cuda-graphs replays the update as a CUDA graph, and this run trains on the CPU"
    )
    assert not list((tmp_path / "save").glob("*.pt"))


def test_the_timing_benchmark_times_a_graphed_update(replaying, monkeypatch):
    """``benchmarks.host_overhead``'s ``after-graphs``: the graphed task step, which never reaches
    fairseq's ``FairseqTask.train_step``, is timed and its figures read as the eager step's are."""
    from benchmarks import host_overhead

    build = cuda_graphs.GraphedTrainStep.__init__

    def built(step, model, criterion, optimizer):
        replaying.model = model
        build(step, model, criterion, optimizer)

    monkeypatch.setattr(cuda_graphs.GraphedTrainStep, "__init__", built)
    figures = host_overhead.measure("sentence single", updates=4, skip=1, counted=2, extra=["--cuda-graphs"])
    assert figures["updates"] == 4 and figures["task_ms"] > 0 and figures["ours"] == 0
    assert replaying.replays == 4
