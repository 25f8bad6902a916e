"""What a fairseq training update costs on the host besides the model's step, and how often it
reads a device value on the host (docs/benchmarks.md, "The host's share of an update").

    python -m benchmarks.host_overhead before=b6545b6 after=alm_plugin --json benchmarks/results/cpu/host_overhead.json

Each plugin (a directory, or a git revision whose alm_plugin ``git archive`` exports) runs
``fairseq-train`` in-process, in processes of its own (fairseq imports a plugin once a process),
the plugins interleaved. Per case: the host's ms an update (``Trainer.train_step`` minus the task's
``train_step``), one update's reads (``HostSyncs``), a digest of the logged figures and the trained
weights, and, in one more run, the trainer's pieces timed. A LABEL ending in ``-graphs`` trains
with ``--cuda-graphs``.
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
import timeit
import traceback
import warnings
from dataclasses import dataclass, field
from unittest import mock

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from benchmarks import ROOT
from benchmarks.result_files import write_json
from benchmarks.timing import SAMPLE, parse, speed_parser

aten = torch.ops.aten
# what reads a device value on the host: .item() / bool() / int() / float(), an output whose size
# depends on the values, a comparison answered with a Python bool
READS = {aten._local_scalar_dense.default, aten.nonzero.default, aten.masked_select.default, aten.equal.default}
MASK_INDEXED = {aten.index.Tensor, aten.index_put.default, aten.index_put_.default}

FIGURES = ("loss", "nll_loss", "paper_nll_loss", "attn_entropy", "sample_size")  # what an update logs
RECIPE = [
    "--optimizer",
    "sgd",
    "--lr",
    "1",
    "--clip-norm",
    "5",
    "--sentence-avg",
    "--criterion",
    "attention_cross_entropy",
    "--batch-size",
    "32",
    "--seed",
    "1",
]
SENTENCES = ["--task", "sentence_language_modeling", "--tokens-per-sample", "35"]
STREAMS = ["--task", "document_language_modeling", "--tokens-per-sample", "35", "--memory-window", "20"]
CASES = {
    "sentence lstm": [*SENTENCES, "--arch", "alm_lstm"],
    "sentence single": [*SENTENCES, "--arch", "attentive_lm"],
    "sentence combined": [*SENTENCES, "--arch", "attentive_lm", "--attention-score", "combined"],
    "sentence amsrn": [*SENTENCES, "--arch", "amsrn"],
    "document single": [*STREAMS, "--arch", "attentive_lm"],
}


def case_args(case, data=SAMPLE, plugin=os.path.join(ROOT, "alm_plugin"), device="cpu", size=16, workers=0):
    """fairseq-train's arguments for one case: 2 x ``size`` on ``device``, ``workers`` data-loading processes."""
    return [
        data,
        "--user-dir",
        plugin,
        *(["--cpu"] if device == "cpu" else []),
        "--num-workers",
        str(workers),
        *RECIPE,
        "--embed-dim",
        str(size),
        "--hidden-size",
        str(size),
        "--num-layers",
        "2",
        *CASES[case],
    ]


TORCH = os.path.dirname(torch.__file__) + os.sep  # torch's frames: not every path with /torch/ (/opt/torch/.venv/...)


def _caller() -> str:
    """``file:line`` of the innermost frame outside torch: ``alm_plugin/...`` ours (the plugin fairseq imported,
    not any path through a clone named alm_plugin), ``fairseq/...`` fairseq's (in a site-packages anywhere)."""
    plugin = getattr(sys.modules.get("alm_plugin"), "__file__", None)
    places = [(os.path.dirname(os.path.abspath(plugin)) + os.sep, "alm_plugin/", str.startswith)] if plugin else []
    places += [(os.sep + "site-packages" + os.sep, "", str.__contains__), (ROOT + os.sep, "", str.startswith)]
    for frame in reversed(traceback.extract_stack()[:-2]):
        if not frame.filename.startswith(TORCH):  # a "<string>" (generated code) has no directory to place it in
            path = frame.filename if frame.filename.startswith("<") else os.path.abspath(frame.filename)
            at, name = next(((at, name) for at, name, found in places if found(path, at)), ("", ""))
            return f"{(name + path.split(at, 1)[1] if at else path).replace(os.sep, '/')}:{frame.lineno}"
    return "?"


