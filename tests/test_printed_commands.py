"""A command a tool prints for the user to run (alm-cache-grid's `use:` line) runs as printed from
any directory: the data, the checkpoint and the plugin (--user-dir) by absolute path, quoted for
the shell (a relative `--user-dir alm_plugin` run elsewhere fails: `FileNotFoundError: <cwd>/alm_plugin`)."""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys

import cli
import pytest
from cli import eval_lm_result, run_module
from conftest import ROOT


def printed_command(stdout):
    return shlex.split(re.search(r"^use: (.*)$", stdout, re.M).group(1))


@pytest.mark.parametrize("model", ["tiny_attentive", "tiny_pointer"])
def test_the_printed_eval_lm_command_runs_as_printed_from_another_directory(request, tmp_path, model):
    checkpoint, data = request.getfixturevalue(model)
    # the tool given relative paths (it runs from the repository root), a folder with a space for the output
    relative = [os.path.relpath(checkpoint, ROOT), os.path.relpath(data, ROOT)]
    out = tmp_path / "a folder" / "grid.json"
    out.parent.mkdir()
    code, stdout, stderr = run_module(
        "alm_plugin.cli.cache_grid",
        "--path",
        relative[0],
        "--data",
        relative[1],
        "--windows",
        "10",
        "--thetas",
        "0.3",
        "--lambdas",
        "0.1",
        "--json",
        out,
        "--cpu",
    )
    assert code == 0, stderr
    command = printed_command(stdout)
    assert command[0] == "fairseq-eval-lm" and command[1] == str(data)
    assert command[command.index("--user-dir") + 1] == os.path.join(ROOT, "alm_plugin")
    assert command[command.index("--path") + 1] == str(checkpoint)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code, output = run_from(elsewhere, [*command, "--cpu"])
    assert code == 0, output[-3000:]
    chosen = json.loads(out.read_text())
    assert eval_lm_result(output)[1] == pytest.approx(chosen["ppl_with_cache"], rel=2e-3)
    assert os.listdir(elsewhere) == []  # nothing written where it ran


def run_from(directory, command):
    """(returncode, stdout + stderr) of ``command`` (fairseq-eval-lm and its arguments) run from
    ``directory``: its cli_main in this process, with that working directory (a fresh process
    with ALM_TESTS_SUBPROCESS=1: the console script, as a shell runs it)."""
    if cli.IN_PROCESS:
        from fairseq_cli.eval_lm import cli_main

        def main_there():
            os.chdir(directory)  # the run's own directory; the caller's is restored after it
            return cli_main()

        code, stdout, stderr = cli.in_process(main_there, command, log_to_stdout=True)
        return code, stdout + stderr
    program = shutil.which(command[0])
    launch = (
        [program]
        if program
        else [
            sys.executable,
            "-c",
            "import sys; from fairseq_cli.eval_lm import cli_main; sys.argv[0] = 'fairseq-eval-lm'; cli_main()",
        ]
    )
    proc = subprocess.run([*launch, *command[1:]], cwd=directory, capture_output=True, text=True, timeout=300)
    return proc.returncode, proc.stdout + proc.stderr


def test_the_command_quotes_a_path_the_shell_would_split(tmp_path, monkeypatch):
    import alm_plugin.cli.cache_grid as grid

    class Task:  # the options a legacy task keeps in task.args
        cfg = None

        class args:
            data = str(tmp_path / "my data")

    monkeypatch.setattr(grid, "_task_name", lambda task: "sentence_language_modeling")
    line = grid.eval_lm_command(Task(), str(tmp_path / "a model.pt"), "--neural-cache-window 10")
    words = shlex.split(line)
    assert words[1] == str(tmp_path / "my data") and words[words.index("--path") + 1] == str(tmp_path / "a model.pt")
