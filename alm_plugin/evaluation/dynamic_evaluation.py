"""Dynamic evaluation (Krause, Kahembwe, Murray & Renals 2018): the model keeps learning from the
text it scores.

The text is read in corpus order as one sequence of segments (a sentence, or ``--dynamic-eval-segment``
tokens of a stream). Each segment is scored with the current weights, then one step is taken on its mean
NLL, both terms at the weights that scored it:

    sgd:  theta <- theta - lr * grad + decay * (theta_0 - theta)
    rms:  theta <- theta - lr * grad / (MS + eps) + decay * decrate * (theta_0 - theta)
          MS      = sqrt(mean over training segments of grad^2)             per weight, once
          decrate = MS / mean over parameter tensors of mean(MS), capped at 1 / decay

over every trainable parameter; the decay is not scaled by lr. ``theta_0``, the trained weights, is kept
in memory (the checkpoint is never written), and every pass starts from it (``reset``).
"""

import contextlib
import copy
import itertools
import logging
import math
from dataclasses import dataclass
from typing import Optional

import torch
from fairseq import utils

from ..errors import MissingDataError, OptionError
from .heap import keep_freed_memory

logger = logging.getLogger(__name__)

RULES = ("sgd", "rms")
DECAY, RMS_EPS, SEGMENT, STATS_BATCHES = 0.0, 2e-5, 20, 100
# a segment's mean NLL above this many times a uniform guess's (ln V) is a diverged adaptation
# (a trained model's segments sit well below 1x); stop, never print it as a figure
EXPLODED = 3.0
# the first SHADOW segments of a pass are scored by the trained weights too (a frozen copy with its
# own stream state): an adapted mean NLL this far (nats) above theirs, on the same segments, from
# the MIN_SHADOWth on, is an adaptation gone bad from the start: stop
SHADOW, MIN_SHADOW, WORSE = 100, 20, math.log(1.5)
# later: the running mean NLL of the segments after the shadowed ones, DRIFT nats above the trained
# weights' mean on them, is an adaptation running away slowly: warn once
DRIFT, DRIFT_CHECK = math.log(2), 50


@dataclass(frozen=True)
class DynamicEvalSettings:
    lr: float
    decay: float
    rule: str
    eps: float
    segment: int
    stats_batches: int