class HostSyncs(TorchDispatchMode):
    """Counts, while it is on, the operations that read a device value on the host (on a GPU each
    waits for the device): ``aten._local_scalar_dense`` (``.item()``, ``bool()``, ``int()``,
    ``float()`` of a tensor), ``nonzero``, ``masked_select``, ``equal``, and indexing with a boolean
    mask. ``found`` maps ``"file:line op"`` to its count; ``ours`` counts those in ``alm_plugin``."""

    cuda = None  # the synchronisations set_sync_debug_mode reported (``counting_syncs``, on a GPU)

    def __init__(self):
        super().__init__()
        self.found = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func in READS or (
            func in MASK_INDEXED
            and any(isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in args[1] if i is not None)
        ):
            self.found[f"{_caller()} {func.overloadpacket.__name__}"] += 1
        return func(*args, **(kwargs or {}))

    @property
    def ours(self) -> int:
        return sum(n for where, n in self.found.items() if where.startswith("alm_plugin/"))


def train(argv):
    """``fairseq-train argv`` in this process, its log quiet."""
    from fairseq import options
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from fairseq.distributed import utils as distributed_utils
    from fairseq_cli import train as fairseq_train

    for name in ("best", "num_runs"):  # a fresh process starts without a previous run's best
        if hasattr(fairseq_train.should_stop_early, name):
            delattr(fairseq_train.should_stop_early, name)
    args = options.parse_args_and_arch(options.get_training_parser(), argv)
    distributed_utils.call_main(convert_namespace_to_omegaconf(args), fairseq_train.main)


@contextlib.contextmanager
def counting_syncs(host_syncs):
    """``host_syncs`` (``HostSyncs``) on, and where CUDA is in use ``torch.cuda.set_sync_debug_mode``
    warning at each synchronisation, their count left in ``host_syncs.cuda`` on exit."""
    cuda = torch.cuda.is_available() and torch.cuda.is_initialized()
    with host_syncs, warnings.catch_warnings(record=True) as recorded:
        warnings.simplefilter("always")
        if cuda:
            torch.cuda.set_sync_debug_mode("warn")
        try:
            yield
        finally:
            if cuda:
                torch.cuda.set_sync_debug_mode("default")
                host_syncs.cuda = sum("synchroniz" in str(w.message) for w in recorded)


@dataclass
class UpdateRecord:
    """What ``measure`` records of each update: the trainer's and the task's step (ms), when each
    update started, its tokens, the trainer's pieces (ms), the host syncs of the counted update and a
    digest of every update's figures, then the weights (the same bits, the same digest)."""

    step_ms: list = field(default_factory=list)
    task_ms: list = field(default_factory=list)
    starts: list = field(default_factory=list)
    tokens: list = field(default_factory=list)
    piece_ms: dict = field(default_factory=lambda: collections.defaultdict(list))
    syncs: HostSyncs = field(default_factory=HostSyncs)
    trained: object = field(default_factory=hashlib.sha256)

    def figures(self, skip, parts):
        """The per-update medians after the first ``skip`` updates, tokens/s, the syncs and the digest."""

        def median(values):
            return round(statistics.median(values[skip:]), 3)  # the first ``skip`` updates warm up

        host = [s - t for s, t in zip(self.step_ms, self.task_ms)]
        between = [(b - a) * 1e3 for a, b in zip(self.starts, self.starts[1:])]  # one update's start to the next's
        figures = {
            "updates": len(self.step_ms),
            "host_ms": median(host),
            "step_ms": median(self.step_ms),
            "task_ms": median(self.task_ms),
            "update_ms": median(between),
            "tokens_per_s": round(sum(self.tokens[skip:-1]) / (self.starts[-1] - self.starts[skip])),
            "syncs": sum(self.syncs.found.values()),
            "ours": self.syncs.ours,
            "where": dict(self.syncs.found),
            "cuda_syncs": self.syncs.cuda,
            "trained": self.trained.hexdigest()[:16],
        }
        if parts:
            figures["parts_ms"] = {piece: median(values) for piece, values in self.piece_ms.items()}
        return figures


