"""The scorers behind ``alm-score`` (plain text) and ``alm-rescore`` (n-best lists):
``LanguageModelScorer`` for word-level models, ``CharacterModelScorer`` for character-level ones.
An ensemble averages the models' per-token probabilities, as fairseq ensembles models.
"""

import copy
import logging
import math
import re
from typing import List, Optional

import torch

from ..data.task_reading import reads_streams
from ..errors import ScoringError
from .model_loading import load_models

logger = logging.getLogger(__name__)


def is_out_of_memory(error: BaseException) -> bool:
    """torch's failed allocations: ``RuntimeError`` (CPU: "can't allocate memory"; CUDA: "out of
    memory") or Python's ``MemoryError``."""
    return isinstance(error, MemoryError) or (
        isinstance(error, RuntimeError) and ("can't allocate memory" in str(error) or "out of memory" in str(error))
    )


def out_of_memory(
    error: BaseException, encoded: List[torch.Tensor], batch: List[int], vocabulary: int, batch_tokens: int
) -> "ScoringError":
    """Why a batch did not fit, and what to do, naming its longest sentence. A word-level model
    scores a sentence whole (its state and history start at the sentence), so it is not cut
    into pieces here: that would score another text."""
    longest = max(batch, key=lambda i: len(encoded[i]))
    length = len(encoded[longest])
    asked = re.search(r"allocate (\d+) bytes", str(error))
    asked = f", {int(asked.group(1)) / 1e9:.1f} GB in one piece" if asked else ""
    need = (
        f"a sentence is scored whole: its {length:,} x {vocabulary:,} output probabilities and, with history "
        f"attention, {length:,} x {length:,} attention weights at once"
    )
    if len(batch) == 1:
        return ScoringError(
            f"out of memory scoring sentence {longest + 1} ({length:,} tokens, </s> included{asked}): "
            f"{need}; split the line into sentences"
        )
    return ScoringError(
        f"out of memory scoring a batch of {len(batch)} sentences (the longest, sentence "
        f"{longest + 1}, has {length:,} tokens{asked}): {need}; lower --batch-tokens "
        f"(now {batch_tokens}), or split the long line"
    )


def is_character_model(model) -> bool:
    from ..models.open_vocabulary_lm import OpenVocabularyLanguageModel

    return isinstance(model, OpenVocabularyLanguageModel)


def shared_dictionary(paths, loaded):
    dictionary = loaded[0][1].source_dictionary
    for path, (_, task) in zip(paths[1:], loaded[1:]):
        if task.source_dictionary.symbols != dictionary.symbols:
            raise ScoringError(
                f"{path} uses another dictionary than {paths[0]}: the models of an ensemble must share one"
            )
    return dictionary


def length_batches(encoded: List[torch.Tensor], batch_tokens: int, max_sentences: Optional[int]):
    """Indices of sentences of similar length, at most ``batch_tokens`` tokens (and
    ``max_sentences`` sentences) per batch."""
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))
    start = 0
    while start < len(order):
        end = start + 1
        while (
            end < len(order)
            and (end - start + 1) * len(encoded[order[end]]) <= batch_tokens
            and (max_sentences is None or end - start < max_sentences)
        ):
            end += 1
        yield [order[i] for i in range(start, end)]
        start = end


def padded_batch(targets: List[torch.Tensor], pad: int, eos: int):
    """``(source, target)`` (B, T), padded on the right, collated as fairseq's language-modelling
    datasets collate: the source is each target shifted by one after a ``</s>``."""
    from fairseq.data.data_utils import collate_tokens

    return (
        collate_tokens(targets, pad, eos, left_pad=False, move_eos_to_beginning=True),
        collate_tokens(targets, pad, eos, left_pad=False),
    )


def ensemble(per_model: List[torch.Tensor]) -> torch.Tensor:
    """log (1/M sum_m p_m), token by token."""
    return torch.logsumexp(torch.stack(per_model), 0) - math.log(len(per_model))


def text_bounds(count: int, texts=None):
    """``[(start, end)]`` of each text's sentences among ``count`` (``texts``: each text's number of
    sentences, empty texts skipped; ``None``: one text)."""
    if texts is None:
        return [(0, count)] if count else []
    if sum(texts) != count:
        raise ValueError(f"the texts hold {sum(texts)} sentences, not {count}")
    bounds, start = [], 0
    for size in texts:
        if size:
            bounds.append((start, start + size))
        start += size
    return bounds