class DynamicEvaluator:
    """Adapts ``model``'s parameters segment after segment (see the module's docstring). The trained
    weights are taken when the first segment is scored (after the checkpoint has been loaded)."""

    def __init__(self, model, settings: DynamicEvalSettings, training_batches=None):
        self.model, self.settings = model, settings
        self.training_batches = training_batches  # rms: a callable giving the training batches for MS
        self.parameters = [p for p in model.parameters() if p.requires_grad]
        # a segment looks up a few rows of a large table: a sparse lookup gradient spares zeroing
        # the whole table every step, the sum is the same
        self.embeddings = [
            m
            for m in model.modules()
            if isinstance(m, torch.nn.Embedding) and not m.sparse and m.weight.requires_grad and m.max_norm is None
        ]
        self.recurrent = [m for m in model.modules() if isinstance(m, torch.nn.RNNBase)]
        self.initial = None
        self.segments = 0
        dictionary = getattr(getattr(model, "decoder", None), "dictionary", None)
        self.exploded = math.inf if dictionary is None else EXPLODED * math.log(len(dictionary))
        self.nlls, self.drift_warned = [], False  # each segment's mean NLL this pass, for the drift check
        self.trained, self.trained_output, self.trained_nlls = None, None, []  # the shadow (see SHADOW)
        # the shadowed segments of the run's earlier texts (each from the trained weights): a run over
        # many short texts (alm-score's files, hub score() calls) is checked as one text would be
        self.earlier_texts, self.earlier_shadowed, self.earlier_adapted, self.earlier_trained = 0, 0, 0.0, 0.0
        keep_freed_memory()  # each step allocates the whole output layer's gradient afresh

    @contextlib.contextmanager
    def recording(self):
        """Build the graph of a scoring forward pass (fairseq scores under ``no_grad``); the LSTMs
        in train mode without dropout, so that cuDNN's can take the backward pass."""
        saved = [(lstm.training, lstm.dropout) for lstm in self.recurrent]
        for lstm in self.recurrent:
            lstm.training, lstm.dropout = True, 0.0
        for embedding in self.embeddings:
            embedding.sparse = True
        try:
            with torch.enable_grad():
                yield
        finally:
            for embedding in self.embeddings:
                embedding.sparse = False
            for lstm, (training, dropout) in zip(self.recurrent, saved):
                lstm.training, lstm.dropout = training, dropout

    def start(self):
        if self.initial is None:
            # the shadow holds the trained weights: theta_0 is its parameters (one copy, not two)
            self.trained = frozen_copy(self.model)
            self.initial = [q for p, q in zip(self.model.parameters(), self.trained.parameters()) if p.requires_grad]
            if self.settings.rule == "rms":
                self.ms = self.gradient_rms()
                mean = torch.stack([ms.mean() for ms in self.ms]).mean()
                cap = math.inf if self.settings.decay == 0 else 1 / self.settings.decay
                self.decrate = [(ms / mean).clamp(max=cap) for ms in self.ms]
                self.rates = [self.settings.decay * rate for rate in self.decrate]
                self.denominators = [ms + self.settings.eps for ms in self.ms]
        elif (self.initial[0].device, self.initial[0].dtype) != (self.parameters[0].device, self.parameters[0].dtype):
            self.trained.to(self.parameters[0].device, self.parameters[0].dtype)  # the model moved (hub: .cuda())

    def shadow(self, *args, **kwargs):
        """Score the segment about to be adapted on with the trained weights too (no graph), while the
        pass is within its first ``SHADOW`` segments: the reference that ``step`` holds it against."""
        if self.trained is not None and len(self.trained_nlls) < SHADOW:
            with torch.no_grad():
                self.trained_output = self.trained(*args, **kwargs)

    def trained_nll(self, target) -> Optional[float]:
        """The shadowed segment's mean NLL at the trained weights (None past the first ``SHADOW``)."""
        output, self.trained_output = self.trained_output, None
        if output is None or not target.ne(self.model.decoder.padding_idx).any():  # padding alone: no step
            return None
        with torch.no_grad():
            return float(mean_nll(self.trained, output, target))

    def reset(self):
        """Back to the trained weights (a new pass over a text). The text's shadowed segments join the
        run's: ``check_worse`` holds them, with the next texts', against the trained weights."""
        if self.nlls:
            shadowed = len(self.trained_nlls)
            self.earlier_texts += 1
            self.earlier_shadowed += shadowed
            self.earlier_adapted += sum(self.nlls[:shadowed])
            self.earlier_trained += sum(self.trained_nlls)
        if self.initial is not None:
            with torch.no_grad():
                for p, p0 in zip(self.parameters, self.initial):
                    p.copy_(p0)
        self.segments = 0
        self.nlls, self.drift_warned = [], False
        self.trained_output, self.trained_nlls = None, []
        reset_stream(self.trained)  # the shadow reads the next pass afresh, as the model does

    def gradient_rms(self):
        """``MS``: the root mean square of each weight's gradient of the mean NLL over training batches."""
        if self.training_batches is None:
            raise OptionError(
                "--dynamic-eval-rule rms needs the training split's gradients (MS), which this tool "
                "cannot read: use --dynamic-eval-rule sgd, or fairseq-eval-lm with the training data"
            )
        sums, count = [torch.zeros_like(p) for p in self.parameters], 0
        try:
            batches = iter(self.training_batches(self.settings.stats_batches, self.settings.segment))
            first = next(batches, None)
        except MissingDataError as missing:
            raise rms_without_training_data(str(missing)) from None
        for sample in itertools.chain([] if first is None else [first], batches):
            if self.parameters[0].is_cuda:
                sample = utils.move_to_cuda(sample)
            with self.recording():
                net_output = self.model(**{k: v for k, v in sample["net_input"].items() if k != "src_lengths"})
                loss = mean_nll(self.model, net_output, sample["target"])
            for total, grad in zip(sums, dense_gradients(loss, self.parameters)):
                total.add_(grad.detach() ** 2)
            count += 1
        if count == 0:
            raise OptionError("--dynamic-eval-rule rms: the training split has no batch to measure MS on")
        reset_stream(self.model)  # the evaluation starts its stream afresh
        logger.info(f"dynamic evaluation: MS from {count} training batches")
        return [(total / count).sqrt() for total in sums]

    def step(self, loss: torch.Tensor, trained_nll: Optional[float] = None):
        """One step on the scored segment's mean NLL ``loss`` (its graph at the weights that scored it);
        ``trained_nll``: the same segment's at the trained weights, while shadowed."""
        self.segments += 1
        nll = float(loss.detach())
        if not math.isfinite(nll) or nll > self.exploded:
            where = f"segment {self.segments}" + (f" of text {self.earlier_texts + 1}" if self.earlier_texts else "")
            raise OptionError(
                f"dynamic evaluation: the NLL of {where} is {nll:.4g} nats a token "
                f"(above {EXPLODED:g} x ln V = {self.exploded:.1f}): the adapted weights diverged; "
                "lower --dynamic-eval-lr (no figure is given for a partial text)"
            )
        self.nlls.append(nll)
        if trained_nll is not None:
            self.trained_nlls.append(trained_nll)
            self.check_worse()
        self.check_drift()
        grads = dense_gradients(loss, self.parameters)
        s = self.settings
        # in place over all tensors at once (the elementwise ops, not the passes, are the cost here);
        # the pull is taken at the weights that scored the segment, before the gradient step
        with torch.no_grad():
            if s.rule == "sgd":
                if s.decay:
                    torch._foreach_lerp_(self.parameters, self.initial, s.decay)  # + decay (theta_0 - theta)
                torch._foreach_add_(self.parameters, grads, alpha=-s.lr)
            else:
                pulls = torch._foreach_sub(self.initial, self.parameters)
                torch._foreach_mul_(pulls, self.rates)  # decay * decrate, per weight
                torch._foreach_addcdiv_(self.parameters, grads, self.denominators, value=-s.lr)
                torch._foreach_add_(self.parameters, pulls)

    def check_worse(self):
        """Stop a pass whose adapted segments score ``WORSE`` nats a token above the trained weights on the
        same segments (from the ``MIN_SHADOW``th shadowed one on), and the same over the run's texts so far,
        so that texts shorter than ``MIN_SHADOW`` segments each are checked together."""
        shadowed = len(self.trained_nlls)
        if shadowed >= MIN_SHADOW:
            adapted = sum(self.nlls[:shadowed]) / shadowed
            trained = sum(self.trained_nlls) / shadowed
            if shadowed == SHADOW:
                logger.info(
                    f"dynamic evaluation: segments 1-{SHADOW} average {adapted:.4f} nats a token adapted, "
                    f"{trained:.4f} at the trained weights"
                )
            if adapted > trained + WORSE:
                raise OptionError(
                    f"dynamic evaluation made the model worse: segments 1-{shadowed} average "
                    f"{adapted:.2f} nats a token adapted against {trained:.2f} at the trained weights "
                    f"(perplexity x{math.exp(adapted - trained):.1f}): lower --dynamic-eval-lr or raise "
                    "--dynamic-eval-decay (no figure is given for a partial text)"
                )
        count = self.earlier_shadowed + shadowed
        if not self.earlier_texts or count < MIN_SHADOW:
            return
        adapted = (self.earlier_adapted + sum(self.nlls[:shadowed])) / count
        trained = (self.earlier_trained + sum(self.trained_nlls)) / count
        if adapted > trained + WORSE:
            texts = self.earlier_texts + 1
            raise OptionError(
                f"dynamic evaluation made the model worse: over texts 1-{texts} (each from the trained "
                f"weights) the {count} segments scored at the trained weights too average {adapted:.2f} "
                f"nats a token adapted against {trained:.2f} (perplexity "
                f"x{math.exp(adapted - trained):.1f}): lower --dynamic-eval-lr or raise "
                "--dynamic-eval-decay (no figure is given for part of the texts)"
            )

    def check_drift(self):
        """Warn once a pass where the segments' mean NLL since the shadowed ones has risen ``DRIFT``
        nats above the trained weights' mean on those: an adaptation that runs away slowly stays
        finite and would otherwise be printed as a figure."""
        reference = self.trained_nlls
        later = len(self.nlls) - len(reference)
        if len(reference) < MIN_SHADOW or later <= 0 or later % DRIFT_CHECK or self.drift_warned:
            return
        start = sum(reference) / len(reference)
        since = sum(self.nlls[len(reference) :]) / later
        if since > start + DRIFT:
            self.drift_warned = True
            logger.warning(
                f"dynamic evaluation is running away: segments {len(reference) + 1}-{len(self.nlls)} "
                f"average {since:.2f} nats a token against {start:.2f} for the first {len(reference)} "
                f"at the trained weights (perplexity x{math.exp(since - start):.1f}); the figure will "
                "be worse than the static model's: lower --dynamic-eval-lr or raise --dynamic-eval-decay"
            )


