"""Scoring sentences with trained word-level language models: the one scorer behind
``alm-score`` (plain text) and ``alm-rescore`` (n-best lists).

Each sentence is scored whole, as one sample that starts from ``</s>`` and ends with its
``</s>``, as ``fairseq-eval-lm --task sentence_language_modeling`` scores a binarised line; an
ensemble averages the models' per-token probabilities, as fairseq ensembles models.
Sentences are batched by length and padded on the right, which changes no score (the
models are causal and padding comes after every real token).
"""
import math
import os
from typing import List, Optional

import torch


class ScoringError(ValueError):
    """A problem with the user's input or checkpoint: reported as one line, no traceback."""


class LanguageModelScorer:
    def __init__(self, paths: List[str], data: Optional[str], use_cpu: bool, batch_tokens: int = 4000,
                 max_sentences: Optional[int] = None, tool: str = "alm-score"):
        from fairseq import checkpoint_utils
        from fairseq.models import FairseqLanguageModel

        from .models.open_vocabulary_lm import OpenVocabularyLanguageModel

        for path in paths:
            if not os.path.isfile(path):
                raise ScoringError(f"no language model checkpoint at {path}")
        self.models, self.dictionary = [], None
        data_option = "--lm-data" if tool == "alm-rescore" else "--data"
        for path in paths:
            overrides = {"data": data} if data else None
            try:
                models, _, task = checkpoint_utils.load_model_ensemble_and_task([path], arg_overrides=overrides)
            except FileNotFoundError as error:
                raise ScoringError(f"{path}: could not load its dictionary ({error}); pass {data_option}, "
                                   "the data-bin directory with the dict.txt the LM was trained on") from None
            except ValueError as error:  # our models' own checks: dictionary, architecture, options
                hint = f" ({data_option} must be the data-bin the LM was trained on)" if data and "dictionary" in str(error) else ""
                raise ScoringError(f"{path}: {error}{hint}") from None
            except Exception as error:  # a truncated or foreign file (explained by checkpoint_safety)
                raise ScoringError(str(error)) from None
            model = models[0]
            if isinstance(model, OpenVocabularyLanguageModel) or not isinstance(model, FairseqLanguageModel):
                raise ScoringError(f"{path} holds a {model.__class__.__name__}: {tool} scores with word-level "
                                   "language models (attentive_lm, amsrn, alm_lstm, fairseq's lstm_lm / "
                                   "transformer_lm); score the character models with fairseq-eval-lm")
            if self.dictionary is None:
                self.dictionary = task.source_dictionary
            elif task.source_dictionary.symbols != self.dictionary.symbols:
                raise ScoringError(f"{path} uses another dictionary than {paths[0]}: the models of an "
                                   "ensemble must share one")
            self.models.append(model.eval() if use_cpu or not torch.cuda.is_available() else model.cuda().eval())
        self.batch_tokens, self.max_sentences = batch_tokens, max_sentences
        self.device = next(self.models[0].parameters()).device
        self.max_tokens = min(m.max_positions() or math.inf for m in self.models)

    def encode(self, text: str) -> torch.Tensor:
        return self.dictionary.encode_line(text, add_if_not_exist=False, append_eos=True).long()

    def batches(self, encoded: List[torch.Tensor]):
        """Indices of sentences of similar length, at most ``batch_tokens`` tokens (and
        ``max_sentences`` sentences) per batch."""
        order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))
        start = 0
        while start < len(order):
            end = start + 1
            while end < len(order) and (end - start + 1) * len(encoded[order[end]]) <= self.batch_tokens \
                    and (self.max_sentences is None or end - start < self.max_sentences):
                end += 1
            yield [order[i] for i in range(start, end)]
            start = end

    @torch.no_grad()
    def token_log_probs(self, encoded: List[torch.Tensor], progress=None) -> List[torch.Tensor]:
        """``ln p`` of every token of each encoded sentence (``</s>`` included); ``progress(n)``
        is told of every batch of ``n`` sentences scored."""
        for i, sentence in enumerate(encoded):
            if len(sentence) > self.max_tokens:
                raise ScoringError(f"sentence {i + 1} has {len(sentence)} tokens (</s> included), more than "
                                   f"the model's context of {self.max_tokens}: split it")
        scores = [None] * len(encoded)
        for batch in self.batches(encoded):
            for i, values in zip(batch, self._score_batch([encoded[i] for i in batch])):
                scores[i] = values
            if progress is not None:
                progress(len(batch))
        return scores

    def sentence_log2_probs(self, sentences: List[str]) -> List[float]:
        """``log2 p(sentence </s>)`` for each sentence (alm-rescore's LM feature)."""
        return [float(s.sum()) / math.log(2) for s in self.token_log_probs([self.encode(s) for s in sentences])]

    def _score_batch(self, targets: List[torch.Tensor]) -> List[torch.Tensor]:
        pad, eos = self.dictionary.pad(), self.dictionary.eos()
        length = max(len(t) for t in targets)
        target = torch.full((len(targets), length), pad, dtype=torch.long)
        for row, t in enumerate(targets):
            target[row, : len(t)] = t
        source = torch.cat([target.new_full((len(targets), 1), eos), target[:, :-1]], dim=1)
        source, target = source.to(self.device), target.to(self.device)
        per_model = []
        for model in self.models:
            log_probs = model.get_normalized_probs(model(source), log_probs=True).float()
            per_model.append(log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1))
        # the ensemble averages probabilities per token: log (1/M sum_m p_m)
        token_log_probs = (torch.logsumexp(torch.stack(per_model), 0) - math.log(len(per_model))).cpu()
        return [token_log_probs[row, : len(t)] for row, t in enumerate(targets)]
