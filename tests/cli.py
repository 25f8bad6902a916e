"""Run fairseq's console scripts the way a user does, from the repository root.

By default a tool runs in the test process: the same ``cli_main`` the console script calls, with
``sys.argv`` set and its log and stdout captured. That saves one fairseq import per call (about
5 s each, over 100 calls). ``ALM_TESTS_SUBPROCESS=1`` runs every call in a fresh process instead.
The plugin's ``--user-dir`` import in a fresh process stays covered by the tests that must start
processes anyway (test_multiprocess_train, test_hydra_configs, test_offline_install).
"""

import contextlib
import importlib
import io
import json
import logging
import multiprocessing
import os
import re
import subprocess
import sys

import torch
from conftest import ROOT

TRAIN_COMMON = [
    "--user-dir",
    "alm_plugin",
    "--task",
    "sentence_language_modeling",
    "--cpu",
    "--log-format",
    "json",
    "--no-progress-bar",
    "--num-workers",
    "0",
]
# the small model most trained tests share: 24 wide, one layer, our criterion, Adam at 0.01, 32 sentences a
# batch (ADAM24_MODEL), no epoch checkpoint, no validation, seed 1
ADAM24_MODEL = [
    "--embed-dim",
    "24",
    "--hidden-size",
    "24",
    "--num-layers",
    "1",
    "--criterion",
    "attention_cross_entropy",
    "--optimizer",
    "adam",
    "--lr",
    "0.01",
    "--batch-size",
    "32",
]
ADAM24 = [*ADAM24_MODEL, "--no-epoch-checkpoints", "--disable-validation", "--seed", "1"]
# the smallest model the refusal tests train: 16 wide, one layer, Adam at 0.01, nothing validated or kept per epoch
TINY = [
    *("--embed-dim", "16", "--hidden-size", "16", "--num-layers", "1"),
    *("--optimizer", "adam", "--lr", "0.01", "--batch-size", "64"),
    *("--no-epoch-checkpoints", "--disable-validation"),
]
# fairseq-eval-lm on a sentence model, scoring the valid split
EVAL = ["--user-dir", "alm_plugin", "--task", "sentence_language_modeling", "--cpu", "--gen-subset", "valid"]
IN_PROCESS = os.environ.get("ALM_TESTS_SUBPROCESS", "0") != "1"


def run(tool, *args, check=True):
    """Run a fairseq CLI entry point; returns (returncode, stdout+stderr)."""
    args = [str(a) for a in args]
    program = f"fairseq-{tool.replace('_', '-')}"  # the console script's name: fairseq-eval-lm
    if IN_PROCESS:
        main = importlib.import_module(f"fairseq_cli.{tool}").cli_main
        _reset_fairseq_globals()
        code, stdout, stderr = in_process(main, [program, *args], log_to_stdout=True)
    else:
        launch = f"import sys; from fairseq_cli.{tool} import cli_main; sys.argv[0] = '{program}'; cli_main()"
        code, stdout, stderr = _in_subprocess(["-c", launch, *args])
    output = stdout + stderr
    if check and code != 0:
        raise AssertionError(f"fairseq-{tool} failed ({code}):\n{output[-4000:]}")
    return code, output


def run_module(module, *args, stdin=None):
    """Run one of our console scripts (``python -m alm_plugin.cli.score ...``) as a user does;
    returns (returncode, stdout, stderr)."""
    args = [str(a) for a in args]
    if IN_PROCESS:
        main = importlib.import_module(module).main
        return in_process(lambda: main(args), [module, *args], stdin=stdin)
    return _in_subprocess(["-m", module, *args], stdin=stdin)


