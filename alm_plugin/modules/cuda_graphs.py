"""``--cuda-graphs``: a training update's forward, loss and backward replayed as one CUDA graph.

Each batch shape gets its graph the first time it trains; the host then launches the update's kernels in
one call. While a graph is recorded (``capturing()``), the models run only what a graph can hold.
docs/models.md ("CUDA graphs") says how an update is captured and replayed.
"""

import contextlib
import logging
import threading
from typing import Callable, Dict

import torch
from torch import Tensor

from ..errors import OptionError

logger = logging.getLogger(__name__)

WARMUP_PASSES = 3  # eager passes before a capture, as torch's documentation advises


class CudaBackend:
    """What the graphed step asks of CUDA; a test puts a stand-in here (``BACKEND``) to run the
    same code on the CPU."""

    @staticmethod
    def serves(cpu: bool) -> bool:
        """Whether a run trains where graphs replay: on a GPU (not ``--cpu``, and one torch can use)."""
        return not cpu and torch.cuda.is_available()

    @contextlib.contextmanager
    def side_stream(self):
        """A context on a stream of its own (one for every capture: cuBLAS keeps a workspace per
        stream) that the current stream waits for on exit."""
        if getattr(self, "_side", None) is None:
            self._side = torch.cuda.Stream()
        current = torch.cuda.current_stream()
        self._side.wait_stream(current)
        with torch.cuda.stream(self._side):
            yield
        current.wait_stream(self._side)

    @staticmethod
    def new_pool():
        return torch.cuda.graph_pool_handle()

    @staticmethod
    def capture(pool, step: Callable[[], tuple]):
        """``(replay, outputs)``: ``step`` captured into a CUDA graph; ``replay()`` runs it again,
        writing its outputs (tensors) where the capture left them."""
        graph = torch.cuda.CUDAGraph()
        # this thread's calls alone: fairseq's data loading pins memory in threads of its own meanwhile
        with torch.cuda.graph(graph, pool=pool, capture_error_mode="thread_local"):
            outputs = step()
        return graph.replay, outputs

    @staticmethod
    def rng_states():
        return torch.get_rng_state(), torch.cuda.get_rng_state()

    @staticmethod
    def set_rng_states(states):
        torch.set_rng_state(states[0])
        torch.cuda.set_rng_state(states[1])


BACKEND = CudaBackend()
_recording = threading.local()  # the warm-up passes and the capture of a graph, in this thread


def capturing() -> bool:
    """Whether the update is being recorded into a graph (or warmed up for it): a read of a device
    value, a shape that follows one (a boolean-mask index), or a state the graph cannot follow must
    not be in it."""
    return getattr(_recording, "on", False)


@contextlib.contextmanager
def recording():
    before, _recording.on = capturing(), True
    try:
        yield
    finally:
        _recording.on = before


ON_THE_CPU = (
    "--cuda-graphs replays the update as a CUDA graph, and this run trains on the CPU (--cpu, or no GPU "
    "torch can use): drop --cuda-graphs, or train on a GPU"
)
SCALED_LOSS = (
    "--cuda-graphs trains in float32: --fp16 and --amp scale the loss by a figure that changes, "
    "which the graph would freeze; drop --fp16 / --amp or --cuda-graphs"
)


def check_options(cpu: bool, fp16: bool, amp: bool, world_size: int) -> None:
    """Refuse, before a batch is read, the runs a graph of the update cannot serve."""
    if not BACKEND.serves(cpu):
        raise OptionError(ON_THE_CPU)
    if fp16 or amp:
        raise OptionError(SCALED_LOSS)
    if world_size > 1:
        raise OptionError(
            "--cuda-graphs trains on one GPU (a graph would hold DistributedDataParallel's "
            "gradient exchange): drop --cuda-graphs or train on one GPU"
        )


def check_model(model) -> None:
    if getattr(getattr(model, "decoder", None), "adaptive_softmax", None) is not None:
        raise OptionError(
            "--cuda-graphs cannot hold the adaptive softmax, which picks each cluster's rows by their "
            "targets (a shape only the batch knows): drop --adaptive-softmax-cutoff or --cuda-graphs"
        )