def measure(
    case, updates=60, skip=5, counted=3, parts=False, plugin=os.path.join(ROOT, "alm_plugin"), extra=(), **where
):
    """Runs the case for ``updates`` updates (``where``: ``case_args``'s; ``extra``: more of fairseq-train's
    arguments); returns the per-update medians
    (ms) of the trainer's step and the task's, of the time from one update to the next and the tokens/s
    over them, the syncs of update ``counted``, and with ``parts`` the medians of the trainer's pieces."""
    from fairseq.logging import metrics
    from fairseq.logging.meters import MetersDict
    from fairseq.trainer import Trainer
    from omegaconf import DictConfig

    record = UpdateRecord()
    inside = {"pieces": collections.Counter(), "calls": collections.Counter(), "log": None}

    def timed(piece):  # the calls of ``piece`` in an update and their seconds
        def make(original):
            def call(*args, **kwargs):
                inside["calls"][piece] += 1
                start = time.perf_counter()
                try:
                    return original(*args, **kwargs)
                finally:
                    inside["pieces"][piece] += time.perf_counter() - start

            return call

        return make

    def trainer_step(original):
        def step(self, samples, raise_oom=False):
            if "train_step" not in vars(self.task):  # the task's own step (the plugin's class may define it)
                self.task.train_step = task_step(self.task.train_step)
            number = len(record.step_ms) + 1
            inside["pieces"], inside["calls"] = collections.Counter(), collections.Counter()
            record.tokens.append(sum(sample.get("ntokens", 0) for sample in samples if sample))
            with counting_syncs(record.syncs) if number == counted else contextlib.nullcontext():
                start = time.perf_counter()
                record.starts.append(start)
                result = original(self, samples, raise_oom)
                spent = time.perf_counter() - start
            record.step_ms.append(spent * 1e3)
            record.task_ms.append(inside["pieces"].pop("task", 0.0) * 1e3)
            record.trained.update(repr([float(inside["log"][key]) for key in FIGURES if key in inside["log"]]).encode())
            if number == updates:
                for parameter in self.model.parameters():
                    record.trained.update(parameter.detach().cpu().numpy().tobytes())
            for piece, seconds in inside["pieces"].items():
                record.piece_ms[piece].append(seconds * 1e3)
            record.piece_ms["config look-ups (count)"].append(inside["calls"]["config look-ups"])
            return result

        return step

    def task_step(original):  # a bound method
        def step(*args, **kwargs):
            result = original(*args, **kwargs)
            inside["log"] = result[2]  # what the update logs
            return result

        return timed("task")(step)

    patches = [(Trainer, "train_step", trainer_step)]
    if parts:
        patches += [
            (owner, name, timed(piece))
            for owner, name, piece in (
                (Trainer, "_set_seed", "seeding"),
                (Trainer, "zero_grad", "zero_grad"),
                (Trainer, "clip_grad_norm", "clip"),
                (Trainer, "_reduce_and_log_stats", "reduce and log stats"),
                (MetersDict, "get_smoothed_values", "smoothed values"),
                (metrics, "log_scalar", "meters"),
                (metrics, "log_derived", "meters"),
                (metrics, "log_speed", "meters"),
                (DictConfig, "__getattr__", "config look-ups"),
            )
        ]
    with contextlib.ExitStack() as stack:
        for owner, name, make in patches:
            stack.enter_context(mock.patch.object(owner, name, make(getattr(owner, name))))
        train(
            [
                *case_args(case, plugin=plugin, **where),
                *extra,
                "--max-update",
                str(updates),
                "--no-save",
                "--disable-validation",
                "--no-progress-bar",
                "--log-interval",
                str(10 * updates),
                "--save-dir",
                stack.enter_context(tempfile.TemporaryDirectory()),
            ]
        )

    return record.figures(skip, parts)


def trainer_checks_ms(repeats=2000):
    """What fairseq's trainer does with the gradients' norm besides the clip, timed alone: two
    ``torch.isfinite`` read in an ``if`` (the update's last reads but the smoothed values) and the
    ``clip`` meter's ``torch.where`` of two ``new_tensor`` (a blocking copy each on a GPU)."""
    norm = torch.tensor(3.0)

    def checks():
        if not torch.isfinite(norm).all() or not torch.isfinite(norm):
            raise FloatingPointError
        torch.where(norm > 5.0, norm.new_tensor(100), norm.new_tensor(0))

    return round(timeit.timeit(checks, setup=checks, number=repeats) / repeats * 1e3, 4)  # warmed by one call