def frozen_copy(model):
    """A copy of ``model`` at its current (trained) weights without gradients, in eval mode, its own
    stream state, neither the evaluator nor the neural cache: the shadow that scores the first
    segments statically."""
    # the evaluator and the cache copied as None (deepcopy returns what its memo holds for an object):
    # the copy scores the model's own NLL
    leave_out = (model.__dict__.get("dynamic_eval"), model.__dict__.get("neural_cache"))
    trained = copy.deepcopy(model, {id(state): None for state in leave_out if state is not None})
    reset_stream(trained)
    trained.requires_grad_(False)
    # nn.Module's own train(): fairseq's make_generation_fast_ replaces a model's with one that does nothing
    torch.nn.Module.train(trained, False)
    return trained


def reset_stream(model) -> None:
    """Forget the stream state a model carries between segments (if it reads streams)."""
    carry = getattr(getattr(model, "decoder", None), "carry", None)
    if carry is not None:
        carry.reset()


def rms_without_training_data(missing: str) -> MissingDataError:
    """The refusal of rms where the training split is missing (``missing``: what is, and its fix):
    it says why rms needs the split, and that sgd does not."""
    return MissingDataError(
        f"--dynamic-eval-rule rms measures MS, each weight's gradient, on the training split, but "
        f"{missing}; or use --dynamic-eval-rule sgd, which needs no training data"
    )


def check_training_split(data: str) -> None:
    """rms reads ``data``'s training split: refuse its absence when the evaluator is attached (at build
    time, before fairseq-eval-lm reads a batch), not at the first segment."""
    import os

    from fairseq.data.indexed_dataset import infer_dataset_impl

    directory = utils.split_paths(data)[0]
    if infer_dataset_impl(os.path.join(directory, "train")) is None:
        raise rms_without_training_data(
            f"there is no 'train' data in {directory}: give the data-bin the model was "
            "trained on (or binarise its training text with fairseq-preprocess "
            "--only-source)"
        )


def dense_gradients(loss, parameters):
    """d loss / d p for each of ``parameters``, dense (an untied lookup table's is sparse; unused: 0)."""
    grads = torch.autograd.grad(loss, parameters, allow_unused=True)
    return [torch.zeros_like(p) if g is None else g.to_dense() if g.is_sparse else g for p, g in zip(parameters, grads)]


def mean_nll(model, net_output, target) -> torch.Tensor:
    """The mean NLL of the real targets (``</s>`` included), from the model's own distribution."""
    real = target.ne(model.decoder.padding_idx)
    return -model.decoder.target_log_probs(net_output, target)[real].mean()
