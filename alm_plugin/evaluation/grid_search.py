"""The computing half of alm-cache-grid: a split's per-token features and scores in corpus order,
each point of the neural cache's grid mixed from them, and one pass per dynamic evaluation point."""

import math

import torch

from ..data.sentence_blocks import CorpusOrder
from ..data.task_reading import reads_streams
from ..errors import OptionError
from .neural_cache import target_cache_probs
from .options import EvaluationOptions


@torch.no_grad()
def split_in_corpus_order(model, task, split, batch_size=64, segment=None):
    """``(features (N, d), targets (N,), log p_model(target) (N,))`` of every token of
    ``split`` in corpus order, as fairseq-eval-lm scores it with the cache; with the model's
    ``dynamic_eval`` on, one segment per batch (a sentence, or ``segment`` tokens of the stream),
    adapting after each, from the trained weights."""
    adapting = getattr(model, "dynamic_eval", None) is not None
    if adapting:
        model.dynamic_eval.reset()
    if reads_streams(task):
        task.cfg.batch_size = 1  # one stream: the split as one document
        chunk = task.cfg.tokens_per_sample
        if adapting:
            task.cfg.tokens_per_sample = segment
        task.load_dataset(split)
        task.cfg.tokens_per_sample = chunk
        model.decoder.carry.reset()
        batches = task.get_batch_iterator(task.dataset(split)).next_epoch_itr(shuffle=False)
    else:
        task.load_dataset(split)
        size = 1 if adapting else batch_size
        batches = task.get_batch_iterator(
            CorpusOrder(task.dataset(split)),
            max_sentences=size,
            max_tokens=max(size * 200, int(max(task.dataset(split).sizes))),
        ).next_epoch_itr(shuffle=False)
    device = next(model.parameters()).device
    features, targets, scores = Rows(), Rows(), Rows()
    for sample in batches:
        net_input = {k: v.to(device) if torch.is_tensor(v) else v for k, v in sample["net_input"].items()}
        target = sample["target"].to(device)
        net_output = model(**net_input)
        # the targets' log p alone (what eval-lm gathers from the distribution, never formed here)
        log_p = model.adapt(net_output, target) if adapting else model.decoder.target_log_probs(net_output, target)
        real = target.ne(task.target_dictionary.pad())
        features.append(net_output[1]["features"][real].detach().float())
        targets.append(target[real])
        scores.append(log_p[real].float())
    return features.kept(), targets.kept(), scores.kept()


class Rows:
    """Per-token results kept across a pass, in one block that doubles when it is full."""

    def __init__(self, capacity=1 << 16):
        self.capacity, self.block, self.count = capacity, None, 0

    def append(self, rows):
        if self.block is None:
            self.block = rows.new_empty((self.capacity, *rows.shape[1:]))
        # one block, not a small tensor a batch: those would sit in the heap between each step's large
        # temporaries (which keep_freed_memory serves from it too) and pin it, and a long pass would grow
        if self.count + len(rows) > len(self.block):
            grown = rows.new_empty((max(2 * len(self.block), self.count + len(rows)), *rows.shape[1:]))
            grown[: self.count] = self.block[: self.count]
            self.block = grown
        self.block[self.count : self.count + len(rows)] = rows
        self.count += len(rows)

    def kept(self):
        return torch.empty(0) if self.block is None else self.block[: self.count]


def grid(features, targets, model_scores, windows, thetas, lambdas):
    """``{(window, theta, lambda): ppl}``; lambda 0 is the model alone."""
    results = {}
    for window in windows:
        cache, filled = target_cache_probs(features, targets, window, thetas)
        for k, theta in enumerate(thetas):
            for lam in lambdas:
                weight = torch.where(filled, lam, 0.0)
                mixed = torch.logaddexp(torch.log1p(-weight) + model_scores, torch.log(weight) + cache[k].log())
                results[(window, theta, lam)] = math.exp(-float(mixed.double().mean()))
    return results


def scored_passes(model, task, split, settings):
    """``{point: split_in_corpus_order(...)}``: the trained weights' pass (point ``None``) and one pass
    adapting at each dynamic evaluation point; a point whose weights diverge is reported, not kept."""
    passes = {None: split_in_corpus_order(model, task, split)}
    batches = getattr(task, "dynamic_eval_training_batches", None)
    for point, setting in settings.items():
        EvaluationOptions(dynamic=setting).attach(model, batches)
        try:
            passes[point] = split_in_corpus_order(model, task, split, segment=setting.segment)
        except OptionError as diverged:
            print(f"dynamic evaluation lr {point[0]:g} decay {point[1]:g}: {diverged}")
        model.dynamic_eval.reset()  # the trained weights back
        EvaluationOptions().attach(model)
    return passes
