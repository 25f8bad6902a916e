"""Cross entropy for our language and translation models, with the Attentive LM paper's count and two
optional loss terms.

* ``paper_ppl``: the first word of each sentence (every target read from a ``</s>`` or ``<s>`` input)
  left out of the summed NLL but kept in the count, as the Attentive LM authors' code counts; lower
  than ``ppl`` by construction, and ``ppl`` is the figure to report.
* ``--attention-entropy-weight lambda`` (AMSRN, Liu et al. 2016): minimise ``L + lambda * R`` with
  ``R = sum_s 1/|s| sum_{t in s} H(alpha_t)``, the entropy of the history attention.
* ``--pointer-loss found|all`` (Pointer Sentinel-LSTM, Merity et al. 2017, Sec. 2.4): add
  ``-log(g + sum_{i in I(y, x)} a_i)`` per target, ``I(y, x)`` the window positions holding the target.
"""

import logging
import math
from dataclasses import dataclass, field

import torch
from fairseq import metrics, utils
from fairseq.criterions import FairseqCriterion, register_criterion
from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from omegaconf import II

from ..errors import OptionError
from ..modules import cuda_graphs  # cuda_graphs.capturing(): whether a CUDA graph records this pass

logger = logging.getLogger(__name__)


@dataclass
class AttentionCrossEntropyConfig(FairseqDataclass):
    attention_entropy_weight: float = field(
        default=0.0,
        metadata={
            "help": "lambda: add lambda * (per-sample mean entropy of the history attention) to "
            "the loss; > 0 sharpens, < 0 smooths; needs a model with history attention"
        },
    )
    pointer_loss: ChoiceEnum(["off", "found", "all"]) = field(
        default="off",
        metadata={
            "help": "pointer_sentinel_lm: add -log(g + the pointer's weight on the target) at the targets in its "
            "window (found), at every target (all) or nowhere (off)"
        },
    )
    sentence_avg: bool = II("optimization.sentence_avg")
    best_checkpoint_metric: str = II("checkpoint.best_checkpoint_metric")


def attention_entropy(weights: torch.Tensor) -> torch.Tensor:
    """Entropy ``-sum_i a_i log a_i`` of each attention row ``(..., S) -> (...)``; 0 log 0 = 0."""
    # the log clamped at the smallest normal float: a weight underflowed to exactly 0 would get the
    # gradient log 0 = -inf, and the softmax backward turns 0 * -inf into NaN
    return -(weights * weights.clamp_min(torch.finfo(weights.dtype).tiny).log()).sum(-1)


def target_log_probs(model, net_output, target):
    """``log p(target)`` (B, T): from our decoders' ``target_log_probs`` (the adaptive softmax
    and the pointer never form the whole distribution for it), else from the distribution."""
    decoder = getattr(model, "decoder", None)
    if hasattr(decoder, "target_log_probs"):
        return decoder.target_log_probs(net_output, target)
    log_probs = model.get_normalized_probs(net_output, log_probs=True)
    return log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)


