"""Choose the neural cache's window, theta and lambda on a validation split by a grid.

    alm-cache-grid --path checkpoints/ptb/checkpoint_best.pt --data data-bin/ptb
    alm-cache-grid --path lm.pt --windows 100,500,2000 --thetas 0.1,0.3,1 --lambdas 0.1,0.2 --json grid.json

The split is read as ``fairseq-eval-lm`` reads it with the cache: in corpus order (a
sentence-level model scores each sentence from a fresh state; a model trained on
``document_language_modeling`` reads the split as one stream, ``--batch-size 1``). The model
runs once; every grid point reuses its features. Prints the perplexity of each point, the
best one and the ``fairseq-eval-lm`` flags that reproduce it.
"""
import argparse
import json
import math

import torch

from ..modules.neural_cache import CACHE_MODELS, check_values, target_cache_probs
from ..scoring import ScoringError, check_outputs, is_character_model, load_models
from .tool import run_tool


def floats(text):
    try:
        return [float(v) for v in text.split(",") if v]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None


@torch.no_grad()
def split_in_corpus_order(model, task, split, batch_size=64):
    """``(features (N, d), targets (N,), log p_model(target) (N,))`` of every token of
    ``split`` in corpus order, as fairseq-eval-lm scores it with the cache."""
    from ..tasks.document_language_modeling import WordStreamTask
    from ..tasks.sentence_language_modeling import CorpusOrder

    model.neural_cache = None
    if isinstance(task, WordStreamTask):
        task.cfg.batch_size = 1  # one stream: the split as one document
        task.load_dataset(split)
        batches = task.get_batch_iterator(task.dataset(split)).next_epoch_itr(shuffle=False)
    else:
        task.load_dataset(split)
        batches = task.get_batch_iterator(CorpusOrder(task.dataset(split)), max_sentences=batch_size,
                                          max_tokens=batch_size * 200).next_epoch_itr(shuffle=False)
    device = next(model.parameters()).device
    features, targets, scores = [], [], []
    for sample in batches:
        net_input = {k: v.to(device) if torch.is_tensor(v) else v for k, v in sample["net_input"].items()}
        target = sample["target"].to(device)
        logits, extra = model(**net_input)
        log_probs = model.get_normalized_probs((logits, extra), log_probs=True)
        real = target.ne(task.target_dictionary.pad())
        features.append(extra["features"][real].float())
        targets.append(target[real])
        scores.append(log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)[real].float())
    return torch.cat(features), torch.cat(targets), torch.cat(scores)


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


