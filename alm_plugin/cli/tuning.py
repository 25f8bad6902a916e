"""Tuning alm-rescore's feature weights for corpus BLEU on a dev n-best list: a grid over two weights,
seeded random search or coordinate ascent, each trial a weighted sum over statistics counted once."""

import random
from typing import Dict, List, Sequence, Tuple

import torch

TUNERS = ("grid", "random", "coordinate")


class BleuTable:
    """Every hypothesis' features and sacrebleu statistics, as tensors a trial reads."""

    def __init__(self, groups, references: List[str], names: Sequence[str]):
        from sacrebleu.metrics import BLEU

        self.bleu = BLEU()
        self.names = list(names)
        hypotheses = [h for i in sorted(groups) for h in groups[i]]
        self.sentence = torch.tensor([i for i in sorted(groups) for _ in groups[i]])
        self.count = len(groups)
        texts = [h.raw for h in hypotheses]
        refs = [references[i] for i in self.sentence.tolist()]
        self.stats = torch.tensor(self.bleu._extract_corpus_statistics(texts, [refs]), dtype=torch.float64)
        self.features = torch.tensor([[h.features[n] for n in self.names] for h in hypotheses], dtype=torch.float64)
        self.first = torch.zeros(len(hypotheses), dtype=torch.bool)  # the system's own 1-best: listed first
        self.first[torch.cat([torch.tensor([0]), (self.sentence[1:] != self.sentence[:-1]).nonzero()[:, 0] + 1])] = True

    def chosen(self, weights: Dict[str, float]) -> torch.Tensor:
        """The index of each sentence's best hypothesis under ``weights`` (the first listed on a tie)."""
        used = [k for k, n in enumerate(self.names) if weights.get(n, 0) != 0]  # weight 0 leaves -inf out
        score = torch.zeros(len(self.sentence), dtype=torch.float64)
        for k in used:
            score = score + weights[self.names[k]] * self.features[:, k]
        best = torch.full((self.count,), -float("inf"), dtype=torch.float64).scatter_reduce(
            0, self.sentence, score, reduce="amax"
        )
        winners = (score == best[self.sentence]).nonzero()[:, 0]
        first = torch.full((self.count,), len(score)).scatter_reduce(0, self.sentence[winners], winners, reduce="amin")
        return first

    def score(self, weights: Dict[str, float]) -> float:
        return self.corpus(self.chosen(weights))

    def corpus(self, indices: torch.Tensor) -> float:
        totals = self.stats[indices].sum(0)
        return self.bleu._compute_score_from_stats([int(x) for x in totals.tolist()]).score

    def system(self) -> float:
        return self.corpus(self.first.nonzero()[:, 0])


def tune(
    table: BleuTable,
    start: Dict[str, float],
    ranges: Dict[str, List[float]],
    tuner: str,
    trials: int,
    seed: int,
    rounds: int,
) -> Tuple[Dict[str, float], float, List[Tuple[Dict[str, float], float]]]:
    """The weights of highest dev BLEU among the trials (``start`` first; a later trial must beat it),
    that BLEU, and every trial with its BLEU in the order tried. ``ranges``: the values each tuned
    weight takes (the grid's points; random search draws between their ends)."""
    log = []

    def trial(weights):
        bleu = table.score(weights)
        log.append((dict(weights), bleu))
        return bleu

    best, best_bleu = dict(start), trial(start)
    names = list(ranges)
    if tuner == "grid":
        import itertools

        for values in itertools.product(*(ranges[n] for n in names)):
            weights = {**start, **dict(zip(names, values))}
            bleu = trial(weights)
            if bleu > best_bleu + 1e-9:
                best, best_bleu = weights, bleu
    elif tuner == "random":
        draw = random.Random(seed)
        for _ in range(trials):
            weights = {**start, **{n: round(draw.uniform(ranges[n][0], ranges[n][-1]), 4) for n in names}}
            bleu = trial(weights)
            if bleu > best_bleu + 1e-9:
                best, best_bleu = weights, bleu
    elif tuner == "coordinate":
        for _ in range(rounds):
            moved = False
            for name in names:  # one weight at a time over its grid, the others held
                for value in ranges[name]:
                    weights = {**best, name: value}
                    bleu = trial(weights)
                    if bleu > best_bleu + 1e-9:
                        best, best_bleu, moved = weights, bleu, True
            if not moved:
                break
    else:
        raise ValueError(f"unknown tuner {tuner!r}: choose one of {', '.join(TUNERS)}")
    return best, best_bleu, log
