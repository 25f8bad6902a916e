"""The neural cache (Grave, Joulin & Usunier 2017), applied at test time to any word-level LM.

    p(w | h_t) = (1 - lambda) p_model(w | h_t)
                 + lambda * sum_{i in window} [x_{i+1} = w] softmax_i(theta h_t . h_i)      (Eq. 2-4)

``h`` is the vector the output layer receives (``extract_features``); the cache holds the pairs
``(h_i, x_{i+1})`` of the ``window`` previous positions of the text read in corpus order, one cache per
row (a corpus read sentence by sentence, or each stream). Nothing is trained.
"""

import math

import torch
from torch import Tensor

from ..errors import OptionError
from ..modules.history_attention import masked_softmax
from ..modules.stream_carry import StreamCarry
from ..options.checks import number

THETA, LAMBDA = 0.3, 0.1  # what --neural-cache-window alone uses
CACHE_MODELS = "alm_lstm, attentive_lm, amsrn and pointer_sentinel_lm"  # the word models that hand it features


def check_values(window, theta, lam, flags=("window", "theta", "lam")) -> None:
    """Each value alone: a whole window >= 0, a finite theta >= 0, a finite lambda in [0, 1)
    (``flags``: the options' names in the tool that reads them)."""
    if isinstance(window, float) and math.isfinite(window) and window != int(window):
        raise OptionError(f"{flags[0]} {window:g}: a cache holds a whole number of tokens")
    number(flags[0], window, least=0, why="the cache holds N >= 0 previous tokens (0: none)")
    number(flags[1], theta, least=0, why="the cache's inverse temperature")
    number(
        flags[2],
        lam,
        least=0,
        below=1,
        why="a mixture weight below 1 (at 1 every word the recent text does not hold gets probability 0: an "
        "infinite perplexity, of which fairseq-eval-lm would report only the finite part)",
    )


def cache_scores(theta: float, dots: Tensor) -> Tensor:
    """``theta h_t . h_i``, kept finite: a large accepted theta makes the softmax one-hot, not NaN."""
    return torch.nan_to_num(theta * dots, posinf=torch.finfo(dots.dtype).max, neginf=torch.finfo(dots.dtype).min)


def window_mask(held: int, length: int, window: int, device=None) -> Tensor:
    """``(length, held + length)``: which slots (``held`` earlier tokens, then the ``length``
    current ones) each current token's cache holds: the ``window`` strictly earlier tokens,
    never the word being predicted."""
    slot = torch.arange(held + length, device=device) - held
    query = torch.arange(length, device=device).unsqueeze(1)
    return (slot < query) & (slot >= query - window)


class NeuralCache:
    """Turns a batch's model log probabilities and features into cache-mixed ones, row by row."""

    def __init__(self, window: int, theta: float = THETA, lam: float = LAMBDA):
        check_values(window, theta, lam)
        self.window, self.theta, self.lam = window, theta, lam
        self.carry = StreamCarry()

    def reset(self):
        self.carry.reset()

    def log_probs(
        self,
        log_model: Tensor,
        features: Tensor,
        targets: Tensor,
        padding: Tensor,
        rows=None,
        positions=None,
        next_positions=None,
    ) -> Tensor:
        """``log_model`` (R, T, V) the model's log probabilities, ``features`` (R, T, d), ``targets``
        (R, T) and ``padding`` (R, T) of R rows read left to right; ``rows``/``positions`` tag the batch for
        ``StreamCarry`` (``None``: nothing carried in or out; the next batch continues this one
        if it starts at ``next_positions``, default ``positions + T``). Returns ``log p`` (R, T, V)."""
        past = self.carry.resume(rows, positions, "eval")
        features, targets = features.float(), targets.clone()
        if past is None:
            past = (features[:, :0], targets[:, :0], padding[:, :0])
        memory = torch.cat([past[0], features], dim=1)
        keys = torch.cat([past[1], targets], dim=1)
        memory_padding = torch.cat([past[2], padding], dim=1)
        if positions is not None:
            next_positions = positions + features.size(1) if next_positions is None else next_positions
            keep = slice(max(0, memory.size(1) - self.window), None)
            self.carry.save(rows, next_positions, (memory[:, keep], keys[:, keep], memory_padding[:, keep]), "eval")
        if self.window == 0 or self.lam == 0.0:
            return log_model

        length, held = features.size(1), past[0].size(1)
        allowed = window_mask(held, length, self.window, log_model.device)
        allowed = allowed.unsqueeze(0) & ~memory_padding.unsqueeze(1)  # (R, T, S)
        scores = cache_scores(self.theta, torch.bmm(features, memory.transpose(1, 2)))
        weights = masked_softmax(scores, allowed)
        # p_cache(w) = the sum of the weights of w's slots, over the cache's distinct words U, far
        # fewer than the vocabulary's
        words, slot_word = torch.unique(keys.clamp_min(0), return_inverse=True)  # (U,), (R, S)
        cache = weights.new_zeros(*weights.shape[:2], words.numel())
        cache.scatter_add_(2, slot_word.unsqueeze(1).expand(-1, length, -1), weights)  # (R, T, U)
        # an empty cache (the first token) leaves the model's distribution as it is
        lam = torch.where(allowed.any(-1, keepdim=True), self.lam, 0.0)
        mixed = log_model + torch.log1p(-lam)  # every word outside the cache
        # log((1 - lam) p_model + lam p_cache) exactly, only at the words in the cache: a log
        # over the whole vocabulary would cost more than the model's softmax
        at_words = words.view(1, 1, -1).expand(*weights.shape[:2], -1)
        in_cache = torch.logaddexp(mixed.gather(2, at_words), torch.log(lam) + cache.log())
        return mixed.scatter_(2, at_words, in_cache)  # a word absent from a row's cache: + log 0


