"""How many operations one training step of each model issues: aten calls, every ``aten::`` event,
nested ones too (and on a GPU the kernels launched), from ``torch.profiler``, after a warm-up step.

    python -m benchmarks.gpu.step_profile --device cuda --json benchmarks/results/gpu/step_profile.json
    python -m benchmarks.gpu.step_profile --device cpu --size 64 --batch-sizes 4      # a quick look here

The step is ``train_speed --mode model``'s (float32), on random tokens of a 10,000-word vocabulary.
"""

import time

import torch

from benchmarks.timing import device_name, parse, speed_parser, training, write_figures
from benchmarks.train_speed import STEP_MODELS, next_word_loss, step_model


def count(step, batch, device):
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        step(batch)
        if device.type == "cuda":
            torch.cuda.synchronize()
    events = prof.events()
    kernels = [e for e in events if str(getattr(e, "device_type", "")).endswith("CUDA")]
    return sum(e.name.startswith("aten::") for e in events), len(kernels)


def main():
    parser = speed_parser(__doc__, device="cuda", size=650)
    parser.add_argument("--batch-sizes", default="32,128")
    args = parse(parser)
    from fairseq.data import Dictionary

    import alm_plugin  # noqa: F401

    device, cuda = torch.device(args.device), args.device == "cuda"
    dictionary = Dictionary()
    for i in range(10000 - dictionary.nspecial):
        dictionary.add_symbol(f"w{i}")
    counts, start = {}, time.perf_counter()
    print(f"{'model':24s} {'batch':>5s} {'aten calls':>10s} {'kernels':>8s}")
    for batch_size in (int(b) for b in args.batch_sizes.split(",")):
        generator = torch.Generator().manual_seed(0)
        batch = torch.randint(4, len(dictionary), (batch_size, 36), generator=generator).to(device)
        for name in STEP_MODELS:  # one model at a time, each with its own step
            forward, module = step_model(name, dictionary, args.size, 2, 0.5)
            step = training(module.to(device), next_word_loss(forward), lr=0.1, device=device)
            step(batch)  # warm-up: cuDNN plans, the allocator
            aten, kernels = count(step, batch, device)
            counts[f"{name} B{batch_size}"] = {"aten_calls": aten, "gpu_kernels": kernels if cuda else None}
            print(f"{name:24s} {batch_size:5d} {aten:10d} {kernels if cuda else '-':>8}", flush=True)
            del module, step
    write_figures(
        args.json,
        {
            "title": f"operations of one training step, 2 x {args.size}, batch B x 35, "
            f"{device_name(device, torch.get_num_threads())}",
            "seconds": round(time.perf_counter() - start, 1),
            "counts": counts,
        },
    )


if __name__ == "__main__":
    main()
