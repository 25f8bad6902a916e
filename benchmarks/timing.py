"""The one harness every speed script uses: the flags they share, a loop timed over batches, the training and scoring
steps it times, runs interleaved and repeated (medians, ratios to a baseline: a ratio measured in one run survives a
shared machine, a tokens/s figure does not) and every thread count in one run.
"""

import argparse
import os
import statistics
import sys
import time

import torch

from benchmarks import ROOT
from benchmarks.result_files import check_json, write_json

SAMPLE = os.path.join(ROOT, "data-bin", "wikitext-2-sample")
SHARED = {
    "data": (str, "a binarised corpus"),
    "size": (int, "embedding and hidden size of every model"),
    "updates": (int, "training updates (steps) a run"),
    "repeats": (int, "interleaved runs of each model"),
    "threads": (str, "CPU threads; several, comma-separated, are measured in one run"),
}


def speed_parser(doc, device="auto", **defaults):
    """A parser with ``doc`` as its help, ``--json``, ``--device`` defaulting to ``device`` ("auto":
    the GPU when there is one; None: no such flag) and each shared flag named in ``defaults``, with
    that default: a value, or ``(value, help[, type])``."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    for name, default in defaults.items():
        kind, help = SHARED[name]
        default, help, kind = (*default, kind)[:3] if isinstance(default, tuple) else (default, help, kind)
        parser.add_argument(f"--{name}", type=kind, default=default, help=help)
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device:
        parser.add_argument("--device", choices=["cpu", "cuda"], default=device, help="where the models run")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    return parser


def is_speed(record):
    """A record a speed script wrote: figures beside the command's arguments (``argv``)."""
    return isinstance(record.get("argv"), list)


def parse(parser, argv=None, own=is_speed):
    """``parser``'s arguments; ``--device cuda`` without a GPU refused in one line, not torch's CUDA traceback;
    a ``--json`` that is a committed result of another kind than ``own`` accepts, refused."""
    args = parser.parse_args(argv)
    if getattr(args, "device", None) == "cuda" and not torch.cuda.is_available():
        parser.exit(
            2,
            f"{parser.prog}: error: --device cuda"
            + (
                " (the default): this benchmark needs a GPU and torch sees none: run it on a GPU machine, or pass "
                "--device cpu for a quick look here\n"
                if parser.get_default("device") == "cuda"
                else ": torch sees no GPU here: run it on a GPU machine, or leave --device out (the CPU)\n"
            ),
        )
    check_json(parser, args.json, [getattr(args, "data", None)], own=own)  # before the run, not after it
    return args


def write_figures(path, figures):
    """``figures`` and what produced them (the command's arguments, torch's version) to ``path``, if any."""
    write_json(path, {"argv": sys.argv[1:], "torch": torch.__version__, **figures})


def thread_counts(text):
    return sorted({int(t) for t in str(text).split(",")})


def device_name(device, threads):
    return (
        torch.cuda.get_device_name(device)
        if torch.device(device).type == "cuda"
        else f"CPU, {threads} thread{'s' if int(threads) != 1 else ''}"
    )


def tokens_per_second(step, batches, tokens, device=None):
    """``step(batch)`` over every batch, on a GPU to the last kernel; ``tokens(batch)`` counts what it did."""
    start = time.perf_counter()
    for batch in batches:
        step(batch)
    if device is not None and torch.device(device).type == "cuda":
        torch.cuda.synchronize()
    return sum(tokens(b) for b in batches) / (time.perf_counter() - start)


def training(module, loss_of, lr=1.0, clip=5.0, precision="fp32", device=torch.device("cpu")):
    """The training step the scripts time: forward and loss (``loss_of(batch)``), backward, clip,
    SGD; on a GPU ``precision`` bf16 / fp16 runs it under autocast (fp16 with a gradient scaler).
    Returns the step; a non-finite loss stops the benchmark after the loop (no sync per step)."""
    module.train()
    optimizer = torch.optim.SGD(module.parameters(), lr=lr)
    dtype = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]
    scaler = torch.amp.GradScaler(device.type, enabled=precision == "fp16")
    finite = torch.ones((), dtype=torch.bool, device=device)

    def step(batch):
        nonlocal finite
        with torch.autocast(device.type, dtype=dtype, enabled=dtype is not None):
            loss = loss_of(batch)
        finite &= torch.isfinite(loss)
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(module.parameters(), clip)
        scaler.step(optimizer)
        scaler.update()

    step.finite = lambda: bool(finite)
    return step


def timed_training(module, loss_of, batches, tokens, **options):
    step = training(module, loss_of, **options)
    speed = tokens_per_second(step, batches, tokens, options.get("device"))
    if not step.finite():
        raise SystemExit(f"{options.get('precision', 'fp32')}: a training loss was not finite (overflow?)")
    return speed


def scoring_speed(model, samples, device=None):
    """Tokens/s of what ``fairseq-eval-lm`` does per batch: the forward, ``get_normalized_probs`` with
    the batch (the whole distribution; the cache mixed in, dynamic evaluation's step), the targets'
    log probs; the stream, the cache and the adapted weights start afresh."""
    model.eval()
    model.decoder.carry.reset()
    for state in (model.neural_cache, model.dynamic_eval):
        if state is not None:
            state.reset()

    def score(sample):
        net = model(**{k: v for k, v in sample["net_input"].items() if k != "src_lengths"})
        model.get_normalized_probs(net, log_probs=True, sample=sample).gather(2, sample["target"].unsqueeze(-1))

    with torch.no_grad():
        return tokens_per_second(score, samples, lambda s: s["ntokens"], device)


def measure(runs, repeats, warm_up=False, show=lambda speed: f"{speed:8.0f} tokens/s"):
    """Interleaved runs: every run once per repeat, so drifts of the machine hit all alike; with
    ``warm_up`` each runs once before, untimed (cuDNN plans, the allocator, autocast caches)."""
    for run in runs.values() if warm_up else ():
        run()
    speeds = {name: [] for name in runs}
    for repeat in range(repeats):
        for name, run in runs.items():
            speeds[name].append(run())
            print(f"  run {repeat + 1}: {name:24s} {show(speeds[name][-1])}", flush=True)
    return speeds


def summary(speeds, baseline, title):
    """Prints the medians of ``speeds``, and their ratios to ``baseline``'s; returns them for the JSON."""
    medians = {name: statistics.median(values) for name, values in speeds.items()}
    print(f"\n{title}\n{'model':24s} {'tokens/s':>9s} {'vs ' + baseline:>24s}")
    for name, median in medians.items():
        print(f"{name:24s} {median:9.0f} {median / medians[baseline]:24.2f}")
    return {
        "title": title,
        "baseline": baseline,
        "tokens_per_s": {n: round(v) for n, v in medians.items()},
        "ratio": {n: round(v / medians[baseline], 3) for n, v in medians.items()},
    }


def measure_by_threads(threads, make_kinds, repeats, describe):
    """Every thread count in one run: for each, ``make_kinds()``'s ``[(kind, runs, baseline)]`` measured
    with a warm-up; returns ``{threads: {kind: summary}}``, each titled ``describe(kind, threads)``."""
    by_threads = {}
    for count in thread_counts(threads):
        torch.set_num_threads(count)
        by_threads[str(count)] = {
            kind: summary(measure(runs, repeats, warm_up=True), baseline, describe(kind, count))
            for kind, runs, baseline in make_kinds()
        }
    return by_threads
