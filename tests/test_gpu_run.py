"""benchmarks/gpu/run.sh, the one prepared command for a lent GPU machine: the arguments it takes
and refuses (its cli step, benchmarks/gpu/cli_check.py, and that step's dry run: test_cli_check.py)."""

import json
import os
import re
import shutil
import subprocess

import pytest
from conftest import ROOT

RUN = os.path.join(ROOT, "benchmarks", "gpu", "run.sh")


def run_sh(*args, env=None, timeout=60):
    return subprocess.run(
        ["bash", RUN, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


@pytest.mark.parametrize(
    "args, message",
    [
        (["install", "bogus"], "unknown step bogus"),
        (["--dry-run", "--fast", "cli"], "unknown option --fast"),
        (["--dry-run"], "usage: bash benchmarks/gpu/run.sh"),
    ],
)
def test_run_sh_refuses_what_it_does_not_know_before_doing_anything(tmp_path, args, message):
    proc = run_sh(*args, env={"ALM_GPU_RESULTS": str(tmp_path / "results"), "ALM_GPU_WORK": str(tmp_path / "work")})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr
    assert not os.path.exists(tmp_path / "results") and not os.path.exists(tmp_path / "work")


@pytest.mark.parametrize(
    "variable, value",
    [
        ("GPU_RUN_BUDGET", "abc"),
        ("GPU_RUN_BUDGET", "0"),
        ("GPU_RUN_BUDGET", "18446744073709551617"),  # 2^64 + 1: bash's arithmetic would read 1
        ("BUDGET_TESTS", "-5"),
        ("BUDGET_FAIRSEQ_SPEED", "1.5"),
    ],
)
def test_a_budget_that_is_no_whole_seconds_is_refused_by_its_name(tmp_path, variable, value):
    """A budget that is not a whole number of seconds is refused naming the variable it came from."""
    env = {"ALM_GPU_RESULTS": str(tmp_path / "results"), "ALM_GPU_WORK": str(tmp_path / "work"), variable: value}
    proc = run_sh("--dry-run", "tests", env=env)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith(f"run.sh: {variable}={value}: give whole seconds above 0")
    assert not os.path.exists(tmp_path / "results") and not os.path.exists(tmp_path / "work")


def test_run_sh_takes_its_paper_rows_and_their_order_from_rows_py(tmp_path):
    """The queue's order is declared once, in rows.py's PAPER_QUEUE (every paper row, once): run.sh holds no
    row list of its own, and refuses a row not in it, naming the queue's rows as rows.py gives them."""
    from benchmarks.rows import PAPER_QUEUE, PTB_PAPER

    assert sorted(PAPER_QUEUE) == sorted(PTB_PAPER.rows) and len(set(PAPER_QUEUE)) == len(PAPER_QUEUE)
    script = open(RUN).read()  # a copy of the list would name the seeded and stream rows ("lstm" also names a case)
    assert not [name for name in PTB_PAPER.rows if "-" in name and name in script]
    proc = run_sh("--dry-run", "paper", "lstm-seed9", env={"ALM_GPU_WORK": str(tmp_path / "work")})
    assert proc.returncode == 2 and f"(paper's rows: {' '.join(PAPER_QUEUE)})" in proc.stderr, proc.stderr


def test_paper_with_no_rows_named_takes_the_queues_next_rows(tmp_path):
    """The queue: rows.py's PAPER_QUEUE in order, less those whose JSON is committed or was made by an earlier
    command on this machine, PAPER_ROWS_PER_COMMAND of them; said before the step runs."""
    from benchmarks.rows import PAPER_QUEUE

    committed = {path[:-5] for path in os.listdir(os.path.join(ROOT, "benchmarks", "results", "ptb-paper"))}
    queue = [name for name in PAPER_QUEUE if name not in committed]
    made = tmp_path / "work" / "paper" / "results" / "ptb-paper-dry"
    made.mkdir(parents=True)
    (made / f"{queue[0]}.json").write_text('{"test_ppl": 80.0}')
    (made / f"{queue[1]}.json").write_text("")  # empty (a cut copy): no finished row, still in the queue
    env = {
        "ALM_GPU_RESULTS": str(tmp_path / "results"),
        "ALM_GPU_WORK": str(tmp_path / "work"),
        "GPU_RUN_BUDGET": "1",
        "PYTHON": "true",  # the queue is run.sh's own; no step runs in a budget of 1 s
    }
    proc = run_sh("--dry-run", "paper", env={**env, "PAPER_ROWS_PER_COMMAND": "3"}, timeout=90)
    assert f"the queue's next 3 (PAPER_ROWS_PER_COMMAND): {' '.join(queue[1:4])}" in proc.stdout, proc.stdout
    (tmp_path / "work" / "paper" / f"{queue[1]}.restarts").write_text("2\n")  # stopped twice: left out, said
    proc = run_sh("--dry-run", "paper", env={**env, "PAPER_ROWS_PER_COMMAND": "3"}, timeout=90)
    assert f"paper: {queue[1]} stopped twice without its JSON" in proc.stdout
    assert f"the queue's next 3 (PAPER_ROWS_PER_COMMAND): {' '.join(queue[2:5])}" in proc.stdout, proc.stdout
    for name in queue:
        (made / f"{name}.json").write_text('{"test_ppl": 80.0}')
    done = run_sh("--dry-run", "paper", env=env)
    assert done.returncode == 0 and "every row of the queue has its JSON: nothing to train" in done.stdout
    assert "=== paper" not in done.stdout
    refused = run_sh("--dry-run", "paper", env={**env, "PAPER_ROWS_PER_COMMAND": "0"})
    assert refused.returncode == 2 and "PAPER_ROWS_PER_COMMAND=0 is not a whole number of rows" in refused.stderr


def test_the_report_plans_as_many_rows_a_command_as_run_sh_trains():
    from benchmarks.report import ptb_paper

    default = re.search(r"^PAPER_ROWS_PER_COMMAND=\$\{PAPER_ROWS_PER_COMMAND:-(\d+)\}$", open(RUN).read(), re.M)
    assert int(default.group(1)) == ptb_paper.ROWS_A_COMMAND


def test_the_dry_run_derives_every_paper_row_reading_as_it_reads():
    """run.sh --dry-run paper trains each paper row at 2 x 32 on the sample: every row, its reading (streams
    as streams), its own arguments after the recipe kept (the pointer's), no _ptb architecture."""
    from benchmarks.rows import PTB_PAPER, PTB_PAPER_DRY

    assert list(PTB_PAPER_DRY.rows) == list(PTB_PAPER.rows)
    for name, row in PTB_PAPER_DRY.rows.items():
        assert row.reading == PTB_PAPER.rows[name].reading and row.seed == PTB_PAPER.rows[name].seed
        assert not any(a.endswith("_ptb") for a in row.args) and row.args[-2:] == ("5", "--sentence-avg")
    assert {"--pointer-loss", "--sentinel-scale"} <= set(PTB_PAPER_DRY.rows["ps-lstm-stream"].args)
    assert PTB_PAPER_DRY.rows["single-stream"].reading == "stream"


def test_run_sh_help_names_the_steps_and_the_carry_list():
    proc = run_sh("--help")
    assert proc.returncode == 0
    for text in (
        "install",
        "tests",
        "cli",
        "speed",
        '[".whl", ".gpu-data", ".gpu-plugins"]',
        "bash benchmarks/gpu/run.sh install tests cli speed",
        "--dry-run",
    ):
        assert text in proc.stdout


def test_dry_run_of_the_paper_step_resumes_across_commands(tmp_path):
    """run.sh paper, as a GPU session runs it, on the CPU (--dry-run: a 2 x 32 row on the shipped
    sample, 2 epochs, ~2 min): a first command whose budget ends mid-training says which row still
    runs and how far it got, exits 3 and leaves the row training detached; the same command again
    finds it, waits, and returns its JSON: valid/test ppl and paper_ppl, the valid curve, the cache,
    dynamic evaluation and both chosen on valid, the device."""
    env = {"ALM_GPU_RESULTS": str(tmp_path / "results"), "ALM_GPU_WORK": str(tmp_path / "work")}
    try:
        # a budget that ends the step once the row trains (its train.log begun), before it is scored
        first = run_sh("--dry-run", "paper", "lstm", env={**env, "GPU_RUN_BUDGET": "50"}, timeout=180)
        assert first.returncode == 3, first.stdout + first.stderr
        assert "paper: lstm started" in first.stdout
        assert re.search(
            r"still running: lstm (epoch [01]/2|trained, scoring).*: run the same command again", first.stdout
        ), first.stdout
        progress = json.loads((tmp_path / "results" / "paper_progress.json").read_text())
        assert progress["lstm"]["state"] in ("training", "scoring") and progress["lstm"]["epochs"] == 2
        second = run_sh("--dry-run", "paper", "lstm", env={**env, "GPU_RUN_BUDGET": "540"}, timeout=600)
        assert second.returncode == 0, second.stdout + second.stderr
        assert "paper: lstm still running (started by an earlier command)" in second.stdout
        # a device call copies the working tree afresh before each command, removing the results a
        # command left there: the row finished is still found (its JSON lives under the work folder)
        shutil.rmtree(tmp_path / "results")
        third = run_sh("--dry-run", "paper", "lstm", env={**env, "GPU_RUN_BUDGET": "60"}, timeout=180)
        assert third.returncode == 0 and "paper: lstm done already" in third.stdout, third.stdout + third.stderr
    finally:  # a failed run leaves no row training behind
        pid_file = tmp_path / "work" / "paper" / "lstm.pid"
        if pid_file.exists():
            subprocess.run(["kill", "--", f"-{pid_file.read_text().strip()}"], capture_output=True)
    row = json.loads((tmp_path / "work" / "paper" / "results" / "ptb-paper-dry" / "lstm.json").read_text())
    assert row == json.loads((tmp_path / "results" / "lstm.json").read_text())  # the copy that comes back
    assert row["device"] == "cpu" and row["epochs"] == 2 and "cut_at_epoch" not in row
    assert len(row["valid_ppl_per_epoch"]) == 2 and row["valid_ppl_per_epoch"][1] < row["valid_ppl_per_epoch"][0]
    for key in (
        "valid_ppl",
        "test_ppl",
        "valid_paper_ppl",
        "test_paper_ppl",
        "valid_ppl_cache",
        "test_ppl_cache",
        "valid_ppl_dynamic",
        "test_ppl_dynamic",
        "valid_ppl_cache_dynamic",
        "test_ppl_cache_dynamic",
    ):
        assert 1 < row[key] < 6000, key
    assert row["cache"]["chosen_on"] == row["dynamic"]["chosen_on"] == row["both"]["chosen_on"] == "valid"
    assert row["test_ppl_cache_dynamic"] < row["test_ppl"]  # the test-time options help this tiny model


def test_a_paper_row_that_stopped_without_its_json_is_started_again(tmp_path):
    """A row whose process ended without its JSON (a fault, a kill) is started again by the next
    command, resuming its checkpoint (twice at most), not reported as stopped for every command after."""
    env = {
        "ALM_GPU_RESULTS": str(tmp_path / "results"),
        "ALM_GPU_WORK": str(tmp_path / "work"),
        "GPU_RUN_BUDGET": "90",
        "BUDGET_PAPER": "12",  # the step ends at once: the row, started again, still trains
    }
    (tmp_path / "work" / "paper").mkdir(parents=True)
    (tmp_path / "work" / "paper" / "lstm.pid").write_text("999999999\n")  # no such process
    try:
        proc = run_sh("--dry-run", "paper", "lstm", env=env, timeout=180)
        assert proc.returncode == 3, proc.stdout + proc.stderr
        assert "paper: lstm had stopped without its JSON" in proc.stdout and "started again" in proc.stdout
        assert re.search(r"still running: lstm", proc.stdout), proc.stdout
    finally:
        pid = (tmp_path / "work" / "paper" / "lstm.pid").read_text().strip()
        subprocess.run(["kill", "--", f"-{pid}"], capture_output=True)
    # one that keeps dying is started again twice, then reported (a fault that a restart will not mend)
    (tmp_path / "work" / "paper" / "lstm.restarts").write_text("2\n")  # run.sh's own decision: no Python runs
    proc = run_sh("--dry-run", "paper", "lstm", env={**env, "PYTHON": "true"}, timeout=90)
    assert proc.returncode == 1 and "paper: lstm stopped without its JSON again" in proc.stdout, proc.stdout


def test_dry_run_of_the_timing_step_times_each_lever_and_keeps_the_figures(tmp_path):
    """run.sh timing, on the CPU (--dry-run: 2 x 8 single on the shipped sample, 8 updates a run):
    fairseq-train's update timed with the host levers off (the plugins run.sh's TIMING_PLUGINS names, from
    .gpu-plugins/ or this repository's history) and on (this tree), and with --num-workers 0 / 2;
    every run logs the same figures and ends with the same weights, and only the plugin before the
    sync fix reads device values of its own."""
    env = {
        "ALM_GPU_RESULTS": str(tmp_path / "results"),
        "ALM_GPU_WORK": str(tmp_path / "work"),
        "BUDGET_TIMING": "600",  # five fairseq processes: room for a loaded machine
    }
    proc = run_sh("--dry-run", "timing", env=env, timeout=700)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    runs = json.loads((tmp_path / "results" / "update_timing.json").read_text())["runs"]
    assert set(runs) == {"before", "no-syncs", "after", "after-workers-0", "after-workers-2"}
    assert {runs[label]["num_workers"] for label in runs} == {0, 1, 2}
    figures = [run["cases"]["sentence single"] for run in runs.values()]
    assert len({f["trained"] for f in figures}) == 1  # the levers leave every figure and weight as it was
    assert all(f["update_ms"] > 0 and f["tokens_per_s"] > 0 and f["cuda_syncs"] is None for f in figures)
    assert runs["before"]["cases"]["sentence single"]["ours"] > 0 == runs["after"]["cases"]["sentence single"]["ours"]


def test_the_paper_steps_record_holds_the_rows_epoch_seconds_and_the_gpus_busy_share(tmp_path):
    from benchmarks.gpu import paper_record

    progress = {"lstm": {"state": "done", "epochs_done": 20, "seconds_per_epoch": 17.2}}
    record = paper_record.record(progress, ["lstm", "single"], ["90", "100", "", "[N/A]"])
    assert record["rows_side_by_side"] == 2 and record["gpu_busy_percent"] == 95.0
    assert record["rows"]["lstm"]["seconds_per_epoch"] == 17.2 and record["rows"]["single"]["state"] is None
    assert paper_record.record(progress, ["lstm"], [])["gpu_busy_percent"] is None


def test_a_planted_restarts_file_is_read_as_a_count_never_run(tmp_path):
    """run.sh reads a row's .restarts as digits: `PPID[$(cmd)]` there runs nothing."""
    from benchmarks.rows import PAPER_QUEUE

    committed = {path[:-5] for path in os.listdir(os.path.join(ROOT, "benchmarks", "results", "ptb-paper"))}
    row = next(name for name in PAPER_QUEUE if name not in committed)
    work = tmp_path / "work"
    (work / "paper").mkdir(parents=True)
    marker = tmp_path / "code-ran"
    (work / "paper" / f"{row}.restarts").write_text(f"PPID[$(touch {marker})]\n")
    env = {
        "ALM_GPU_RESULTS": str(tmp_path / "results"),
        "ALM_GPU_WORK": str(work),
        "GPU_RUN_BUDGET": "1",
        "PYTHON": "true",
    }
    proc = run_sh("--dry-run", "paper", env={**env, "PAPER_ROWS_PER_COMMAND": "1"})
    assert f"the queue's next 1 (PAPER_ROWS_PER_COMMAND): {row}" in proc.stdout, proc.stdout + proc.stderr
    assert not marker.exists()


def refused_before_anything(proc, message, *untouched):
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stdout == "" and proc.stderr.strip().splitlines() == [proc.stderr.strip()] and message in proc.stderr
    for path in untouched:
        assert not os.path.exists(path), path


@pytest.mark.parametrize("how", ["writable by others", "a link", "a file"])
def test_a_work_folder_others_could_plant_files_in_is_refused(tmp_path, how):
    """A work folder that is not the user's own, or that others can write to, is never read: a planted row's
    figures never reach the results."""
    work = tmp_path / "work"
    if how == "writable by others":
        work.mkdir()
        work.chmod(0o777)
    elif how == "a link":
        (tmp_path / "elsewhere").mkdir()
        work.symlink_to(tmp_path / "elsewhere")
    else:
        work.write_text("")
    proc = run_sh("--dry-run", "install", env={"ALM_GPU_RESULTS": str(tmp_path / "results"), "ALM_GPU_WORK": str(work)})
    refused_before_anything(proc, f"ALM_GPU_WORK={work} is not a folder of yours that only you can write to")
    assert not (tmp_path / "results").exists()


def test_the_work_folder_is_made_fresh_and_recorded_for_the_next_command(tmp_path):
    """No ALM_GPU_WORK: the first command makes one (mktemp -d) and records it; the next reuses it; a recorded
    folder others can write to is not used."""
    env = {
        "HOME": str(tmp_path / "home"),
        "TMPDIR": str(tmp_path),
        "GPU_RUN_BUDGET": "1",
        "XDG_STATE_HOME": "",
        "PYTHON": "true",
    }
    first = run_sh("--dry-run", "install", env=env)
    work = re.search(r"logs in (\S+)/logs", first.stdout).group(1)
    assert os.path.dirname(work) == str(tmp_path) and os.stat(work).st_mode & 0o077 == 0
    assert (tmp_path / "home" / ".local" / "state" / "alm_gpu" / "work-dry").read_text().strip() == work
    second = run_sh("--dry-run", "install", env=env)
    assert f"logs in {work}/logs" in second.stdout
    os.chmod(work, 0o777)
    third = run_sh("--dry-run", "install", env=env)
    assert f"logs in {work}/logs" not in third.stdout and "logs in " in third.stdout


@pytest.mark.parametrize(
    "args, results, message",
    [
        (["--dry-run", "install"], "a file", "ALM_GPU_RESULTS={results} is not a folder: give a folder"),
        (["--dry-run", "install"], "read-only", "ALM_GPU_RESULTS={results} takes no new file (read-only?)"),
        (["--dry-run", "paper", "lstm"], "committed", "is inside benchmarks/results, the committed results"),
        (["--dry-run", "paper", "lstm single"], "fresh", "unknown step lstm single:"),
        (["--dry-run", "paper", "lstm-matched", "lstm-matched"], "fresh", "paper: lstm-matched named twice"),
    ],
)
def test_a_results_folder_or_row_that_would_lose_or_muddle_results_is_refused(tmp_path, args, results, message):
    """ALM_GPU_RESULTS must be a folder that takes files, never benchmarks/results in a dry run; 'lstm single'
    and a row named twice are refused before any step."""
    committed = os.path.join(ROOT, "benchmarks", "results", "ptb-paper")
    folder = {"a file": str(tmp_path / "results.txt"), "committed": committed, "read-only": "/proc/1"}.get(
        results, str(tmp_path / "res")
    )  # /proc/1: a folder that takes no file, whoever runs the test
    if results == "a file":
        open(folder, "w").close()
    before = sorted(os.listdir(committed))
    proc = run_sh(*args, env={"ALM_GPU_RESULTS": folder, "ALM_GPU_WORK": str(tmp_path / "work")})
    refused_before_anything(proc, message.format(results=folder), tmp_path / "work", tmp_path / "res")
    assert sorted(os.listdir(committed)) == before


@pytest.mark.parametrize("kind, says", [("folder", "Is a directory"), ("utf-16", "not UTF-8 text")])
def test_the_paper_record_refuses_a_busy_file_it_cannot_read_in_one_line(tmp_path, capsys, kind, says):
    """A folder or a UTF-16 file as --busy ends paper_record.py in one line; nothing is written."""
    from benchmarks.gpu import paper_record

    progress, busy = tmp_path / "paper_progress.json", tmp_path / "gpu_busy.txt"
    progress.write_text('{"lstm": {"state": "done"}}')
    busy.mkdir() if kind == "folder" else busy.write_text("90\n100\n", encoding="utf-16")
    argv = ["--progress", str(progress), "--busy", str(busy), "--rows", "lstm", "--json", str(tmp_path / "step.json")]
    with pytest.raises(SystemExit) as exit:
        paper_record.main(argv)
    line = capsys.readouterr().err.strip()
    assert exit.value.code == 2 and f": error: --busy {busy} cannot be read ({says})" in line and "\n" not in line
    assert not (tmp_path / "step.json").exists()


@pytest.mark.parametrize(
    "content, says",
    [
        (None, "cannot be read (No such file or directory)"),
        ('{"lstm": ', "is not JSON ("),
        ("[1, 2]", "is not an object of one object a row"),
        ('{"lstm": 3}', "is not an object of one object a row"),
    ],
)
def test_the_paper_record_refuses_a_progress_file_it_cannot_read_in_one_line(tmp_path, capsys, content, says):
    """A truncated, missing or non-object progress file ends paper_record.py in one line."""
    from benchmarks.gpu import paper_record

    progress = tmp_path / "paper_progress.json"
    if content is not None:
        progress.write_text(content)
    with pytest.raises(SystemExit) as exit:
        paper_record.main(["--progress", str(progress), "--rows", "lstm", "--json", str(tmp_path / "step.json")])
    line = capsys.readouterr().err.strip()
    assert exit.value.code == 2 and f": error: --progress {progress} {says}" in line and "\n" not in line, line
    assert line.endswith(": give table.py's --progress file")
    assert not (tmp_path / "step.json").exists()
