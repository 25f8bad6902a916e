"""Choose the test-time options on a validation split by a grid: the neural cache's window, theta
and lambda, dynamic evaluation's lr and decay, and both together; prints the best point and the
fairseq-eval-lm command that reproduces it.

    alm-cache-grid --path checkpoints/ptb/checkpoint_best.pt --data data-bin/ptb
    alm-cache-grid --path lm.pt --windows 100,500,2000 --dynamic-lrs 0.03,0.1,0.3 --json grid.json
"""

import argparse
import os
import shlex

from ..data.task_reading import reads_streams
from ..errors import ScoringError
from ..evaluation.dynamic_evaluation import DECAY, RULES, SEGMENT
from ..evaluation.grid_search import grid, scored_passes
from ..evaluation.heap import keep_freed_memory
from ..evaluation.neural_cache import CACHE_MODELS, check_values
from ..evaluation.options import EvaluationOptions, TestTimeModel, refuse
from ..evaluation.options import dynamic_settings as dynamic_options
from ..options.checks import needs, number
from .model_loading import load_models, task_data
from .output_files import check_outputs, write_json
from .tool import run_tool


def floats(text):
    try:
        return [float(v) for v in text.split(",") if v]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="alm-cache-grid", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--path", required=True, help=f"a word-level checkpoint ({CACHE_MODELS})")
    parser.add_argument("--data", help="data-bin directory (default: as saved in the checkpoint)")
    parser.add_argument("--gen-subset", default="valid", help="the split to choose on (default: valid)")
    parser.add_argument("--windows", type=floats, default=[100, 500, 2000], help="cache sizes N to try")
    parser.add_argument(
        "--thetas", type=floats, default=[0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5], help="inverse temperatures to try"
    )
    parser.add_argument(
        "--lambdas", type=floats, default=[0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6], help="cache weights to try"
    )
    parser.add_argument(
        "--dynamic-lrs",
        type=floats,
        default=[],
        help="dynamic evaluation: the step sizes to try (none: the cache alone; 0, the static model, "
        "is always measured)",
    )
    parser.add_argument(
        "--dynamic-decays",
        type=floats,
        default=None,
        help=f"dynamic evaluation: the decays to try, in [0, 1] (default {DECAY:g}; needs --dynamic-lrs)",
    )
    parser.add_argument(
        "--dynamic-rule",
        choices=RULES,
        default=None,
        help=f"dynamic evaluation's rule (default {RULES[0]}; needs --dynamic-lrs)",
    )
    parser.add_argument(
        "--dynamic-segment",
        type=int,
        default=None,
        help=f"a stream model's segment in tokens (default {SEGMENT}; a sentence model: one sentence)",
    )
    parser.add_argument(
        "--eval-tokens-per-sample",
        type=int,
        default=0,
        help="sentence_language_modeling: score sentences longer than this in pieces (default 0: whole sentences)",
    )
    parser.add_argument("--json", help="also write the grid and the choice to this file")
    parser.add_argument("--cpu", action="store_true", help="run on the CPU even when a GPU is there")
    args = parser.parse_args(argv)
    run_tool("alm-cache-grid", run, args)


def check_grid(windows, thetas, lambdas):
    """The grid as a whole, before the model loads: every value as --neural-cache-* takes it, and
    something to try on each axis (lambda 0, the model alone, is always measured)."""
    for flag, values in (("--windows", windows), ("--thetas", thetas), ("--lambdas", [v for v in lambdas if v])):
        if not values:
            raise ScoringError(
                f"{flag}: give at least one value"
                + (" above 0 (0, the model alone, is always measured)" if flag == "--lambdas" else "")
                + ", e.g. "
                + {"--windows": "100,500,2000", "--thetas": "0.1,0.3,1", "--lambdas": "0.1,0.2"}[flag]
            )
    flags = ("--windows", "--thetas", "--lambdas")
    for window in windows:
        check_values(window, None, None, flags)
        if window < 1:
            raise ScoringError(f"--windows: a cache size is a whole number of tokens >= 1, got {window:g}")
    for theta in thetas:
        check_values(0, theta, None, flags)
    for lam in lambdas:
        check_values(0, None, lam, flags)


def check_dynamic_grid(args):
    """The dynamic-evaluation axes under the grid's own names, before the model loads: lr 0 is the
    static point (always measured, so dropped from the axis), a decay, rule or segment without a
    step size above 0 would leave a cache-only grid without a word. Fills in the defaults."""
    for lr in args.dynamic_lrs:
        number("--dynamic-lrs", lr, least=0, why="a step size (0: the static model, which is always measured)")
    if args.dynamic_decays is not None and not args.dynamic_decays:
        raise ScoringError("--dynamic-decays: give at least one value in [0, 1], e.g. 0,0.01")
    for decay in args.dynamic_decays or []:
        number("--dynamic-decays", decay, least=0, at_most=1, why="the share of the way back to the trained weights")
    number("--dynamic-segment", args.dynamic_segment, least=1, why="a segment holds at least one token")
    steps = sorted(set(lr for lr in args.dynamic_lrs if lr > 0), key=args.dynamic_lrs.index)
    for flag, given in (
        ("--dynamic-decays", args.dynamic_decays is not None),
        ("--dynamic-rule", args.dynamic_rule is not None),
        ("--dynamic-segment", args.dynamic_segment is not None),
    ):
        needs(flag, given, "--dynamic-lrs", bool(steps), " (step sizes above 0, e.g. 0.03,0.1,0.3)")
    args.dynamic_lrs = steps
    args.dynamic_decays = args.dynamic_decays or [0.0]
    args.dynamic_rule = args.dynamic_rule or "sgd"


