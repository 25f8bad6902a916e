"""What a fairseq training update costs on the host besides the model's step, and how often it
reads a device value on the host (issue 63), on the CPU.

``fairseq-train`` runs in this process (the console script's ``cli_main``), tiny models (2 x 16)
at the paper's batch (32 sentences of <= 35 words, or 32 streams of 35), SGD, clip 5,
``--sentence-avg``, ``--num-workers 0``, one thread. For each case:

- host ms an update: ``Trainer.train_step`` minus the task's ``train_step`` (forward, loss,
  backward), the median over the updates after the first few;
- syncs: the operations of one update that read a device value on the host (``HostSyncs``), each
  a GPU -> CPU synchronisation on a GPU; ``ours`` are those in ``alm_plugin``;
- where the host time goes (a second run with the trainer's pieces timed): fairseq's seeding,
  clip, smoothed values and its config look-ups, which the plugin can or cannot mend.

    python -m benchmarks.host_overhead --label after --json benchmarks/results/cpu/host_overhead.json

``--label`` names the code measured (``before`` / ``after`` a change); each label's figures are
kept in the JSON beside the others'. ``tests/test_host_syncs.py`` counts the syncs with the same
``HostSyncs``.
"""
import argparse
import collections
import contextlib
import logging
import os
import platform
import statistics
import tempfile
import time
import traceback

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from benchmarks.timing import write_json

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE_DATA = os.path.join(ROOT, "data-bin", "wikitext-2-sample")
aten = torch.ops.aten
# what reads a device value on the host: .item() / bool() / int() / float(), an output whose size
# depends on the values, a comparison answered with a Python bool
READS = {aten._local_scalar_dense.default, aten.nonzero.default, aten.masked_select.default,
         aten.equal.default}
MASK_INDEXED = {aten.index.Tensor, aten.index_put.default, aten.index_put_.default}

TINY = ["--embed-dim", "16", "--hidden-size", "16", "--num-layers", "2"]
RECIPE = ["--cpu", "--num-workers", "0", "--optimizer", "sgd", "--lr", "1", "--clip-norm", "5", "--sentence-avg",
          "--criterion", "attention_cross_entropy", "--batch-size", "32", "--seed", "1"]
SENTENCES = ["--task", "sentence_language_modeling", "--tokens-per-sample", "35"]
STREAMS = ["--task", "document_language_modeling", "--tokens-per-sample", "35", "--memory-window", "20"]
CASES = {
    "sentence single": [*SENTENCES, "--arch", "attentive_lm"],
    "sentence combined": [*SENTENCES, "--arch", "attentive_lm", "--attention-score", "combined"],
    "sentence amsrn": [*SENTENCES, "--arch", "amsrn"],
    "document single": [*STREAMS, "--arch", "attentive_lm"],
}


def case_args(case, data=SAMPLE_DATA):
    """fairseq-train's arguments (after the program's name) for one case."""
    return [data, "--user-dir", os.path.join(ROOT, "alm_plugin"), *RECIPE, *TINY, *CASES[case]]


def _mask_indexed(func, args) -> bool:
    if func not in MASK_INDEXED:
        return False
    return any(isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in args[1] if i is not None)


def _caller() -> str:
    """``file:line`` of the innermost frame outside torch (what asked for the op)."""
    for frame in reversed(traceback.extract_stack()[:-2]):
        if f"{os.sep}torch{os.sep}" not in frame.filename:
            path = frame.filename.replace(os.sep, "/")
            for root in ("/alm_plugin/", "/site-packages/"):  # ours, or the package's (fairseq/trainer.py)
                if root in path:
                    path = path.split(root, 1)[1] if root == "/site-packages/" else "alm_plugin/" + path.split(root, 1)[1]
                    break
            return f"{path}:{frame.lineno}"
    return "?"


class HostSyncs(TorchDispatchMode):
    """Counts, while it is on, the operations that read a device value on the host (on a GPU each
    waits for the device): ``aten._local_scalar_dense`` (``.item()``, ``bool()``, ``int()``,
    ``float()`` of a tensor), ``nonzero``, ``masked_select``, ``equal``, and indexing with a boolean
    mask. ``found`` maps ``"file:line op"`` to its count; ``ours`` counts those in ``alm_plugin``."""

    def __init__(self):
        super().__init__()
        self.found = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func in READS or _mask_indexed(func, args):
            self.found[f"{_caller()} {func.overloadpacket.__name__}"] += 1
        return func(*args, **(kwargs or {}))

    @property
    def total(self) -> int:
        return sum(self.found.values())

    @property
    def ours(self) -> int:
        return sum(n for where, n in self.found.items() if where.startswith("alm_plugin/"))


@contextlib.contextmanager
def patched(owner, name, make):
    """``owner.name`` replaced by ``make(original)`` inside the block."""
    original = owner.__dict__[name] if name in owner.__dict__ else None
    current = getattr(owner, name)
    setattr(owner, name, make(current))
    try:
        yield
    finally:
        if original is None:
            delattr(owner, name)
        else:
            setattr(owner, name, original)


def train(argv):
    """``fairseq-train argv`` in this process, its log quiet."""
    from fairseq import options
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from fairseq.distributed import utils as distributed_utils
    from fairseq_cli import train as fairseq_train
    for name in ("best", "num_runs"):  # a fresh process starts without a previous run's best
        if hasattr(fairseq_train.should_stop_early, name):
            delattr(fairseq_train.should_stop_early, name)
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser, argv)
    distributed_utils.call_main(convert_namespace_to_omegaconf(args), fairseq_train.main)