def main(argv=None):
    parser = argparse.ArgumentParser(prog="alm-cache-grid", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--path", required=True, help="a word-level checkpoint (alm_lstm, attentive_lm, amsrn)")
    parser.add_argument("--data", help="data-bin directory (default: as saved in the checkpoint)")
    parser.add_argument("--gen-subset", default="valid", help="the split to choose on (default: valid)")
    parser.add_argument("--windows", type=floats, default=[100, 500, 2000], help="cache sizes N to try")
    parser.add_argument("--thetas", type=floats, default=[0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5],
                        help="inverse temperatures to try")
    parser.add_argument("--lambdas", type=floats, default=[0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6],
                        help="cache weights to try")
    parser.add_argument("--json", help="also write the grid and the choice to this file")
    parser.add_argument("--cpu", action="store_true", help="run on the CPU even when a GPU is there")
    args = parser.parse_args(argv)
    run_tool("alm-cache-grid", run, args)


def check_grid(windows, thetas, lambdas):
    """The grid as a whole, before the model loads: every value as --neural-cache-* takes it, and
    something to try on each axis (lambda 0, the model alone, is always measured)."""
    for flag, values in (("--windows", windows), ("--thetas", thetas), ("--lambdas", [v for v in lambdas if v])):
        if not values:
            raise ScoringError(f"{flag}: give at least one value" + (" above 0 (0, the model alone, is always measured)"
                                                                    if flag == "--lambdas" else "") + ", e.g. "
                               + {"--windows": "100,500,2000", "--thetas": "0.1,0.3,1", "--lambdas": "0.1,0.2"}[flag])
    flags = ("--windows", "--thetas", "--lambdas")
    for window in windows:
        check_values(window, None, None, flags)
        if window < 1:
            raise ScoringError(f"--windows: a cache size is a whole number of tokens >= 1, got {window:g}")
    for theta in thetas:
        check_values(0, theta, None, flags)
    for lam in lambdas:
        check_values(0, None, lam, flags)


def run(args):
    check_outputs({"--json": args.json}, {"--path": [args.path]})
    check_grid(args.windows, args.thetas, args.lambdas)  # before the model loads
    (model, task), = load_models([args.path], args.data, args.cpu, tool="alm-cache-grid")
    if is_character_model(model) or not hasattr(model, "neural_cache"):
        raise ScoringError(f"{args.path} holds a {model.__class__.__name__}: the neural cache works with the "
                           f"word-level {CACHE_MODELS}")
    features, targets, scores = split_in_corpus_order(model, task, args.gen_subset)
    windows = [int(w) for w in args.windows]
    results = grid(features, targets, scores, windows, args.thetas, [0.0, *[lam for lam in args.lambdas if lam]])
    without = results[(windows[0], args.thetas[0], 0.0)]
    (window, theta, lam), best = min(((k, v) for k, v in results.items() if k[2] > 0), key=lambda kv: kv[1])
    print(f"{args.gen_subset}: {targets.numel()} tokens; perplexity without the cache {without:.2f}")
    for w in windows:
        print(f"\nwindow {w}: perplexity by theta (rows) and lambda (columns)")
        print("theta\\lambda\t" + "\t".join(f"{lam_:g}" for lam_ in args.lambdas))
        for t in args.thetas:
            print(f"{t:g}\t" + "\t".join(f"{results[(w, t, lam_)]:.2f}" for lam_ in args.lambdas))
    flags = f"--neural-cache-window {window} --neural-cache-theta {theta:g} --neural-cache-lambda {lam:g}"
    print(f"\nbest: {best:.2f} ({100 * (best / without - 1):+.1f}%) with {flags}")
    print(f"use: {eval_lm_command(task, args.path, flags, args.gen_subset)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"split": args.gen_subset, "tokens": targets.numel(), "ppl_without_cache": without,
                       "window": window, "theta": theta, "lambda": lam, "ppl_with_cache": best,
                       "grid": [{"window": w, "theta": t, "lambda": l_, "ppl": p}
                                for (w, t, l_), p in results.items()]}, f, indent=1)


# the task options that decide how a split is cut into samples: the command carries those the
# checkpoint's task set to another value than eval-lm's default, so it reads the split as the grid did
READING_OPTIONS = ("sample_break_mode", "tokens_per_sample", "eval_tokens_per_sample", "add_bos_token")


def eval_lm_command(task, checkpoint, flags, split="valid"):
    """The fairseq-eval-lm command that reads ``split`` as the grid did, with the cache ``flags``."""
    from fairseq.tasks import TASK_DATACLASS_REGISTRY

    # a dataclass task keeps its options in task.cfg; sentence_language_modeling, a legacy
    # fairseq task, in task.args (its task.cfg is None)
    options = task.cfg if task.cfg is not None else task.args
    data = getattr(options, "data", None) or "DATA"
    name = _task_name(task)
    defaults = TASK_DATACLASS_REGISTRY[name]() if name in TASK_DATACLASS_REGISTRY else None
    reading = []
    for option in READING_OPTIONS:
        value = getattr(options, option, None)
        if value is None or defaults is None or value == getattr(defaults, option, None):
            continue
        flag = "--" + option.replace("_", "-")
        reading.append(flag if value is True else f"{flag} {value}")
    return " ".join([f"fairseq-eval-lm {data} --user-dir alm_plugin --task {name} --path {checkpoint}",
                     f"--gen-subset {split}", *reading, flags]
                    + (["--batch-size 1"] if name == "document_language_modeling" else []))


def _task_name(task):
    from fairseq.tasks import TASK_REGISTRY

    return next((name for name, cls in TASK_REGISTRY.items() if cls is type(task)), "?")


if __name__ == "__main__":
    main()
