"""``benchmarks/host_overhead.py``'s bookkeeping: which runs give the medians and which the
trainer's pieces, and the figures handed on after every run, so that a GPU step cut by its
budget keeps what it measured (docs/benchmarks.md, "The host's share of an update")."""

import pytest

from benchmarks import host_overhead


def test_the_benchmark_keeps_the_figures_of_a_run_its_budget_cuts(monkeypatch):
    """``benchmarks.host_overhead`` hands its figures on after every plugin's run: a GPU step's
    ``timeout`` that cuts the second run leaves the first's figures written."""
    figures = {
        "host_ms": 1.0,
        "step_ms": 2.0,
        "task_ms": 1.0,
        "update_ms": 3.0,
        "tokens_per_s": 9,
        "syncs": 8,
        "cuda_syncs": None,
        "ours": 0,
        "where": {},
        "trained": "digest",
    }
    finished = iter([{"sentence single": figures}])
    monkeypatch.setattr(host_overhead, "measured_in_a_process", lambda *args: next(finished))  # then cut
    saved = []
    with pytest.raises(StopIteration):
        host_overhead.compare({"before": "a", "after": "b"}, ["sentence single"], 10, 1, {}, saved.append)
    assert len(saved) == 1 and list(saved[0]) == ["before"]
    assert (
        saved[0]["before"]["sentence single"]["tokens_per_s"] == 9
        and saved[0]["before"]["sentence single"]["parts_ms"] is None
    )


def test_the_benchmark_takes_its_medians_from_the_timed_runs_and_the_pieces_from_their_own(monkeypatch):
    """The run with the trainer's pieces timed (its timers slow the update) gives the pieces, never
    the medians, unless it is the only run (``--repeats 0``: then the figures say so)."""
    base = {
        "step_ms": 2.0,
        "task_ms": 1.0,
        "update_ms": 3.0,
        "tokens_per_s": 9,
        "syncs": 8,
        "cuda_syncs": None,
        "ours": 0,
        "where": {},
        "trained": "digest",
    }
    runs = {False: {**base, "host_ms": 1.0}, True: {**base, "host_ms": 5.0, "parts_ms": {"clip": 0.2}}}
    monkeypatch.setattr(
        host_overhead,
        "measured_in_a_process",
        lambda cases, plugin, updates, parts, where, graphs: {"sentence single": runs[parts]},
    )
    for repeats, host_ms, instrumented in ((2, 1.0, False), (0, 5.0, True)):
        figures = host_overhead.compare({"after": "a"}, ["sentence single"], 10, repeats, {})["after"][
            "sentence single"
        ]
        assert (figures["host_ms"], figures["instrumented"], figures["parts_ms"]) == (
            host_ms,
            instrumented,
            {"clip": 0.2},
        )
        assert figures["timed_runs"] == max(repeats, 1)


def test_a_label_ending_in_graphs_trains_with_cuda_graphs(monkeypatch):
    """``after-graphs=alm_plugin`` runs the same plugin with ``--cuda-graphs``; other labels without it."""
    figures = {
        "host_ms": 1.0,
        "step_ms": 2.0,
        "task_ms": 1.0,
        "update_ms": 3.0,
        "tokens_per_s": 9,
        "syncs": 8,
        "cuda_syncs": None,
        "ours": 0,
        "where": {},
        "trained": "digest",
    }
    asked = {}

    def measured(cases, plugin, updates, parts, where, graphs):
        asked[plugin] = graphs
        return {"sentence single": figures}

    monkeypatch.setattr(host_overhead, "measured_in_a_process", measured)
    host_overhead.compare({"after": "eager", "after-graphs": "graphed"}, ["sentence single"], 10, 0, {})
    assert asked == {"eager": False, "graphed": True}


@pytest.mark.parametrize("content", ["not json", "[1, 2]", '{"command": "x"}'])
def test_a_json_it_would_extend_but_cannot_read_is_refused_before_the_run(monkeypatch, tmp_path, capsys, content):
    """`--json` naming an existing file that is no record of this script is refused before the run."""
    path = tmp_path / "timing.json"
    path.write_text(content)
    monkeypatch.setattr(host_overhead, "compare", lambda *args: pytest.fail("the run started"))
    with pytest.raises(SystemExit) as exit:
        host_overhead.main(["--json", str(path)])
    line = capsys.readouterr().err.strip()
    assert exit.value.code == 2 and "\n" not in line, line
    assert line.endswith(
        f"--json {path} holds no earlier record of this script (a JSON object with 'runs'), which "
        "it would extend: give a new file or one it wrote"
    )
    assert path.read_text() == content


@pytest.mark.parametrize("source", ["--output=README.md", "-o/tmp/x", "no-such-revision"])
def test_a_plugin_source_that_is_no_folder_nor_revision_is_refused_before_git_reads_it(source, tmp_path):
    """A source is checked to be a revision (``git rev-parse --verify``) before ``git archive`` sees it: an option
    there would write any file. Refused in one line; README.md byte for byte as it was."""
    import contextlib
    import os

    from conftest import ROOT

    from benchmarks.host_overhead import plugin_directory

    readme = os.path.join(ROOT, "README.md")
    before = open(readme, "rb").read()
    with pytest.raises(SystemExit) as exit, contextlib.ExitStack() as keep:
        plugin_directory(source, keep)
    assert str(exit.value.code).startswith(f"{source}: neither a plugin folder nor a revision of this repository")
    assert open(readme, "rb").read() == before