class LanguageModelScorer:
    """Word-level models on sentences, each scored whole as ``fairseq-eval-lm --task
    sentence_language_modeling`` scores a binarised line, or, with ``document``, the lines in order
    as one text."""

    def __init__(
        self,
        paths: List[str],
        data: Optional[str],
        use_cpu: bool,
        batch_tokens: int = 4000,
        max_sentences: Optional[int] = None,
        tool: str = "alm-score",
        loaded=None,
        document: bool = False,
    ):
        """The models score with the neural cache or dynamic evaluation that ``EvaluationOptions.prepare``
        gave them, either of which also reads the lines in order as one text."""
        loaded = loaded or load_models(paths, data, use_cpu, tool)
        for path, (model, _) in zip(paths, loaded):
            if is_character_model(model):
                raise ScoringError(
                    f"{path} holds a {model.__class__.__name__}: {tool} scores with word-level "
                    "language models (attentive_lm, amsrn, alm_lstm, fairseq's lstm_lm / "
                    "transformer_lm); score the character models with alm-score or "
                    "fairseq-eval-lm"
                )
        self.models = [model for model, _ in loaded]
        self.dictionary = shared_dictionary(paths, loaded)
        self.batch_tokens, self.max_sentences = batch_tokens, max_sentences
        self.device = next(self.models[0].parameters()).device
        self.max_tokens = min(m.max_positions() or math.inf for m in self.models)
        evaluator = getattr(self.models[0], "dynamic_eval", None)  # an ensemble has none (prepare refuses it)
        self.dynamic = evaluator.settings if evaluator is not None else None
        cached = any(getattr(model, "neural_cache", None) is not None for model in self.models)
        self.document = document or cached or self.dynamic is not None
        # per model: the chunk length of a model trained on streams (its state carries), else None
        self.chunks = [task.cfg.tokens_per_sample if reads_streams(task) else None for _, task in loaded]
        if any(self.chunks) and not self.document:
            raise ScoringError(
                f"{paths[self.chunks.index(next(c for c in self.chunks if c))]} was trained on "
                "document_language_modeling, which reads text as one stream: score it with "
                "--context document"
            )
        if self.dynamic is not None:
            # a stream model's segments are --dynamic-eval-segment tokens of the one stream
            self.chunks = [self.dynamic.segment if chunk else None for chunk in self.chunks]

    def encode(self, text: str) -> torch.Tensor:
        return self.dictionary.encode_line(text, add_if_not_exist=False, append_eos=True).long()

    @torch.no_grad()
    def token_log_probs(self, encoded: List[torch.Tensor], progress=None, texts=None) -> List[torch.Tensor]:
        """``ln p`` of every token of each encoded sentence (``</s>`` included); ``progress(n)``
        is told of every batch of ``n`` sentences scored. ``texts``: the number of sentences of
        each text, in order (``None``: one text); read as a document, each text starts from a fresh
        state, an empty cache and the trained weights."""
        for i, sentence in enumerate(encoded):
            if len(sentence) > self.max_tokens:
                raise ScoringError(
                    f"sentence {i + 1} has {len(sentence)} tokens (</s> included), more than "
                    f"the model's context of {self.max_tokens}: split it"
                )
        if self.document:
            try:
                return self._score_document(encoded, progress, texts)
            except (RuntimeError, MemoryError) as error:
                if not is_out_of_memory(error):
                    raise
                longest = max(range(len(encoded)), key=lambda i: len(encoded[i]))  # the likely culprit
                raise out_of_memory(error, encoded, [longest], len(self.dictionary), self.batch_tokens) from None
        scores = [None] * len(encoded)
        for batch in length_batches(encoded, self.batch_tokens, self.max_sentences):
            try:
                batch_scores = self._score_batch([encoded[i] for i in batch])
            except (RuntimeError, MemoryError) as error:
                if not is_out_of_memory(error):
                    raise
                raise out_of_memory(error, encoded, batch, len(self.dictionary), self.batch_tokens) from None
            for i, values in zip(batch, batch_scores):
                scores[i] = values
            if progress is not None:
                progress(len(batch))
        return scores

    def _score_document(self, encoded, progress, texts=None):
        """The lines in order, each text one document: a stream model carries its state from line to
        line, a sentence-level model scores each line from a fresh state, a neural cache spans the lines."""
        per_model = []
        for model, chunk in zip(self.models, self.chunks):
            scores = []
            for start, end in text_bounds(len(encoded), texts):
                model.start_text()  # an empty cache, the trained weights
                part = encoded[start:end]
                scores += self._stream(model, part, chunk) if chunk else self._in_order(model, part)
            per_model.append(torch.cat(scores))
        if progress is not None:
            progress(len(encoded))
        return list(ensemble(per_model).split([len(t) for t in encoded]))

    def _in_order(self, model, encoded):
        """A sentence-level model: batches of consecutive lines, each from a fresh state."""
        pad, eos = self.dictionary.pad(), self.dictionary.eos()
        scores, start = [], 0
        while start < len(encoded):
            end, longest = start + 1, len(encoded[start])
            # dynamic evaluation adapts after each line: one at a time
            while (
                end < len(encoded)
                and self.dynamic is None
                and (self.max_sentences is None or end - start < self.max_sentences)
                and (end - start + 1) * max(longest, len(encoded[end])) <= self.batch_tokens
            ):
                longest = max(longest, len(encoded[end]))
                end += 1
            source, target = padded_batch(encoded[start:end], pad, eos)
            sample = {
                "id": torch.arange(start, end, device=self.device),
                "target": target.to(self.device),
                "net_input": {"src_tokens": source.to(self.device)},
            }
            log_probs = model.get_normalized_probs(
                model(sample["net_input"]["src_tokens"]), log_probs=True, sample=sample
            ).float()
            token_scores = log_probs.gather(-1, sample["target"].unsqueeze(-1)).squeeze(-1).cpu()
            scores += [token_scores[row, : len(t)] for row, t in enumerate(encoded[start:end])]
            start = end
        return scores

    def _stream(self, model, encoded, chunk):
        """A model trained on streams: the lines as one stream, its state carried chunk to chunk."""
        from ..data.word_streams import WordStreamDataset

        stream = WordStreamDataset(torch.cat(encoded), 1, chunk, self.dictionary.pad(), self.dictionary.eos())
        model.decoder.carry.reset()
        scores = []
        for index in range(len(stream)):
            item = stream[index]
            net_input = {
                "src_tokens": item["source"].to(self.device),
                "stream_ids": item["streams"].to(self.device),
                "stream_positions": torch.tensor([item["position"]], device=self.device),
            }
            target = item["target"].to(self.device)
            sample = {"id": torch.tensor([index]), "target": target, "net_input": net_input}
            log_probs = model.get_normalized_probs(model(**net_input), log_probs=True, sample=sample).float()
            # one stream is never padded (a literal <pad> word in the text is a word here)
            scores.append(log_probs.gather(-1, target.unsqueeze(-1))[0, :, 0].cpu())
        model.decoder.carry.reset()
        return scores

    def sentence_log2_probs(self, sentences: List[str]) -> List[float]:
        """``log2 p(sentence </s>)`` for each sentence (alm-rescore's LM feature)."""
        return [float(s.sum()) / math.log(2) for s in self.token_log_probs([self.encode(s) for s in sentences])]

    def _score_batch(self, targets: List[torch.Tensor]) -> List[torch.Tensor]:
        # padded on the right, after every real token: a causal model's scores do not change
        source, target = padded_batch(targets, self.dictionary.pad(), self.dictionary.eos())
        source, target = source.to(self.device), target.to(self.device)
        per_model = []
        for model in self.models:
            log_probs = model.get_normalized_probs(model(source), log_probs=True).float()
            per_model.append(log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1))
        token_log_probs = ensemble(per_model).cpu()
        return [token_log_probs[row, : len(t)] for row, t in enumerate(targets)]