def measure(case, updates=60, skip=5, counted=3, parts=False):
    """Runs the case for ``updates`` updates; returns the per-update medians (ms) of the trainer's
    step and the task's, the syncs of update ``counted``, and with ``parts`` the medians of the
    trainer's pieces."""
    from fairseq.logging.meters import MetersDict
    from fairseq.tasks import FairseqTask
    from fairseq.trainer import Trainer
    from omegaconf import DictConfig

    step_ms, task_ms, piece_ms, syncs = [], [], collections.defaultdict(list), HostSyncs()
    inside = {"task": 0.0, "pieces": collections.Counter(), "lookups": 0}

    def trainer_step(original):
        def step(self, samples, raise_oom=False):
            number = len(step_ms) + 1
            inside["task"], inside["pieces"], inside["lookups"] = 0.0, collections.Counter(), 0
            with syncs if number == counted else contextlib.nullcontext():
                start = time.perf_counter()
                result = original(self, samples, raise_oom)
                spent = time.perf_counter() - start
            step_ms.append(spent * 1e3)
            task_ms.append(inside["task"] * 1e3)
            for piece, seconds in inside["pieces"].items():
                piece_ms[piece].append(seconds * 1e3)
            piece_ms["config look-ups (count)"].append(inside["lookups"])
            return result
        return step

    def task_step(original):
        def step(self, *args, **kwargs):
            start = time.perf_counter()
            try:
                return original(self, *args, **kwargs)
            finally:
                inside["task"] += time.perf_counter() - start
        return step

    def timed(piece):
        def make(original):
            def call(*args, **kwargs):
                start = time.perf_counter()
                try:
                    return original(*args, **kwargs)
                finally:
                    inside["pieces"][piece] += time.perf_counter() - start
            return call
        return make

    def counted_lookup(original):
        def lookup(self, key):
            inside["lookups"] += 1
            return original(self, key)
        return lookup

    with contextlib.ExitStack() as stack:
        args = [*case_args(case), "--max-update", str(updates), "--no-save", "--disable-validation",
                "--no-progress-bar", "--log-interval", str(10 * updates),
                "--save-dir", stack.enter_context(tempfile.TemporaryDirectory())]
        stack.enter_context(patched(Trainer, "train_step", trainer_step))
        stack.enter_context(patched(FairseqTask, "train_step", task_step))
        if parts:
            for owner, name, piece in ((Trainer, "_set_seed", "seeding"), (Trainer, "zero_grad", "zero_grad"),
                                       (Trainer, "clip_grad_norm", "clip"),
                                       (Trainer, "_reduce_and_log_stats", "reduce and log stats"),
                                       (MetersDict, "get_smoothed_values", "smoothed values")):
                stack.enter_context(patched(owner, name, timed(piece)))
            stack.enter_context(patched(DictConfig, "__getattr__", counted_lookup))
        train(args)

    def median(values):
        return round(statistics.median(values[skip:]), 3)

    host = [s - t for s, t in zip(step_ms, task_ms)]
    figures = {"updates": len(step_ms), "host_ms": median(host), "step_ms": median(step_ms),
               "task_ms": median(task_ms), "syncs": syncs.total, "ours": syncs.ours, "where": dict(syncs.found)}
    if parts:
        figures["parts_ms"] = {piece: median(values) for piece, values in piece_ms.items()}
    return figures


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.host_overhead", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--label", default="after", help="what code is measured (before / after a change)")
    parser.add_argument("--updates", type=int, default=60, help="updates a run (the first 5 are not timed)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each case, interleaved; medians of their medians")
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated, of: " + ", ".join(CASES))
    parser.add_argument("--json", help="write the figures here, beside other labels' figures already there")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    logging.disable(logging.WARNING)  # fairseq's INFO lines (and the model's one-time notes)
    cases = [c.strip() for c in args.cases.split(",")]
    runs = collections.defaultdict(list)
    for repeat in range(args.repeats):
        for case in cases:
            runs[case].append(measure(case, args.updates, parts=repeat == args.repeats - 1))
            print(f"  run {repeat + 1}: {case:18s} host {runs[case][-1]['host_ms']:6.3f} ms an update, "
                  f"{runs[case][-1]['syncs']} syncs ({runs[case][-1]['ours']} ours)", flush=True)
    figures = {}
    for case, results in runs.items():
        last = results[-1]
        figures[case] = {**{key: round(statistics.median(r[key] for r in results), 3)
                            for key in ("host_ms", "step_ms", "task_ms")},
                         "syncs": last["syncs"], "ours": last["ours"], "where": last["where"],
                         "parts_ms": last["parts_ms"]}
        print(f"{case:18s} host {figures[case]['host_ms']:6.3f} ms (step {figures[case]['step_ms']:.2f}, task "
              f"{figures[case]['task_ms']:.2f}), {last['syncs']} syncs, {last['ours']} ours")
        for where, count in sorted(last["where"].items()):
            print(f"    {count} x {where}")
        print("    parts (ms, one run): " + ", ".join(f"{k} {v}" for k, v in last["parts_ms"].items()))
    if args.json:
        import json
        result = {"runs": {}}
        if os.path.exists(args.json):
            with open(args.json) as f:
                result = json.load(f)
        result["runs"][args.label] = {
            "cases": figures, "device": f"CPU, 1 thread ({platform.processor() or platform.machine()})",
            "command": f"python -m benchmarks.host_overhead {' '.join(argv or [])}".strip(),
            "updates": args.updates, "repeats": args.repeats, "torch": torch.__version__}
        write_json(args.json, result)


if __name__ == "__main__":
    import sys
    main(sys.argv[1:])
