"""The channel model of noisy-channel reranking (Yee et al. 2019, fairseq's ``examples/noisychannel``):
a fairseq translation model trained in the reverse direction, target -> source, scores
``log2 p(source | hypothesis)`` for each hypothesis of an n-best list."""

import math
import os
from typing import List, Optional

import torch

from ..errors import ScoringError
from .scoring import length_batches

UNKNOWN_SHARE = 0.05  # more unknown tokens than this: the dictionaries belong to other text


class ChannelScorer:
    """A translation checkpoint that reads a hypothesis and scores the source sentence after it."""

    def __init__(self, path: str, data: Optional[str], use_cpu: bool, batch_tokens: int = 4000):
        from fairseq import checkpoint_utils
        from fairseq.tasks.translation import TranslationTask

        if not os.path.isfile(path):
            raise ScoringError(f"no channel model checkpoint at {path}")
        overrides = {"data": data} if data else None
        try:
            models, _, task = checkpoint_utils.load_model_ensemble_and_task([path], arg_overrides=overrides)
        except FileNotFoundError as error:
            raise ScoringError(
                f"{path}: could not load its dictionaries ({error}): pass --channel-data, the data-bin "
                "the channel model was trained on"
            ) from None
        except Exception as error:  # a truncated or foreign file, a language model's dictionary
            raise ScoringError(f"{path}: {error}") from None
        if not isinstance(task, TranslationTask):
            raise ScoringError(
                f"{path} is a model of the {type(task).__name__} task, not a translation model: --channel takes "
                "a fairseq translation checkpoint trained from the n-best list's target language to its source"
            )
        self.path = path
        self.task = task
        self.model = models[0].eval()
        self.device = "cpu" if use_cpu or not torch.cuda.is_available() else "cuda"
        self.model.to(self.device)
        self.batch_tokens = batch_tokens
        self.reads, self.writes = task.cfg.source_lang, task.cfg.target_lang

    def check_languages(self, hypothesis_lang: str, source_lang: str) -> None:
        """The channel reads the hypotheses' language and writes the source's: refused otherwise."""
        if (self.reads, self.writes) != (hypothesis_lang, source_lang):
            raise ScoringError(
                f"{self.path} translates {self.reads} -> {self.writes}, but the channel model scores "
                f"{source_lang} sources given {hypothesis_lang} hypotheses: train it with --source-lang "
                f"{hypothesis_lang} --target-lang {source_lang}, or give --lang and --source-lang as they are"
            )

    def encode(self, dictionary, texts: List[str], side: str, fix: str) -> List[torch.Tensor]:
        """Token ids with ``</s>``; refused when more than ``UNKNOWN_SHARE`` of the tokens are unknown."""
        encoded = [dictionary.encode_line(text, add_if_not_exist=False, append_eos=True).long() for text in texts]
        tokens = sum(len(e) for e in encoded)
        unknown = sum(int(e.eq(dictionary.unk()).sum()) for e in encoded)
        if tokens and unknown > UNKNOWN_SHARE * tokens:
            raise ScoringError(
                f"{self.path}: {unknown} of the {tokens} {side} tokens are unknown to its dictionary: the channel "
                f"model was trained on other text or another BPE; {fix}"
            )
        return encoded

    def log2_probs(self, hypotheses: List[str], sources: List[str]) -> List[float]:
        """``log2 p(source </s> | hypothesis)`` for each pair, both in the channel model's own text form."""
        from fairseq.data import LanguagePairDataset
        from fairseq.sequence_scorer import SequenceScorer

        src_dict, tgt_dict = self.task.source_dictionary, self.task.target_dictionary
        reads = self.encode(src_dict, hypotheses, "hypothesis", "give the channel model trained on this n-best's BPE")
        writes = self.encode(tgt_dict, sources, "source", "check --source-form and --source-bpe-codes")
        dataset = LanguagePairDataset(
            reads,
            [len(r) for r in reads],
            src_dict,
            writes,
            [len(w) for w in writes],
            tgt_dict,
            left_pad_source=self.task.cfg.left_pad_source,
            left_pad_target=self.task.cfg.left_pad_target,
        )
        scorer = SequenceScorer(tgt_dict)
        scores = [0.0] * len(reads)
        pairs = [torch.cat([r, w]) for r, w in zip(reads, writes)]  # a batch's cost: both sides' tokens
        with torch.no_grad():
            for indices in length_batches(pairs, self.batch_tokens, None):
                sample = dataset.collater([dataset[i] for i in indices])
                sample = {k: v.to(self.device) if torch.is_tensor(v) else v for k, v in sample.items()}
                sample["net_input"] = {k: v.to(self.device) for k, v in sample["net_input"].items()}
                for i, hypos in zip(sample["id"].tolist(), scorer.generate([self.model], sample)):
                    scores[i] = float(hypos[0]["positional_scores"].sum()) / math.log(2)
        return scores