def load_word_model(args):
    """``(model, task)`` of ``--path``: a word-level model the cache can read, its data checked as an
    output's neighbour, its sentences read as fairseq-eval-lm would read them."""
    if args.eval_tokens_per_sample < 0:
        raise ScoringError(
            f"--eval-tokens-per-sample {args.eval_tokens_per_sample}: give 0 (whole sentences) or "
            "the most tokens a piece holds"
        )
    ((model, task),) = load_models([args.path], args.data, args.cpu, tool="alm-cache-grid")
    check_outputs({"--json": args.json}, {"--path": [args.path]}, data=[task_data(task)])  # the checkpoint's data
    cuts_sentences = task.cfg is None and hasattr(task.args, "eval_tokens_per_sample")
    if cuts_sentences:
        # the checkpoint keeps its training's validation cut (e.g. 35): read as eval-lm would, not as that
        task.args.eval_tokens_per_sample = args.eval_tokens_per_sample
    if not isinstance(model, TestTimeModel):
        # refuse() would name eval-lm's --neural-cache-* options, which this tool does not have
        name = ("fairseq's " if type(model).__module__.startswith("fairseq.") else "") + type(model).__name__
        raise ScoringError(
            f"{args.path}: {name} has no neural cache; alm-cache-grid tunes the cache of "
            f"{CACHE_MODELS}; give one of their checkpoints"
        )
    refuse(EvaluationOptions(cache=(int(args.windows[0]), args.thetas[0], args.lambdas[-1])), model)  # its first point
    if args.eval_tokens_per_sample and not cuts_sentences:
        how = (
            "reads the split as one stream, its state carried from chunk to chunk: there is no sentence to cut"
            if reads_streams(task)
            else "has no such option"
        )
        raise ScoringError(
            f"--eval-tokens-per-sample {args.eval_tokens_per_sample} cuts the sentences of "
            f"sentence_language_modeling; {args.path} was trained on {_task_name(task)}, which {how}: "
            "drop the option"
        )
    return EvaluationOptions().attach(model), task  # the grid mixes the cache in itself


def print_table(point, table, windows, thetas, lambdas, rule):
    """One pass's perplexities: a table of theta by lambda for each window."""
    title = "" if point is None else f", dynamic evaluation lr {point[0]:g} decay {point[1]:g}"
    if point is not None:
        print(
            f"\ndynamic evaluation lr {point[0]:g} decay {point[1]:g} ({rule}): perplexity "
            f"{table[(windows[0], thetas[0], 0.0)]:.2f} without the cache"
        )
    for w in windows:
        print(f"\nwindow {w}{title}: perplexity by theta (rows) and lambda (columns)")
        print("theta\\lambda\t" + "\t".join(f"{lam_:g}" for lam_ in lambdas[1:]))
        for t in thetas:
            print(f"{t:g}\t" + "\t".join(f"{table[(w, t, lam_)]:.2f}" for lam_ in lambdas[1:]))


def grid_record(args, tokens, without, results, kinds, settings, windows, streams):
    """The JSON of ``--json``: the split, the cache's grid and pick, and dynamic evaluation's picks
    and grid (with and without the cache)."""
    cache_ppl, _, (window, theta, lam) = kinds["cache"]
    record = {
        "split": args.gen_subset,
        "tokens": tokens,
        "ppl_without_cache": without,
        "window": window,
        "theta": theta,
        "lambda": lam,
        "ppl_with_cache": cache_ppl,
        "grid": [{"window": w, "theta": t, "lambda": l_, "ppl": p} for (w, t, l_), p in results[None].items()],
    }
    for kind in ("dynamic", "both"):
        if kind in kinds:
            kind_ppl, (lr, decay), key = kinds[kind]
            record[kind] = {
                "lr": lr,
                "decay": decay,
                "rule": args.dynamic_rule,
                "ppl": kind_ppl,
                "segment": settings[(lr, decay)].segment if streams else "sentence",
                **({"window": key[0], "theta": key[1], "lambda": key[2]} if kind == "both" else {}),
            }
    if settings:
        record["dynamic_grid"] = [
            {"lr": lr, "decay": decay, "ppl": results[(lr, decay)][(windows[0], args.thetas[0], 0.0)]}
            for lr, decay in settings
        ]
    return record


