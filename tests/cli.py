"""Run fairseq's console scripts the way a user does, from the repository root.

By default a tool runs in the test process: the same ``cli_main`` the console script calls, with
``sys.argv`` set and its log and stdout captured. That saves one fairseq import per call (about
5 s each, over 100 calls). ``ALM_TESTS_SUBPROCESS=1`` runs every call in a fresh process instead.
"""
import contextlib
import importlib
import io
import json
import logging
import os
import re
import subprocess
import sys
import traceback

from conftest import ROOT

TRAIN_COMMON = ["--user-dir", "alm_plugin", "--task", "sentence_language_modeling", "--cpu",
                "--log-format", "json", "--no-progress-bar", "--num-workers", "0"]
IN_PROCESS = os.environ.get("ALM_TESTS_SUBPROCESS", "0") != "1"


def run(tool, *args, check=True):
    """Run a fairseq CLI entry point; returns (returncode, stdout+stderr)."""
    args = [str(a) for a in args]
    if IN_PROCESS:
        main = importlib.import_module(f"fairseq_cli.{tool}").cli_main
        _reset_fairseq_globals()
        code, stdout, stderr = _in_process(main, [f"fairseq-{tool}", *args], log_to_stdout=True)
    else:
        launch = f"import sys; from fairseq_cli.{tool} import cli_main; sys.argv[0] = 'fairseq-{tool}'; cli_main()"
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
        return _in_process(lambda: main(args), [module, *args], stdin=stdin)
    return _in_subprocess(["-m", module, *args], stdin=stdin)


def _in_subprocess(python_args, stdin=None):
    proc = subprocess.run([sys.executable, *python_args], cwd=ROOT, input=stdin, capture_output=True, text=True,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})
    return proc.returncode, proc.stdout, proc.stderr


def _reset_fairseq_globals():
    """fairseq keeps a run's best validation loss on function attributes; a fresh process starts
    without them, so must each in-process run (else checkpoint_best.pt is judged against the
    previous test's model)."""
    from fairseq import checkpoint_utils
    from fairseq_cli import train
    for function, names in ((checkpoint_utils.save_checkpoint, ("best",)),
                            (train.should_stop_early, ("best", "num_runs"))):
        for name in names:
            if hasattr(function, name):
                delattr(function, name)


def _in_process(main, argv, stdin=None, log_to_stdout=False):
    """Call ``main()`` as a process would run it: from the repository root, with ``argv``, its own
    stdin, stdout and stderr, log records where fairseq's console scripts send them (stdout) or
    where Python's last-resort handler does (stderr), and an exit code."""
    stdout, stderr = io.StringIO(), io.StringIO()
    handler = logging.StreamHandler(stdout if log_to_stdout else stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s | %(levelname)s | %(name)s | %(message)s",
                                           "%Y-%m-%d %H:%M:%S"))
    root = logging.getLogger()
    saved = root.handlers[:], root.level, sys.argv, sys.stdin, os.getcwd()
    root.handlers, sys.argv = [handler], argv
    root.setLevel(logging.INFO if log_to_stdout else logging.WARNING)
    sys.stdin = io.TextIOWrapper(io.BytesIO((stdin or "").encode("utf-8")), encoding="utf-8")
    code = 0
    try:
        os.chdir(ROOT)
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            try:
                main()
            except SystemExit as exit:  # argparse errors and sys.exit("message"), as a process ends
                if isinstance(exit.code, str):
                    print(exit.code, file=stderr)
                code = exit.code if isinstance(exit.code, int) else int(exit.code is not None)
            except Exception:  # what a process prints before it exits with 1
                traceback.print_exc(file=stderr)
                code = 1
    finally:
        root.handlers, level, sys.argv, sys.stdin, cwd = saved
        root.setLevel(level)  # through setLevel: it clears the loggers' cached levels
        os.chdir(cwd)
    return code, stdout.getvalue(), stderr.getvalue()


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
