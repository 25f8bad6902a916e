"""Exact word likelihood for the character-level models, reported in bits per character.

The loss is ``-sum_t log p(w_t | w_<t)`` over the real target words, the cache mixture marginalised
inside ``p`` (Kawakami et al. 2017, "Training objective"), averaged per word for the optimiser. Logged
beside it: ``ppl`` per word, ``bpc = -log2 p(corpus) / |c|`` with ``|c|`` the sample's ``nchars``
(``data/spelling.py``) and, for the cache model, ``cache_use``, the mean cache posterior ``p(z_t | w)``.
"""

import math

from fairseq import metrics, utils
from fairseq.criterions import FairseqCriterion, register_criterion
from fairseq.dataclass import FairseqDataclass

from ..errors import OptionError


@register_criterion("open_vocabulary_cross_entropy", dataclass=FairseqDataclass)
class OpenVocabularyCrossEntropy(FairseqCriterion):
    def forward(self, model, sample, reduce=True):
        if "nchars" not in sample:
            raise OptionError(
                "open_vocabulary_cross_entropy needs batches from "
                "--task open_vocabulary_language_modeling (they count characters)"
            )
        log_probs, extra = model(**sample["net_input"])
        real = sample["target"].ne(self.padding_idx)
        nll = -(log_probs.squeeze(-1) * real).sum()
        ntokens = sample["ntokens"]
        logging_output = {
            "loss": nll.data,
            "nll_loss": nll.data,
            "ntokens": ntokens,
            "nchars": sample["nchars"],
            "nsentences": sample["nsentences"],
            "sample_size": ntokens,
        }
        if "cache_posterior" in extra:
            logging_output["cache_posterior"] = (extra["cache_posterior"] * real).sum().data
        return nll, ntokens, logging_output

    @staticmethod
    def reduce_metrics(logging_outputs) -> None:
        def total(key):
            return sum(log.get(key, 0) for log in logging_outputs)

        loss, ntokens, nchars = total("loss"), total("ntokens"), total("nchars")
        metrics.log_scalar("loss", loss / max(ntokens, 1) / math.log(2), ntokens, round=3)
        metrics.log_scalar("nll_loss", loss / max(ntokens, 1) / math.log(2), ntokens, round=3)
        metrics.log_derived("ppl", lambda meters: utils.get_perplexity(meters["nll_loss"].avg))
        metrics.log_scalar("bpc", loss / max(nchars, 1) / math.log(2), nchars, round=4)
        if any("cache_posterior" in log for log in logging_outputs):
            metrics.log_scalar("cache_use", total("cache_posterior") / max(ntokens, 1), ntokens, round=3)

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True
