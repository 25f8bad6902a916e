"""What a fairseq training update costs on the host besides the model's step, and how often it
reads a device value on the host (issue 63), on the CPU.

``fairseq-train`` runs in-process (what the console script's ``cli_main`` runs), tiny models (2 x 16)
at the paper's batch (32 sentences of <= 35 words, or 32 streams of 35), SGD, clip 5,
``--sentence-avg``, ``--num-workers 0``, one thread. For each case:

- host ms an update: ``Trainer.train_step`` minus the task's ``train_step`` (forward, loss,
  backward), the median over the updates after the first few;
- syncs: the operations of one update that read a device value on the host (``HostSyncs``), each
  a GPU -> CPU synchronisation on a GPU; ``ours`` are those in ``alm_plugin``;
- the figures: a digest of every update's logged figures (loss, NLL, paper NLL, attention
  entropy, sample size) and of the trained weights: code that keeps the numbers keeps the digest;
- where the host time goes (one more run, the trainer's pieces timed, not in the medians):
  fairseq's seeding, clip, meters, smoothed values and config look-ups, which the plugin can or
  cannot mend, and the trainer's isfinite / new_tensor checks timed alone.

    python -m benchmarks.host_overhead before=b6545b6 after=alm_plugin --json benchmarks/results/cpu/host_overhead.json

``before`` and ``after`` name the plugins measured: a git revision (its alm_plugin exported with
``git archive``) or a directory. Each plugin runs in processes of its own (fairseq imports a
plugin once a process), the plugins' runs interleaved, so that the machine's drifts (other jobs
on a shared machine) hit them alike: compare the labels of one run, not figures of two.
``tests/test_host_syncs.py`` counts the syncs with the same ``HostSyncs``.
"""
import argparse
import collections
import contextlib
import hashlib
import json
import logging
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import warnings

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from benchmarks import ROOT
from benchmarks.timing import write_json

SAMPLE_DATA = os.path.join(ROOT, "data-bin", "wikitext-2-sample")
aten = torch.ops.aten
# what reads a device value on the host: .item() / bool() / int() / float(), an output whose size
# depends on the values, a comparison answered with a Python bool
READS = {aten._local_scalar_dense.default, aten.nonzero.default, aten.masked_select.default,
         aten.equal.default}
MASK_INDEXED = {aten.index.Tensor, aten.index_put.default, aten.index_put_.default}

FIGURES = ("loss", "nll_loss", "paper_nll_loss", "attn_entropy", "sample_size")  # what an update logs
RECIPE = ["--optimizer", "sgd", "--lr", "1", "--clip-norm", "5", "--sentence-avg",
          "--criterion", "attention_cross_entropy", "--batch-size", "32", "--seed", "1"]
SENTENCES = ["--task", "sentence_language_modeling", "--tokens-per-sample", "35"]
STREAMS = ["--task", "document_language_modeling", "--tokens-per-sample", "35", "--memory-window", "20"]
CASES = {
    "sentence lstm": [*SENTENCES, "--arch", "alm_lstm"],
    "sentence single": [*SENTENCES, "--arch", "attentive_lm"],
    "sentence combined": [*SENTENCES, "--arch", "attentive_lm", "--attention-score", "combined"],
    "sentence amsrn": [*SENTENCES, "--arch", "amsrn"],
    "document single": [*STREAMS, "--arch", "attentive_lm"],
}


def case_args(case, data=SAMPLE_DATA, plugin=os.path.join(ROOT, "alm_plugin"), device="cpu", size=16, workers=0):
    """fairseq-train's arguments (after the program's name) for one case: 2 x ``size``, on ``device``,
    ``workers`` data-loading processes."""
    return [data, "--user-dir", plugin, *(["--cpu"] if device == "cpu" else []), "--num-workers", str(workers), *RECIPE,
            "--embed-dim", str(size), "--hidden-size", str(size), "--num-layers", "2", *CASES[case]]


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