def run(args):
    check_outputs({"--json": args.json}, {"--path": [args.path]}, data=[args.data])
    check_grid(args.windows, args.thetas, args.lambdas)  # before the model loads
    check_dynamic_grid(args)
    points = [(lr, decay) for lr in args.dynamic_lrs for decay in args.dynamic_decays]
    # every point checked before the model loads
    settings = {point: dynamic_options(*point, args.dynamic_rule, segment=args.dynamic_segment) for point in points}
    keep_freed_memory()  # the cache's score blocks and the dynamic steps reallocate the same tensors
    model, task = load_word_model(args)
    streams = reads_streams(task)
    if args.dynamic_segment is not None and not streams:
        raise ScoringError(
            f"--dynamic-segment: {args.path} is a sentence-level model, whose segment is one sentence "
            "(read whole from a fresh state, as it was trained): drop the option"
        )
    windows = [int(w) for w in args.windows]
    lambdas = [0.0, *[lam for lam in args.lambdas if lam]]
    passes = scored_passes(model, task, args.gen_subset, settings)
    # every cache point of a pass reuses that pass's features: the model runs once a pass
    results = {point: grid(*tensors, windows, args.thetas, lambdas) for point, tensors in passes.items()}
    settings = {point: setting for point, setting in settings.items() if point in passes}
    tokens = passes[None][1].numel()
    without = results[None][(windows[0], args.thetas[0], 0.0)]
    print(f"{args.gen_subset}: {tokens} tokens; perplexity without the cache {without:.2f}")
    for point, table in results.items():
        print_table(point, table, windows, args.thetas, lambdas, args.dynamic_rule)

    def flags(point, key):
        parts = []
        if point is not None:
            parts.append(
                f"--dynamic-eval-lr {point[0]:g} --dynamic-eval-decay {point[1]:g}"
                + (f" --dynamic-eval-rule {args.dynamic_rule}" if args.dynamic_rule != "sgd" else "")
                + (f" --dynamic-eval-segment {settings[point].segment}" if streams else "")
            )
        if key is not None and key[2] > 0:
            parts.append(
                f"--neural-cache-window {key[0]} --neural-cache-theta {key[1]:g} --neural-cache-lambda {key[2]:g}"
            )
        return " ".join(parts)

    def best_of(points, cached):
        candidates = [
            (ppl, point, key) for point in points for key, ppl in results[point].items() if (key[2] > 0) == cached
        ]
        return min(candidates, key=lambda c: c[0])

    kinds = {"cache": best_of([None], True)}
    if settings:
        kinds["dynamic"] = best_of(list(settings), False)
        kinds["both"] = best_of(list(settings), True)
    for kind, (ppl, point, key) in kinds.items():
        print(f"\n{kind}: {ppl:.2f} ({100 * (ppl / without - 1):+.1f}%) with {flags(point, key)}")
    ppl, point, key = min(kinds.values(), key=lambda c: c[0])
    print(f"\nbest: {ppl:.2f} ({100 * (ppl / without - 1):+.1f}%) with {flags(point, key)}")
    print(f"use: {eval_lm_command(task, args.path, flags(point, key), args.gen_subset)}")
    if args.json:
        write_json(args.json, grid_record(args, tokens, without, results, kinds, settings, windows, streams))


# the plugin's folder (--user-dir): this file is alm_plugin/cli/cache_grid.py
PLUGIN = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the task options that decide how a split is cut into samples: the command carries those the
# checkpoint's task set to another value than eval-lm's default, so it reads the split as the grid did
READING_OPTIONS = ("sample_break_mode", "tokens_per_sample", "eval_tokens_per_sample", "add_bos_token")


def eval_lm_command(task, checkpoint, flags, split="valid"):
    """The fairseq-eval-lm command that reads ``split`` as the grid did, with the cache ``flags``; it
    runs as printed from any directory: the data, the checkpoint and the plugin (``--user-dir``) by
    absolute path, each quoted for the shell where it must be."""
    from fairseq.tasks import TASK_DATACLASS_REGISTRY

    # a dataclass task keeps its options in task.cfg; sentence_language_modeling, a legacy
    # fairseq task, in task.args (its task.cfg is None)
    options = task.cfg if task.cfg is not None else task.args
    data = getattr(options, "data", None)
    data = shlex.quote(os.pathsep.join(os.path.abspath(part) for part in data.split(os.pathsep))) if data else "DATA"
    checkpoint = shlex.quote(os.path.abspath(checkpoint))
    plugin = shlex.quote(PLUGIN)
    name = _task_name(task)
    defaults = TASK_DATACLASS_REGISTRY[name]() if name in TASK_DATACLASS_REGISTRY else None
    reading = []
    for option in READING_OPTIONS:
        value = getattr(options, option, None)
        if value is None or defaults is None or value == getattr(defaults, option, None):
            continue
        flag = "--" + option.replace("_", "-")
        reading.append(flag if value is True else f"{flag} {value}")
    return " ".join(
        [
            f"fairseq-eval-lm {data} --user-dir {plugin} --task {name} --path {checkpoint}",
            f"--gen-subset {split}",
            *reading,
            flags,
        ]
        + (["--batch-size 1"] if name == "document_language_modeling" else [])
    )


def _task_name(task):
    from fairseq.tasks import TASK_REGISTRY

    return next((name for name, cls in TASK_REGISTRY.items() if cls is type(task)), "?")


if __name__ == "__main__":
    main()