def cached_log_probs(cache: NeuralCache, log_model: Tensor, net_output, sample, padding_idx: int) -> Tensor:
    """``log p`` (B, T, V) of a batch with the cache mixed into ``log_model``, the model's whole
    distribution (``decoder.log_probs``, whatever its output layer): one cache per stream of a
    document-task batch, else one row of the batch's consecutive sentences, in corpus order."""
    extra, target = net_output[1], sample["target"]  # the whole batch: TestTimeModel checked it (whole_batch)
    log_model = log_model.clone()
    features, padding = extra["features"].detach(), target.eq(padding_idx)
    net_input = sample["net_input"]
    if net_input.get("stream_ids") is not None:  # a stream's cache remembers what it read, scored or not
        read = sample.get("read_target", target)
        return check_finite(
            cache.log_probs(
                log_model, features, read, read.eq(padding_idx), net_input["stream_ids"], net_input["stream_positions"]
            ),
            target,
            padding,
        )
    ids = sample["id"]
    if not torch.equal(ids, torch.arange(int(ids[0]), int(ids[0]) + ids.numel(), device=ids.device)):
        raise OptionError(
            "the neural cache reads the text in corpus order, but this batch holds sentences "
            f"{ids[:4].tolist()}...: score with fairseq-eval-lm --task sentence_language_modeling "
            "or document_language_modeling, or alm-score"
        )
    real = ~padding
    flat = cache.log_probs(
        log_model[real].unsqueeze(0),
        features[real].unsqueeze(0),
        target[real].unsqueeze(0),
        padding[real].unsqueeze(0),
        ids.new_zeros(1),
        ids[:1],
        ids[-1:] + 1,
    )
    log_model[real] = flat[0]  # padded slots keep the model's (finite) scores
    return check_finite(log_model, target, padding)


def check_finite(log_probs: Tensor, target: Tensor, padding: Tensor) -> Tensor:
    """Every real target keeps a finite log probability, or the run stops: fairseq-eval-lm would
    skip the tokens scored -inf and print the perplexity of the rest."""
    at_target = log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    if not torch.isfinite(at_target[~padding]).all():
        raise OptionError(
            "the neural cache gave a word a non-finite log probability: lower "
            "--neural-cache-lambda (below 1) or --neural-cache-theta; the perplexity of the other "
            "words alone would flatter the model"
        )
    return log_probs


def target_cache_probs(features: Tensor, targets: Tensor, window: int, thetas, chunk: int = 1024):
    """For one row of text (``features`` (N, d), ``targets`` (N,)): ``p_cache(x_{t+1} | h_t)``
    of every token for each theta (``(len(thetas), N)``) and whether its cache held anything
    (``(N,)``): ``NeuralCache``'s cache at the target words only, one pass per window for
    ``alm-cache-grid``'s grid over theta and lambda."""
    features = features.float()
    probs = features.new_zeros(len(thetas), features.size(0))
    filled = torch.zeros(features.size(0), dtype=torch.bool, device=features.device)
    chunk = min(chunk, max(window, 128))  # a query block reads its window and itself: keep the block near W
    for start in range(0, features.size(0), chunk):
        end = min(features.size(0), start + chunk)
        first = max(0, start - window)
        allowed = window_mask(start - first, end - start, window, features.device)
        shifted = (features[start:end] @ features[first:end].t()).masked_fill_(~allowed, -math.inf)
        # theta >= 0: the softmax's shift is theta times the row's largest dot, one shift for every theta
        top = shifted.amax(-1, keepdim=True)
        shifted.sub_(top.masked_fill_(top.isneginf(), 0.0))  # an empty cache: all -inf, its p 0
        same = targets[first:end].unsqueeze(0) == targets[start:end].unsqueeze(1)
        filled[start:end] = allowed.any(-1)
        for k, theta in enumerate(thetas):
            weights = torch.exp(shifted * theta) if theta > 0 else allowed.float()  # 0 * -inf is NaN
            total = weights.sum(-1).clamp_min(torch.finfo(weights.dtype).tiny)
            probs[k, start:end] = weights.where(same, 0.0).sum(-1) / total
    return probs, filled