def plugin_directory(source, keep):
    """``source``: an alm_plugin directory, or a git revision of this repository whose alm_plugin is
    exported (``git archive``, read-only) into a temporary directory that ``keep`` holds."""
    if os.path.isdir(source):  # fairseq imports a plugin by its folder's name, and counts ours in alm_plugin's
        if os.path.basename(os.path.abspath(source)) != "alm_plugin":
            raise SystemExit(
                f"{source}: a plugin folder must be named alm_plugin (its reads are counted as ours by that)"
            )
        return os.path.abspath(source)
    # a revision, checked to be one before git reads it as an option ("--output=FILE" would write that file)
    found = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", "--end-of-options", f"{source}^{{commit}}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if source.startswith("-") or found.returncode != 0:
        raise SystemExit(
            f"{source}: neither a plugin folder nor a revision of this repository: give LABEL=DIR or LABEL=REVISION "
            "(a commit, branch or tag git log shows)"
        )
    into = keep.enter_context(tempfile.TemporaryDirectory())
    archive = subprocess.run(
        ["git", "archive", found.stdout.strip(), "alm_plugin"], cwd=ROOT, capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", into], input=archive.stdout, check=True)
    return os.path.join(into, "alm_plugin")


def measured_in_a_process(cases, plugin, updates, parts, where, graphs=False):
    """``measure`` of every case in a fresh process (fairseq imports a plugin once a process, so
    each plugin gets its own), with ``--cuda-graphs`` if ``graphs``: ``{case: figures}``."""
    command = [
        sys.executable,
        "-m",
        "benchmarks.host_overhead",
        "--one",
        ",".join(cases),
        "--updates",
        str(updates),
        f"--data={where['data']}",
        f"--device={where['device']}",
        f"--size={where['size']}",
        f"--num-workers={where['workers']}",
        *(["--parts"] if parts else []),
        *(["--graphs"] if graphs else []),
    ]
    proc = subprocess.run(
        command,
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1", "ALM_HOST_OVERHEAD_PLUGIN": plugin},
    )
    if proc.returncode != 0:
        raise SystemExit(f"{plugin} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def compare(plugins, cases, updates, repeats, where, save=lambda figures: None):
    """Every plugin's cases ``repeats`` times, the plugins interleaved (the machine's drifts hit all
    alike), then once with the pieces timed: ``{label: {case: figures}}``, the medians of the timed runs,
    handed to ``save`` after every run too (a run cut by a budget keeps what it measured)."""
    runs = collections.defaultdict(lambda: collections.defaultdict(list))

    def combined(results):  # the medians of the timed runs; the syncs of the last, the pieces of their run
        timed = [r for r in results if "parts_ms" not in r] or results  # --repeats 0: the pieces' run alone
        return {
            **{
                key: round(statistics.median(r[key] for r in timed), 3)
                for key in ("host_ms", "step_ms", "task_ms", "update_ms", "tokens_per_s")
            },
            **{key: results[-1][key] for key in ("syncs", "cuda_syncs", "ours", "where")},
            "parts_ms": next((r["parts_ms"] for r in results if "parts_ms" in r), None),
            "timed_runs": len(timed),
            "instrumented": len(timed) == 1 and "parts_ms" in timed[0],  # the medians from the pieces' run
            "trained": results[-1]["trained"] if len({r["trained"] for r in results}) == 1 else "differs between runs",
        }

    def figures():
        return {label: {case: combined(rs) for case, rs in by_case.items()} for label, by_case in runs.items()}

    for repeat in range(repeats + 1):
        for label, plugin in plugins.items():
            graphs = label.endswith("-graphs")  # the update replayed as a CUDA graph (sentence cases)
            for case, result in measured_in_a_process(cases, plugin, updates, repeat == repeats, where, graphs).items():
                runs[label][case].append(result)
                print(
                    f"  run {repeat + 1}: {label:8s} {case:18s} host {result['host_ms']:6.3f} ms an update, "
                    f"{result['update_ms']:.2f} ms from one to the next, {result['tokens_per_s']} tokens/s, "
                    f"{result['syncs']} syncs ({result['ours']} ours)",
                    flush=True,
                )
            save(figures())
    return figures()


def earlier_runs(parser, path):
    """The record ``path`` holds (its labels kept beside the new ones): a JSON object whose ``runs`` is an
    object; another file refused in one line."""
    try:
        with open(path, encoding="utf-8") as f:
            record = json.load(f)
    except (OSError, ValueError) as error:
        record = error
    if not isinstance(record, dict) or not isinstance(record.get("runs"), dict):
        parser.exit(
            2,
            f"{parser.prog}: error: --json {path} holds no earlier record of this script (a JSON object with "
            "'runs'), which it would extend: give a new file or one it wrote\n",
        )
    return record


def main(argv=None):
    parser = speed_parser(
        __doc__,
        device="cpu",
        data=(SAMPLE, "a binarised corpus (default: the shipped sample)"),
        size=(16, "the models' 2 x SIZE (650: the paper's)"),
        updates=(60, "updates a run (the first 5 are not timed)"),
        repeats=(
            3,
            "timed runs of each case and plugin, interleaved; medians of their medians (then one with the "
            "pieces timed; 0: that one alone, as a dry run does)",
        ),
    )
    parser.add_argument(
        "plugins",
        nargs="*",
        metavar="LABEL=SOURCE",
        help="the plugins measured side by side, each a directory or a git revision (default: after=alm_plugin)",
    )
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated, of: " + ", ".join(CASES))
    parser.add_argument("--num-workers", type=int, default=0, help="fairseq-train's data-loading processes")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # a single run, in the process compare() starts
    parser.add_argument("--parts", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--graphs", action="store_true", help=argparse.SUPPRESS)
    args = parse(parser, argv, own=lambda record: "runs" in record and "command" in record)
    if args.updates < 8:
        parser.error(f"--updates {args.updates}: at least 8 (the first 5 are not timed)")
    where = {"data": args.data, "device": args.device, "size": args.size, "workers": args.num_workers}
    if args.one:
        torch.set_num_threads(1)
        logging.disable(logging.WARNING)  # fairseq's INFO lines (and the models' one-time notes)
        plugin = os.environ.get("ALM_HOST_OVERHEAD_PLUGIN", os.path.join(ROOT, "alm_plugin"))
        extra = ["--cuda-graphs"] if args.graphs else []
        print(
            json.dumps(
                {
                    case: measure(case, args.updates, parts=args.parts, plugin=plugin, extra=extra, **where)
                    for case in args.one.split(",")
                }
            )
        )
        return
    sources = dict(p.split("=", 1) for p in args.plugins) or {"after": "alm_plugin"}
    if args.json and os.path.isfile(args.json):  # its earlier labels are kept: read before the run, not after it
        earlier_runs(parser, args.json)

    def save(figures):  # each label's figures replace that label's in the file (a cut run: those it measured)
        device = torch.cuda.get_device_name() if args.device == "cuda" else f"CPU, 1 thread ({platform.machine()})"
        # the labels measured before are kept: read back from a regular file (a stream holds nothing to read)
        result = earlier_runs(parser, args.json) if os.path.isfile(args.json) else {"runs": {}}
        complete = len(figures) == len(sources) and all(f["parts_ms"] for c in figures.values() for f in c.values())
        for label, by_case in figures.items():
            others = ", ".join(other for other in figures if other != label)
            result["runs"][label] = {
                "cases": by_case,
                "trainer_checks_ms": trainer_checks_ms(),
                "plugin": sources[label],
                "device": device + (f", side by side with {others}" if others else ""),
                "data": args.data,
                "size": args.size,
                "num_workers": args.num_workers,
                "updates": args.updates,
                "repeats": args.repeats,
                "complete": complete,
                "torch": torch.__version__,
            }
        result["command"] = "python -m benchmarks.host_overhead " + " ".join(argv or [])
        write_json(args.json, result)

    with contextlib.ExitStack() as keep:
        plugins = {label: plugin_directory(source, keep) for label, source in sources.items()}
        figures = compare(
            plugins,
            [c.strip() for c in args.cases.split(",")],
            args.updates,
            args.repeats,
            where,
            save if args.json else lambda figures: None,
        )
    for label, by_case in figures.items():
        for case, f in by_case.items():
            print(
                f"{label:8s} {case:18s} host {f['host_ms']:6.3f} ms (step {f['step_ms']:.2f}, task "
                f"{f['task_ms']:.2f}), "
                f"update {f['update_ms']:.2f} ms, {f['tokens_per_s']:.0f} tokens/s, {f['syncs']} syncs, {f['ours']} "
                f"ours{'' if f['cuda_syncs'] is None else ', %d CUDA syncs' % f['cuda_syncs']}; figures and weights "
                f"{f['trained']}"
            )
            print(
                "    " + ", ".join(f"{n} x {where}" for where, n in sorted(f["where"].items())) + "; pieces (ms, one "
                "run): " + ", ".join(f"{k} {v}" for k, v in (f["parts_ms"] or {}).items())
            )


if __name__ == "__main__":
    main(sys.argv[1:])