def _in_subprocess(python_args, stdin=None):
    proc = subprocess.run(
        [sys.executable, *python_args],
        cwd=ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    return proc.returncode, proc.stdout, proc.stderr


def _reset_fairseq_globals():
    """fairseq keeps a run's best validation loss on function attributes; a fresh process starts
    without them, so must each in-process run (else checkpoint_best.pt is judged against the
    previous test's model)."""
    from fairseq import checkpoint_utils
    from fairseq_cli import train

    for function, names in (
        (checkpoint_utils.save_checkpoint, ("best",)),
        (train.should_stop_early, ("best", "num_runs")),
    ):
        for name in names:
            if hasattr(function, name):
                delattr(function, name)


# Where a fresh process's log records go: fairseq's console scripts call basicConfig (INFO, to
# stdout) on import; our own scripts inherit what importing fairseq sets up (DEBUG, to stderr).
FAIRSEQ_CLI_LOG = (logging.INFO, "%(asctime)s | %(levelname)s | %(name)s | %(message)s")
FAIRSEQ_IMPORT_LOG = (logging.DEBUG, logging.BASIC_FORMAT)


def in_process(main, argv, stdin=None, log_to_stdout=False):
    """Call ``main()`` as a process would run it: from the repository root, with ``argv``, its own
    stdin, stdout and stderr, log records where a fresh process sends them, torch's default TF32
    settings (the tests' fixture turns them off), and an exit code. Whatever the run adds to any
    logger (fairseq's preprocess.log and --log-file handlers) is removed and closed after it."""
    stdout, stderr = io.StringIO(), io.StringIO()
    level, form = FAIRSEQ_CLI_LOG if log_to_stdout else FAIRSEQ_IMPORT_LOG
    handler = logging.StreamHandler(stdout if log_to_stdout else stderr)
    handler.setFormatter(logging.Formatter(form, "%Y-%m-%d %H:%M:%S"))
    loggers = [
        logging.getLogger(),
        *(logger for logger in logging.Logger.manager.loggerDict.values() if isinstance(logger, logging.Logger)),
    ]
    saved_loggers = {logger: (logger.handlers[:], logger.level, logger.disabled) for logger in loggers}
    tf32 = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    saved = sys.argv, sys.stdin, os.getcwd()
    root = logging.getLogger()
    root.handlers, sys.argv = [handler], argv
    root.setLevel(level)
    sys.stdin = io.TextIOWrapper(io.BytesIO((stdin or "").encode("utf-8")), encoding="utf-8")
    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = True, False  # torch's defaults
    code = 0
    children = set(multiprocessing.active_children())
    try:
        os.chdir(ROOT)
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            try:
                raise SystemExit(main())  # as the console script's sys.exit(main())
            except SystemExit as exit:  # argparse errors and sys.exit("message"), as a process ends
                if exit.code is not None and not isinstance(exit.code, int):
                    print(exit.code, file=stderr)
                code = exit.code if isinstance(exit.code, int) else int(exit.code is not None)
            except Exception:  # what a process prints before it exits with 1 (sys.excepthook: the
                sys.excepthook(*sys.exc_info())  # plugin's one-line refusals, else the traceback)
                code = 1
    finally:
        _end_data_loader_workers(children)
        sys.argv, sys.stdin, cwd = saved
        os.chdir(cwd)
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = tf32
        for logger in [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]:
            if not isinstance(logger, logging.Logger):
                continue
            handlers, level, disabled = saved_loggers.get(logger, ([], None, None))
            for added in set(logger.handlers) - set(handlers):
                added.close()
            logger.handlers = handlers
            if level is not None:  # a logger the run created keeps the level its module gave it
                logger.disabled = disabled
                logger.setLevel(level)  # through setLevel: it clears the loggers' cached levels
    return code, stdout.getvalue(), stderr.getvalue()


def _end_data_loader_workers(before):
    """End the worker processes the run left (fairseq's data loaders with --num-workers > 0): a
    process ends them at its exit; in this one an iterator that fairseq never exhausted keeps them
    until it is collected, during a later run, whose ``_shutdown_workers`` then waits 5 s
    (``MP_STATUS_CHECK_INTERVAL``) for a worker that does not answer."""
    for child in set(multiprocessing.active_children()) - before:
        child.terminate()
        child.join(1)


def last_line(output):
    return output.strip().splitlines()[-1]


def refused(output, tool, message):
    """The run's last line is ``tool: error: ...message...`` and no traceback came before it."""
    assert "Traceback" not in output, output[-3000:]
    assert last_line(output).startswith(f"{tool}: error: ") and message in last_line(output), output[-3000:]
    return True


def json_records(output, kind):
    """The JSON log lines of one kind (train_inner, train, valid)."""
    records = []
    for line in output.splitlines():
        match = re.search(r"\| " + kind + r" \| (\{.*\})$", line)
        if match:
            records.append(json.loads(match.group(1)))
    return records


def eval_lm_result(output):
    match = re.search(r"Loss \(base 2\): ([\d.]+), Perplexity: ([\d.]+)", output)
    assert match, output[-3000:]
    return float(match.group(1)), float(match.group(2))