def check_criterion(criterion) -> None:
    if not hasattr(criterion, "loss_terms"):
        raise OptionError(
            f"--cuda-graphs needs --criterion attention_cross_entropy (this run's criterion, "
            f"{type(criterion).__name__}, reads counts on the host inside its loss)"
        )


def check_graphable(model, criterion, optimizer) -> None:
    """What the update's graph is built from, checked again where it is built."""
    from fairseq.optim import FairseqOptimizer

    check_model(model)
    check_criterion(criterion)
    if not BACKEND.serves(cpu=not any(p.is_cuda for p in model.parameters())):
        raise OptionError(ON_THE_CPU)
    if type(optimizer).backward is not FairseqOptimizer.backward:
        raise OptionError(SCALED_LOSS)


class GraphedTrainStep:
    """``task.train_step``'s forward, loss and backward, captured once per batch shape and replayed."""

    def __init__(self, model, criterion, optimizer):
        check_graphable(model, criterion, optimizer)
        self.criterion = criterion
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.grads = [torch.zeros_like(p) for p in self.params]  # what every graph's backward writes
        self.graphs = {}
        self.pool = None

    @staticmethod
    def _inputs(sample) -> Dict[str, Tensor]:
        """The batch's tensors that the model and the loss read (the graph's inputs)."""
        inputs = {f"net_input.{k}": v for k, v in sample["net_input"].items() if isinstance(v, Tensor)}
        inputs["target"] = sample["target"]
        return inputs

    def takes(self, sample) -> bool:
        """Whether this update can replay a graph: the batch counted on the host by the collate,
        no gradient already held (else the eager backward adds to it)."""
        return (
            isinstance(sample, dict)
            and "scored_rows" in sample
            and "target" in sample
            and all(p.grad is None for p in self.params)
        )

    def __call__(self, model, sample):
        inputs = self._inputs(sample)
        key = tuple((name, tuple(t.shape), t.dtype) for name, t in sorted(inputs.items()))
        entry = self.graphs.get(key)
        if entry is None:
            entry = self.graphs[key] = self._capture(model, sample, inputs)
        static, replay, (loss, tensors), took_part = entry
        for name, tensor in inputs.items():
            static[name].copy_(tensor, non_blocking=True)
        replay()
        for param, grad, part in zip(self.params, self.grads, took_part):
            param.grad = grad if part else None
        # the next replay writes over these: the logs keep their own copies
        tensors = {name: value.clone() for name, value in tensors.items()}
        sample_size, logging_output = self.criterion.logged(sample, tensors)
        return loss.detach(), sample_size, logging_output

    def _capture(self, model, sample, inputs):
        static = {name: tensor.clone() for name, tensor in inputs.items()}
        static_sample = {key: value for key, value in sample.items() if key not in ("net_input", "first_words")}
        static_sample["net_input"] = {k: static.get(f"net_input.{k}", v) for k, v in sample["net_input"].items()}
        static_sample["target"] = static["target"]

        took_part = []

        def step():
            loss, tensors = self.criterion.loss_terms(model, static_sample)
            loss.backward()
            took_part[:] = [p.grad is not None for p in self.params]
            # the gradients into the buffers every graph shares: the graph's own are then temporaries
            # that the next capture may reuse (one set of gradients in all, not one a batch shape)
            for param, grad in zip(self.params, self.grads):
                if param.grad is not None:
                    grad.copy_(param.grad)
                param.grad = None
            return loss, tensors

        rng = BACKEND.rng_states()
        if self.pool is None:
            self.pool = BACKEND.new_pool()
        with recording():
            with BACKEND.side_stream():
                for _ in range(WARMUP_PASSES):
                    step()
            try:
                replay, outputs = BACKEND.capture(self.pool, step)
            except RuntimeError as error:
                if isinstance(error, torch.cuda.OutOfMemoryError):  # fairseq's own handling: not the model's fault
                    raise
                raise OptionError(
                    f"--cuda-graphs: this model's update cannot be captured as a CUDA graph "
                    f"({str(error).splitlines()[0]}): drop --cuda-graphs"
                ) from error
        BACKEND.set_rng_states(rng)
        logger.info(
            f"--cuda-graphs: captured the update of a {' x '.join(map(str, static['target'].shape))} batch "
            f"({len(self.graphs) + 1} batch shapes so far)"
        )
        return static, replay, outputs, took_part