@register_criterion("attention_cross_entropy", dataclass=AttentionCrossEntropyConfig)
class AttentionCrossEntropyCriterion(FairseqCriterion):
    reads_target_log_probs = True  # trains an adaptive softmax without forming the distribution

    def __init__(
        self,
        task,
        attention_entropy_weight=0.0,
        pointer_loss="off",
        sentence_avg=False,
        best_checkpoint_metric="nll_loss",
    ):
        super().__init__(task)
        extra = [f"--attention-entropy-weight {attention_entropy_weight}"] * (attention_entropy_weight != 0.0) + [
            f"--pointer-loss {pointer_loss}"
        ] * (pointer_loss != "off")
        if extra and best_checkpoint_metric == "loss":
            logger.warning(
                f"{' and '.join(extra)}: the logged 'loss' includes the extra term, so checkpoint_best.pt and "
                "--patience follow it, not the perplexity. Add --best-checkpoint-metric nll_loss to select the "
                "model by its NLL."
            )
        self.entropy_weight = attention_entropy_weight
        self.pointer_loss = str(pointer_loss)
        self.sentence_avg = sentence_avg

    def forward(self, model, sample, reduce=True):
        loss, figures = self.loss_terms(model, sample)
        sample_size, logging_output = self.logged(sample, figures)
        return loss, sample_size, logging_output

    def loss_terms(self, model, sample):
        """The loss and the logged figures that are tensors (the NLL, the paper's NLL, the
        attention's entropy, the pointer's term and gate), computed on the device alone: what a
        CUDA graph of the update holds (``modules/cuda_graphs.py``); ``logged`` adds the counts."""
        net_output = model(**sample["net_input"])
        target = model.get_targets(sample, net_output)
        nll = -target_log_probs(model, net_output, target).masked_fill(target.eq(self.padding_idx), 0.0)  # (B, T)
        nll_loss = nll.sum()
        first_word_nll = self._first_word_nll(sample, target, nll)
        real = target.ne(self.padding_idx)
        weights = self._history_attention(model, net_output)
        loss = nll_loss
        figures = {"nll_loss": nll_loss.data, "paper_nll_loss": (nll_loss - first_word_nll).data}
        if weights is not None:
            lengths = real.sum(1).clamp(min=1)
            entropy = (attention_entropy(weights) * real).sum(1) / lengths  # per sample
            regularizer = entropy.sum()
            if self.entropy_weight != 0.0:
                loss = loss + self.entropy_weight * regularizer
            figures["attn_entropy"] = regularizer.data
        if self.pointer_loss != "off":
            loss = loss + self._sentinel_loss(model, net_output, target, figures)
        gate = net_output[1].get("pointer_gate") if isinstance(net_output[1], dict) else None
        if gate is not None:  # the Pointer Sentinel's g: how much of p comes from the softmax
            figures["pointer_gate"] = (gate * real).sum().data
        figures["loss"] = loss.data
        return loss, figures

    def logged(self, sample, figures):
        """``(sample_size, logging_output)``: ``loss_terms``'s figures and the counts, from the
        batch (on the host where the collate counted them)."""
        target = sample["target"]
        ntokens = sample["ntokens"]
        attends = "attn_entropy" in figures
        # the samples that hold a scored token: a stream of the document task that has ended (or
        # reads its burn-in) is a row of padding, no sentence
        rows = self._scored_rows(sample, target.ne(self.padding_idx)) if self.sentence_avg or attends else None
        sample_size = rows if self.sentence_avg else ntokens
        logging_output = {
            "nll_loss": figures["nll_loss"],
            "paper_nll_loss": figures["paper_nll_loss"],
            "ntokens": ntokens,
            "nsentences": target.size(0),
            "sample_size": sample_size,
        }
        for name, value in figures.items():
            logging_output[name] = value
            if name == "attn_entropy":
                logging_output["attn_entropy_rows"] = rows
        return sample_size, logging_output

    def _sentinel_loss(self, model, net_output, target, figures):
        """The Pointer Sentinel's extra term, summed over the targets ``--pointer-loss`` names."""
        decoder = getattr(model, "decoder", None)
        if not hasattr(decoder, "sentinel_loss"):
            raise OptionError(
                f"--pointer-loss {self.pointer_loss} trains the Pointer Sentinel-LSTM's gate; this model "
                f"({model.__class__.__name__}) has no pointer: drop the option or use "
                "--arch pointer_sentinel_lm"
            )
        term, found = decoder.sentinel_loss(net_output, target)
        applied = target.ne(self.padding_idx) & (found if self.pointer_loss == "found" else True)
        term = term.masked_fill(~applied, 0.0).sum()
        figures["pointer_loss"] = term.data
        return term

    def _first_word_nll(self, sample, target, nll):
        """The NLL summed over the first words: gathered at the positions the collate found
        (``count_on_host``), else summed under their mask."""
        positions = sample.get("first_words")
        if positions is not None and sample.get("target") is target:
            return nll.flatten()[positions].sum()  # the elements of nll[mask], in its order, and no device read
        first = self._first_words(sample, target)
        # a CUDA graph's shapes cannot follow the batch's: the masked sum, the same figure in another order
        return nll.masked_fill(~first, 0.0).sum() if cuda_graphs.capturing() else nll[first].sum()

    @staticmethod
    def _scored_rows(sample, real) -> int:
        """The samples that hold a scored token, as the collate counted them (else read here)."""
        rows = sample.get("scored_rows")
        return int(real.any(1).sum()) if rows is None else rows

    def _first_words(self, sample, target):
        """Targets predicted from a sentence boundary: the decoder's input there is ``</s>``
        (or ``<s>``). A translation model's decoder input is ``prev_output_tokens``; an LM's
        is ``src_tokens``."""
        net_input = sample["net_input"]
        inputs = net_input.get("prev_output_tokens", net_input["src_tokens"])
        dictionary = self.task.target_dictionary
        return (inputs.eq(dictionary.eos()) | inputs.eq(dictionary.bos())) & target.ne(self.padding_idx)

    def _history_attention(self, model, net_output):
        extra = net_output[1] if len(net_output) > 1 and isinstance(net_output[1], dict) else {}
        weights = extra.get("history_attn")
        if isinstance(weights, list):
            weights = weights[0]
        if weights is None and self.entropy_weight != 0.0:
            raise OptionError(
                f"--attention-entropy-weight {self.entropy_weight} needs a model that returns "
                "its history attention (attentive_lm, amsrn); this model "
                f"({model.__class__.__name__}) has none: drop the option or change --arch"
            )
        return weights

    @staticmethod
    def reduce_metrics(logging_outputs) -> None:
        def total(key):
            return sum(log.get(key, 0) for log in logging_outputs)

        ntokens, nsentences, sample_size = total("ntokens"), total("nsentences"), total("sample_size")
        metrics.log_scalar("loss", total("loss") / sample_size / math.log(2), sample_size, round=3)
        metrics.log_scalar("nll_loss", total("nll_loss") / ntokens / math.log(2), ntokens, round=3)
        metrics.log_scalar("paper_nll_loss", total("paper_nll_loss") / ntokens / math.log(2), ntokens, round=3)
        metrics.log_derived("ppl", lambda m: utils.get_perplexity(m["nll_loss"].avg))
        metrics.log_derived("paper_ppl", lambda m: utils.get_perplexity(m["paper_nll_loss"].avg))
        if any("pointer_loss" in log for log in logging_outputs):  # per token, in bits like the NLL
            metrics.log_scalar("pointer_loss", total("pointer_loss") / ntokens / math.log(2), ntokens, round=3)
        if any("pointer_gate" in log for log in logging_outputs):
            metrics.log_scalar("pointer_gate", total("pointer_gate") / ntokens, ntokens, round=3)
        if any("attn_entropy" in log for log in logging_outputs):
            # per sample that holds a scored token: rows of padding (the document task's streams
            # that have ended) would scale it down with the number of streams
            rows = (
                total("attn_entropy_rows") if any("attn_entropy_rows" in log for log in logging_outputs) else nsentences
            )
            metrics.log_scalar("attn_entropy", total("attn_entropy") / max(rows, 1), rows, round=3)

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True