@contextlib.contextmanager
def counting_syncs(host_syncs):
    """``host_syncs`` (``HostSyncs``) on, and where CUDA is in use ``torch.cuda.set_sync_debug_mode``
    warning at each synchronisation; yields ``{"cuda": None}``, given the count of those on exit."""
    cuda = torch.cuda.is_available() and torch.cuda.is_initialized()
    found = {"cuda": None}
    with host_syncs, warnings.catch_warnings(record=True) as recorded:
        warnings.simplefilter("always")
        if cuda:
            torch.cuda.set_sync_debug_mode("warn")
        try:
            yield found
        finally:
            if cuda:
                torch.cuda.set_sync_debug_mode("default")
                found["cuda"] = sum("synchroniz" in str(w.message) for w in recorded)


def measure(case, updates=60, skip=5, counted=3, parts=False, plugin=os.path.join(ROOT, "alm_plugin"), **where):
    """Runs the case for ``updates`` updates (``where``: ``case_args``'s data, device, size, workers);
    returns the per-update medians (ms) of the trainer's step and the task's, of the time from one
    update to the next and the tokens/s over them, the syncs of update ``counted`` (and on a GPU those
    ``set_sync_debug_mode`` reports), and with ``parts`` the medians of the trainer's pieces."""
    from fairseq.logging import metrics
    from fairseq.logging.meters import MetersDict
    from fairseq.tasks import FairseqTask
    from fairseq.trainer import Trainer
    from omegaconf import DictConfig

    step_ms, task_ms, piece_ms, syncs = [], [], collections.defaultdict(list), HostSyncs()
    starts, tokens = [], []
    inside = {"task": 0.0, "pieces": collections.Counter(), "lookups": 0, "log": None}
    trained = hashlib.sha256()  # every update's figures, then the weights: the same bits, the same digest

    def trainer_step(original):
        def step(self, samples, raise_oom=False):
            number = len(step_ms) + 1
            inside["task"], inside["pieces"], inside["lookups"] = 0.0, collections.Counter(), 0
            tokens.append(sum(sample.get("ntokens", 0) for sample in samples if sample))
            with counting_syncs(syncs) if number == counted else contextlib.nullcontext() as found:
                start = time.perf_counter()
                starts.append(start)
                result = original(self, samples, raise_oom)
                spent = time.perf_counter() - start
            if number == counted:
                inside["cuda_syncs"] = found["cuda"]
            step_ms.append(spent * 1e3)
            task_ms.append(inside["task"] * 1e3)
            log = inside["log"]
            trained.update(repr([float(log[key]) for key in FIGURES if key in log]).encode())
            if number == updates:
                for parameter in self.model.parameters():
                    trained.update(parameter.detach().cpu().numpy().tobytes())
            for piece, seconds in inside["pieces"].items():
                piece_ms[piece].append(seconds * 1e3)
            piece_ms["config look-ups (count)"].append(inside["lookups"])
            return result
        return step

    def task_step(original):
        def step(self, *args, **kwargs):
            start = time.perf_counter()
            try:
                result = original(self, *args, **kwargs)
                inside["log"] = result[2]
                return result
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
            start = time.perf_counter()
            try:
                return original(self, key)
            finally:
                inside["pieces"]["config look-ups"] += time.perf_counter() - start
        return lookup

    with contextlib.ExitStack() as stack:
        args = [*case_args(case, plugin=plugin, **where), "--max-update", str(updates), "--no-save", "--disable-validation",
                "--no-progress-bar", "--log-interval", str(10 * updates),
                "--save-dir", stack.enter_context(tempfile.TemporaryDirectory())]
        stack.enter_context(patched(Trainer, "train_step", trainer_step))
        stack.enter_context(patched(FairseqTask, "train_step", task_step))
        if parts:
            for owner, name, piece in ((Trainer, "_set_seed", "seeding"), (Trainer, "zero_grad", "zero_grad"),
                                       (Trainer, "clip_grad_norm", "clip"),
                                       (Trainer, "_reduce_and_log_stats", "reduce and log stats"),
                                       (MetersDict, "get_smoothed_values", "smoothed values"),
                                       (metrics, "log_scalar", "meters"), (metrics, "log_derived", "meters"),
                                       (metrics, "log_speed", "meters")):
                stack.enter_context(patched(owner, name, timed(piece)))
            stack.enter_context(patched(DictConfig, "__getattr__", counted_lookup))
        train(args)

    def median(values):
        return round(statistics.median(values[skip:]), 3)

    host = [s - t for s, t in zip(step_ms, task_ms)]
    between = [(b - a) * 1e3 for a, b in zip(starts, starts[1:])]  # one update's start to the next's
    figures = {"updates": len(step_ms), "host_ms": median(host), "step_ms": median(step_ms),
               "task_ms": median(task_ms), "update_ms": median(between),
               "tokens_per_s": round(sum(tokens[skip:-1]) / (starts[-1] - starts[skip])),
               "syncs": syncs.total, "ours": syncs.ours, "where": dict(syncs.found),
               "cuda_syncs": inside.get("cuda_syncs"), "trained": trained.hexdigest()[:16]}
    if parts:
        figures["parts_ms"] = {piece: median(values) for piece, values in piece_ms.items()}
    return figures


