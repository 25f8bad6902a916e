#!/usr/bin/env python
"""How many operations one training step of each model issues: aten calls (and, on a GPU, kernels
launched), from ``torch.profiler``, at batch 32 and 128 x 35, 2 x 650.

    python -m benchmarks.gpu.step_profile --device cuda --json benchmarks/results/gpu/step_profile.json
    python -m benchmarks.gpu.step_profile --device cpu --size 64 --batch-sizes 4      # a quick look here

The step is ``python -m benchmarks.train_speed --mode model``'s (``timing.training``: forward, NLL,
backward, clip, SGD, in float32) on random tokens of a 10,000-word vocabulary, for the bare
``nn.LSTM`` LM and our models; one warm-up step, then one profiled. At batch 32 a GPU step takes a
few milliseconds: it is bound by launches, so these counts are what the models' speed ratios follow.
Every ``aten::`` event is counted, nested ones too (``aten::linear`` and the ``aten::addmm`` under
it), as ../shared/gpu/profile_step.py counted them.
"""
import argparse
import json
import os
import sys
import time

import torch

from benchmarks.timing import device_name, training
from benchmarks.train_speed import BareLSTMLanguageModel, our_model

MODELS = {"bare nn.LSTM LM": None, "alm_lstm": ("alm_lstm", {}),
          "attentive_lm single": ("attentive_lm", {"attention_score": "single"}),
          "attentive_lm combined": ("attentive_lm", {"attention_score": "combined"}),
          "amsrn tied": ("amsrn", {"memory_selection": "tied"})}


def build(name, dictionary, size):
    if MODELS[name] is None:
        module = BareLSTMLanguageModel(len(dictionary), size, 2, 0.5)
        return module, module
    arch, options = MODELS[name]
    return our_model(arch, dictionary, size, 2, 0.5, **options)


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
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda", choices=["cpu", "cuda"],
                        help="cuda (default; a GPU benchmark) or cpu (a quick look on a machine without one)")
    parser.add_argument("--size", type=int, default=650)
    parser.add_argument("--batch-sizes", default="32,128")
    parser.add_argument("--json")
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():  # one line, not torch's CUDA traceback
        parser.exit(2, f"{parser.prog}: error: --device cuda (the default): this benchmark needs a GPU and torch sees "
                       "none: run it on a GPU machine, or pass --device cpu for a quick look here\n")
    import alm_plugin  # noqa: F401
    from fairseq.data import Dictionary

    device = torch.device(args.device)
    dictionary = Dictionary()
    for i in range(10000 - dictionary.nspecial):
        dictionary.add_symbol(f"w{i}")
    counts, start = {}, time.perf_counter()
    print(f"{'model':24s} {'batch':>5s} {'aten calls':>10s} {'kernels':>8s}")
    for batch_size in (int(b) for b in args.batch_sizes.split(",")):
        generator = torch.Generator().manual_seed(0)
        batch = torch.randint(4, len(dictionary), (batch_size, 36), generator=generator).to(device)
        for name in MODELS:
            forward, module = build(name, dictionary, args.size)
            module.to(device)

            def loss_of(tokens, forward=forward):
                logits = forward(tokens[:, :-1])
                return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)).float(),
                                                         tokens[:, 1:].reshape(-1))
            step = training(module, loss_of, lr=0.1, device=device)
            step(batch)  # warm-up: cuDNN plans, the allocator
            aten, kernels = count(step, batch, device)
            counts[f"{name} B{batch_size}"] = {"aten_calls": aten,
                                               "gpu_kernels": kernels if device.type == "cuda" else None}
            print(f"{name:24s} {batch_size:5d} {aten:10d} {kernels if device.type == 'cuda' else '-':>8}", flush=True)
            del module, step
    where = device_name(device, torch.get_num_threads())
    result = {"title": f"operations of one training step, 2 x {args.size}, batch B x 35, {where}",
              "torch": torch.__version__, "argv": sys.argv[1:], "seconds": round(time.perf_counter() - start, 1),
              "counts": counts}
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
