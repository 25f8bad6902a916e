"""The one timing harness every speed script uses: a loop timed over batches, the training step
and the scoring step it times, runs interleaved and repeated (medians, ratios to a baseline), every
thread count in one run, and the JSON they are written to.

Side by side, always: a speed target is a ratio measured in one run on one machine, never an
absolute figure (the machine is shared; a ratio survives that, a tokens/s figure does not).
"""
import json
import os
import statistics
import time

import torch


def tokens_per_second(step, batches, tokens, synchronize=None):
    """``step(batch)`` over every batch; ``tokens(batch)`` counts what it processed."""
    start = time.perf_counter()
    for batch in batches:
        step(batch)
    if synchronize is not None:
        synchronize()
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
    device = options.get("device", torch.device("cpu"))
    speed = tokens_per_second(step, batches, tokens, torch.cuda.synchronize if device.type == "cuda" else None)
    if not step.finite():
        raise SystemExit(f"{options.get('precision', 'fp32')}: a training loss was not finite (overflow?)")
    return speed


def scoring_speed(model, samples, synchronize=None):
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

    with torch.no_grad():  # on a GPU (``synchronize``) timed to the last kernel
        return tokens_per_second(score, samples, lambda s: s["ntokens"], synchronize)


def measure(runs, repeats, show=lambda speed: f"{speed:8.0f} tokens/s"):
    """Interleaved runs: every run once per repeat, so drifts of the machine hit all alike."""
    speeds = {name: [] for name in runs}
    for repeat in range(repeats):
        for name, run in runs.items():
            speeds[name].append(run())
            print(f"  run {repeat + 1}: {name:24s} {show(speeds[name][-1])}", flush=True)
    return speeds


def print_ratios(speeds, baseline_name, title):
    baseline = statistics.median(speeds[baseline_name])
    print(f"\n{title}")
    print(f"{'model':24s} {'tokens/s':>9s} {'vs ' + baseline_name:>24s}")
    for name, values in speeds.items():
        median = statistics.median(values)
        print(f"{name:24s} {median:9.0f} {median / baseline:24.2f}")


def medians_and_ratios(speeds, baseline):
    medians = {name: statistics.median(v) for name, v in speeds.items()}
    return ({n: round(v) for n, v in medians.items()}, {n: round(v / medians[baseline], 3) for n, v in medians.items()})


def measure_by_threads(threads_text, make_kinds, repeats, describe):
    """Every thread count in one run: for each, ``make_kinds()`` gives ``[(kind, runs, baseline)]``,
    each run is warmed up once, then measured interleaved (``measure``); returns
    ``{threads: {kind: {title, baseline, tokens_per_s, ratio}}}`` (``describe(kind, threads)``: the title)."""
    by_threads = {}
    for threads in sorted({int(t) for t in str(threads_text).split(",")}):
        torch.set_num_threads(threads)
        figures = {}
        for kind, runs, baseline in make_kinds():
            for run in runs.values():  # warm-up
                run()
            speeds = measure(runs, repeats)
            title = describe(kind, threads)
            print_ratios(speeds, baseline, title)
            tokens, ratio = medians_and_ratios(speeds, baseline)
            figures[kind] = {"title": title, "baseline": baseline, "tokens_per_s": tokens, "ratio": ratio}
        by_threads[str(threads)] = figures
    return by_threads


def device_name(device, threads):
    return torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU, {threads} threads"


def write_json(path, result):
    if not path:
        return
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
    print(f"wrote {path}")