class CharacterModelScorer:
    """The character-level models (``char_cache_lm``, ``hclm``, ``char_lstm_lm``) on plain text: with
    ``document`` the lines are one stream, the context LSTM and the word cache carrying from line to
    line (as the paper and ``fairseq-eval-lm --batch-size 1`` read a split); without it each line is
    scored alone, from a fresh state and an empty cache."""

    def __init__(
        self,
        paths: List[str],
        data: Optional[str],
        use_cpu: bool,
        batch_tokens: int = 4000,
        max_sentences: Optional[int] = None,
        loaded=None,
        document: bool = True,
    ):
        loaded = loaded or load_models(paths, data, use_cpu)
        for path, (model, _) in zip(paths, loaded):
            if not is_character_model(model):
                raise ScoringError(
                    f"{path} holds a word-level {model.__class__.__name__}: an ensemble "
                    "cannot mix word and character models"
                )
        self.models = [model for model, _ in loaded]
        self.training_dictionary = shared_dictionary(paths, loaded)
        self.dictionary = self.training_dictionary
        self.chunk = loaded[0][1].cfg.tokens_per_sample
        self.batch_tokens, self.max_sentences, self.document = batch_tokens, max_sentences, document
        self.device = next(self.models[0].parameters()).device
        self.characters = set(self.models[0].decoder.spelling.characters)
        self.unspellable = []  # words written with characters no model has seen: scored as <unk>

    def encode_all(self, lines: List[str]) -> List[torch.Tensor]:
        """Word ids of each line (``</s>`` appended). Words the training dictionary lacks are
        added to a copy of it and spelled by the models from their characters; a word with
        a character the models never saw is ``<unk>`` (spelled ``<unk>``, as fairseq-eval-lm
        scores it), and listed in ``unspellable``."""
        from ..data.spelling import Spelling

        dictionary = copy.deepcopy(self.training_dictionary)
        unspellable = {}
        for line in lines:
            for word in line.split():
                if dictionary.index(word) == dictionary.unk() and word != dictionary.unk_word:
                    if set(word) <= self.characters:
                        dictionary.add_symbol(word)
                    else:
                        unspellable[word] = unspellable.get(word, 0) + 1
        self.unspellable = sorted(unspellable.items(), key=lambda item: -item[1])
        # |c| of each line from its own words (a word scored as <unk> still has its length)
        self.line_characters = [sum(len(word) + 1 for word in line.split()) for line in lines]
        if len(dictionary) != len(self.training_dictionary):
            for model in self.models:
                decoder = model.decoder
                decoder.spelling = Spelling(dictionary, decoder.spelling.characters).to(self.device)
        self.dictionary = dictionary
        return [dictionary.encode_line(line, add_if_not_exist=False, append_eos=True).long() for line in lines]

    def characters_of(self, line_number: int) -> int:
        """``|c|`` of a line (counted from 0): every character plus one space or line break per
        word, as ``character_counts`` counts a binarised split (an empty line counts nothing)."""
        return self.line_characters[line_number]

    @torch.no_grad()
    def token_log_probs(self, encoded: List[torch.Tensor], progress=None, texts=None) -> List[torch.Tensor]:
        """``ln p`` of every word of each encoded line (``</s>`` included); ``texts``: the number of
        lines of each text (``None``: one text), each read as a document of its own."""
        if not encoded:
            return []
        if not self.document:
            texts = None  # each line alone anyway
        per_text = []
        for start, end in text_bounds(len(encoded), texts):
            part = encoded[start:end]
            score = self._score_document if self.document else self._score_alone
            per_text += [
                ensemble(list(per_model)) for per_model in zip(*(score(m, part, progress) for m in self.models))
            ]
        return per_text

    def _score_document(self, model, encoded, progress):
        from ..data.word_streams import WordStreamDataset

        pad, eos = self.dictionary.pad(), self.dictionary.eos()
        stream = WordStreamDataset(torch.cat(encoded), 1, self.chunk, pad, eos)
        model.decoder.carry.reset()
        scores = []
        for index in range(len(stream)):
            item = stream[index]  # chunk ``index`` of the one stream; the state carries between chunks
            log_probs, _ = model(
                src_tokens=item["source"].to(self.device),
                target_tokens=item["target"].to(self.device),
                stream_ids=item["streams"],
                stream_positions=torch.tensor([item["position"]]),
            )
            # one stream is never padded (a literal <pad> word in the text is a word here)
            scores.append(log_probs[0, :, 0].float().cpu())
            if progress is not None and self.models[0] is model:
                progress(int(item["target"][0].eq(eos).sum()))
        model.decoder.carry.reset()
        return torch.cat(scores).split([len(t) for t in encoded])

    def _score_alone(self, model, encoded, progress):
        pad, eos = self.dictionary.pad(), self.dictionary.eos()
        scores = [None] * len(encoded)
        for batch in length_batches(encoded, self.batch_tokens, self.max_sentences):
            source, target = padded_batch([encoded[i] for i in batch], pad, eos)
            # no stream tags: every batch starts from a fresh state and an empty cache
            log_probs, _ = model(src_tokens=source.to(self.device), target_tokens=target.to(self.device))
            log_probs = log_probs[..., 0].float().cpu()
            for row, i in enumerate(batch):
                scores[i] = log_probs[row, : len(encoded[i])]
            if progress is not None and self.models[0] is model:
                progress(len(batch))
        return scores