def trainer_checks_ms(repeats=2000):
    """What fairseq's trainer does with the gradients' norm besides the clip, timed alone: two
    ``torch.isfinite`` read in an ``if`` (the update's last reads but the smoothed values) and the
    ``clip`` meter's ``torch.where`` of two ``new_tensor`` (a blocking copy each on a GPU)."""
    norm = torch.tensor(3.0)

    def checks():
        if not torch.isfinite(norm).all() or not torch.isfinite(norm):
            raise FloatingPointError
        torch.where(norm > 5.0, norm.new_tensor(100), norm.new_tensor(0))

    checks()
    start = time.perf_counter()
    for _ in range(repeats):
        checks()
    return round((time.perf_counter() - start) / repeats * 1e3, 4)


def plugin_directory(source, keep):
    """``source``: an alm_plugin directory, or a git revision of this repository whose alm_plugin is
    exported (``git archive``, read-only) into a temporary directory that ``keep`` holds."""
    if os.path.isdir(source):
        return os.path.abspath(source)
    into = keep.enter_context(tempfile.TemporaryDirectory())
    archive = subprocess.run(["git", "archive", source, "alm_plugin"], cwd=ROOT, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", into], input=archive.stdout, check=True)
    return os.path.join(into, "alm_plugin")


def measured_in_a_process(cases, plugin, updates, parts, where):
    """``measure`` of every case in a fresh process (fairseq imports a plugin once a process, so
    each plugin gets its own): ``{case: figures}``."""
    command = [sys.executable, "-m", "benchmarks.host_overhead", "--one", ",".join(cases), "--updates", str(updates),
               f"--data={where['data']}", f"--device={where['device']}", f"--size={where['size']}",
               f"--num-workers={where['workers']}"]
    proc = subprocess.run([*command, *(["--parts"] if parts else [])], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "OMP_NUM_THREADS": "1", "ALM_HOST_OVERHEAD_PLUGIN": plugin})
    if proc.returncode != 0:
        raise SystemExit(f"{plugin} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def compare(plugins, cases, updates, repeats, where):
    """Every plugin's cases ``repeats`` times, the plugins interleaved (the machine's drifts hit all
    alike), then once with the pieces timed: ``{label: {case: figures}}``, the medians of the timed runs."""
    runs = collections.defaultdict(lambda: collections.defaultdict(list))
    for repeat in range(repeats + 1):
        for label, plugin in plugins.items():
            for case, result in measured_in_a_process(cases, plugin, updates, repeat == repeats, where).items():
                runs[label][case].append(result)
                print(f"  run {repeat + 1}: {label:8s} {case:18s} host {result['host_ms']:6.3f} ms an update, "
                      f"{result['update_ms']:.2f} ms from one to the next, {result['tokens_per_s']} tokens/s, "
                      f"{result['syncs']} syncs ({result['ours']} ours)", flush=True)
    figures = {}
    for label, by_case in runs.items():
        figures[label] = {}
        for case, results in by_case.items():
            last, timed = results[-1], results[:-1] or results  # --repeats 0: the pieces' run alone
            figures[label][case] = {
                **{key: round(statistics.median(r[key] for r in timed), 3)
                   for key in ("host_ms", "step_ms", "task_ms", "update_ms", "tokens_per_s")},
                "syncs": last["syncs"], "cuda_syncs": last["cuda_syncs"], "ours": last["ours"], "where": last["where"], "parts_ms": last["parts_ms"],
                "trained": last["trained"] if len({r["trained"] for r in results}) == 1 else "differs between runs"}
    return figures


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.host_overhead", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("plugins", nargs="*", metavar="LABEL=SOURCE",
                        help="the plugins measured, side by side: an alm_plugin directory or a git revision "
                             "(default: after=alm_plugin, this tree's); e.g. before=b6545b6 after=alm_plugin")
    parser.add_argument("--updates", type=int, default=60, help="updates a run (the first 5 are not timed)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="timed runs of each case and plugin, interleaved; medians of their medians (then one "
                             "with the pieces timed; 0: that one alone, as a dry run does)")
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated, of: " + ", ".join(CASES))
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="where fairseq-train trains")
    parser.add_argument("--size", type=int, default=16, help="the models' 2 x SIZE (650: the paper's)")
    parser.add_argument("--num-workers", type=int, default=0, help="fairseq-train's data-loading processes")
    parser.add_argument("--data", default=SAMPLE_DATA, help="a binarised corpus (default: the shipped sample)")
    parser.add_argument("--json", help="write the figures here (each label's replaces that label's figures)")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # a single run, in the process compare() starts
    parser.add_argument("--parts", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.updates < 8:
        parser.error(f"--updates {args.updates}: at least 8 (the first 5 are not timed)")
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: torch sees no GPU here (run it on the GPU machine: run.sh timing)")
    where = {"data": args.data, "device": args.device, "size": args.size, "workers": args.num_workers}
    if args.one:
        torch.set_num_threads(1)
        logging.disable(logging.WARNING)  # fairseq's INFO lines (and the models' one-time notes)
        plugin = os.environ.get("ALM_HOST_OVERHEAD_PLUGIN", os.path.join(ROOT, "alm_plugin"))
        print(json.dumps({case: measure(case, args.updates, parts=args.parts, plugin=plugin, **where)
                          for case in args.one.split(",")}))
        return
    sources = dict(p.split("=", 1) for p in args.plugins) or {"after": "alm_plugin"}
    with contextlib.ExitStack() as keep:
        plugins = {label: plugin_directory(source, keep) for label, source in sources.items()}
        figures = compare(plugins, [c.strip() for c in args.cases.split(",")], args.updates, args.repeats, where)
    for label, by_case in figures.items():
        for case, f in by_case.items():
            print(f"{label:8s} {case:18s} host {f['host_ms']:6.3f} ms (step {f['step_ms']:.2f}, task {f['task_ms']:.2f}), "
                  f"update {f['update_ms']:.2f} ms, {f['tokens_per_s']:.0f} tokens/s, {f['syncs']} syncs, {f['ours']} "
                  f"ours{'' if f['cuda_syncs'] is None else ', %d CUDA syncs' % f['cuda_syncs']}; figures and weights "
                  f"{f['trained']}")
            print("    " + ", ".join(f"{n} x {where}" for where, n in sorted(f["where"].items())))
            print("    pieces (ms, one run): " + ", ".join(f"{k} {v}" for k, v in f["parts_ms"].items()))
    if args.json:
        result = {"runs": {}}
        if os.path.exists(args.json):
            with open(args.json) as f:
                result = json.load(f)
        for label, by_case in figures.items():
            result["runs"][label] = {
                "cases": by_case, "trainer_checks_ms": trainer_checks_ms(), "plugin": sources[label],
                "device": (torch.cuda.get_device_name() if args.device == "cuda" else
                           f"CPU, 1 thread ({platform.machine()})") + ", side by side with " + ", ".join(
                    other for other in figures if other != label),
                "data": args.data, "size": args.size, "num_workers": args.num_workers, "updates": args.updates, "repeats": args.repeats, "torch": torch.__version__}
        result["command"] = "python -m benchmarks.host_overhead " + " ".join(argv or [])
        write_json(args.json, result)


if __name__ == "__main__":
    main(sys.argv[1:])
