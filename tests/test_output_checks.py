"""The one writer every file of the project goes through (alm_plugin/cli/output_files.py) and its checks,
fast: no model is trained. Before the run an output is refused in one line (an empty name, a folder's
name, a folder that takes no file, a checkpoint beside the model read, a file of the data directory);
while writing it keeps the mode of the file it replaces, writes a stream (a FIFO, /dev/fd/N) as a
stream, and an error is one line with the old file whole. The benchmark scripts' --json and
benchmarks/table.py's progress file go through the same writer and the same check."""

import hashlib
import importlib
import json
import os
import re
import resource
import shutil
import stat
import subprocess
import sys
import threading

import pytest
from cli import in_process, refused, run_module
from conftest import ROOT, SAMPLE_DATA

from alm_plugin.cli.output_files import check_outputs, output_file, write_json, write_text
from alm_plugin.errors import ScoringError


def sha(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


# ---------------------------------------------------------------- the writer


def test_rewriting_an_output_keeps_its_mode(tmp_path):
    out = tmp_path / "grid.json"
    out.write_text("{}")
    os.chmod(out, 0o600)
    write_json(out, {"ppl": 2.0})
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600 and json.loads(out.read_text()) == {"ppl": 2.0}


def test_a_fifo_is_written_as_a_stream_and_stays_a_fifo(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, encoding="utf-8").read()), daemon=True)
    reader.start()
    write_json(fifo, {"ppl": 2.0})
    reader.join(10)
    assert got and json.loads(got[0]) == {"ppl": 2.0} and stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(os.listdir(tmp_path)) == ["pipe"]


def test_a_descriptor_name_is_written_through_the_descriptor(tmp_path):
    """`--json /dev/fd/N` (bash's >(cmd)) and a link to it: the pipe gets the record, no file is made."""
    read, write = os.pipe()
    try:
        link = tmp_path / "out.json"
        link.symlink_to(f"/proc/self/fd/{write}")
        for name in (f"/dev/fd/{write}", str(link)):
            check_outputs({"--json": name}, {})
            write_text(name, "record\n")
        os.close(write)
        write = None
        assert os.read(read, 1000) == b"record\nrecord\n"
        assert link.is_symlink() and sorted(os.listdir(tmp_path)) == ["out.json"]
    finally:
        os.close(read)
        if write is not None:
            os.close(write)


def test_a_descriptor_that_is_not_open_is_refused_before_the_run():
    read, write = os.pipe()
    os.close(read)
    os.close(write)
    with pytest.raises(ScoringError, match=f"--json /dev/fd/{write}: descriptor {write} is not open"):
        check_outputs({"--json": f"/dev/fd/{write}"}, {})


def test_a_failed_write_is_one_line_and_keeps_the_old_file(tmp_path):
    """A file-size limit (ulimit -f: what a full disk does to a write; Python ignores SIGXFSZ, so the
    write fails with EFBIG) set on this process for the one write."""
    out = tmp_path / "big.json"
    out.write_text("old")
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1000, hard))
    try:
        with pytest.raises(ScoringError) as error:
            write_text(out, "x" * 100000)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert str(error.value) == (
        f"writing {out} failed ([Errno 27] File too large): {out} keeps its old content; "
        "free space (or raise ulimit -f) or give another path"
    )
    assert out.read_text() == "old" and sorted(os.listdir(tmp_path)) == ["big.json"]


def test_an_error_in_the_body_leaves_no_temporary_file(tmp_path):
    out = tmp_path / "x.txt"
    with pytest.raises(ValueError):
        with output_file(out) as handle:
            handle.write("half")
            raise ValueError("the run failed")
    assert os.listdir(tmp_path) == []


# ---------------------------------------------------------------- the check before the run


@pytest.mark.parametrize(
    "name, says",
    [
        ("", "--json '': an empty file name; give the file to write"),
        ("newdir/", "--json newdir/ ends in '/', a folder's name: give a file name"),
        ("{tmp}", "--json {tmp} is a directory: give a file name"),
        ("{tmp}/no/such/x.json", "--json {tmp}/no/such/x.json: the folder {tmp}/no/such does not exist"),
    ],
)
def test_an_output_that_cannot_be_a_file_is_refused_before_the_run(tmp_path, name, says):
    name, says = name.format(tmp=tmp_path), says.format(tmp=tmp_path)
    with pytest.raises(ScoringError) as error:
        check_outputs({"--json": name}, {})
    assert says in str(error.value) and "\n" not in str(error.value)


def test_a_folder_that_takes_no_new_file_is_refused_even_where_access_says_yes(tmp_path, monkeypatch):
    """Root passes os.access on a read-only folder: the check makes a file there."""
    monkeypatch.setattr(os, "access", lambda *a, **k: True)
    folder = tmp_path / "ro"
    folder.mkdir()

    def fail(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("tempfile.mkstemp", fail)
    with pytest.raises(ScoringError, match=r"a new file in .*ro fails \(Permission denied\)"):
        check_outputs({"--json": str(folder / "x.json")}, {})


def model_folder(tmp_path):
    """A model's folder: the checkpoint read and the one a resume needs (bytes only: never loaded)."""
    folder = tmp_path / "ck"
    folder.mkdir()
    for name in ("checkpoint_best.pt", "checkpoint_last.pt", "checkpoint3.pt"):
        (folder / name).write_bytes(b"PK\x03\x04 a checkpoint " + name.encode())
    return folder


@pytest.mark.parametrize(
    "module, prog, option, extra",
    [
        ("alm_plugin.cli.cache_grid", "alm-cache-grid", "--json", []),
        ("alm_plugin.cli.cache_posterior", "alm-cache-posterior", "--json", []),
        ("alm_plugin.cli.cache_posterior", "alm-cache-posterior", "--plot", []),
        ("alm_plugin.cli.plot_attention", "alm-plot-attention", "--out", ["the cat"]),
    ],
)
def test_a_checkpoint_beside_the_model_read_is_refused_as_an_output(tmp_path, module, prog, option, extra):
    """`alm-cache-grid --json` onto a checkpoint beside the one it reads (the one a resume reads) is refused."""
    folder = model_folder(tmp_path)
    before = {name: sha(folder / name) for name in os.listdir(folder)}
    link = tmp_path / "out.png"
    link.symlink_to(folder / "checkpoint3.pt")
    for output, target in ((folder / "checkpoint_last.pt", "checkpoint_last.pt"), (link, "checkpoint3.pt")):
        code, _, stderr = run_module(module, "--path", folder / "checkpoint_best.pt", option, output, *extra)
        assert code == 1 and refused(stderr, prog, f"{option} {output} is {folder / target}"), stderr
        assert f"a checkpoint beside --path {folder / 'checkpoint_best.pt'}" in stderr
    assert {name: sha(folder / name) for name in os.listdir(folder)} == before


def test_a_checkpoint_name_not_yet_there_beside_the_model_is_refused_too(tmp_path):
    """fairseq-train resumes from checkpoint_last.pt: a record written under that name would be read as one."""
    folder = model_folder(tmp_path)
    os.unlink(folder / "checkpoint_last.pt")
    with pytest.raises(ScoringError) as error:
        check_outputs({"--json": str(folder / "checkpoint_last.pt")}, {"--path": [str(folder / "checkpoint_best.pt")]})
    assert str(error.value) == (
        f"--json {folder / 'checkpoint_last.pt'} is a checkpoint's name beside --path "
        f"{folder / 'checkpoint_best.pt'} (a resume would read it): give another path"
    )
    check_outputs({"--json": str(folder / "grid.json")}, {"--path": [str(folder / "checkpoint_best.pt")]})


@pytest.mark.parametrize(
    "module, prog, option, extra",
    [
        ("alm_plugin.cli.cache_grid", "alm-cache-grid", "--json", []),
        ("alm_plugin.cli.plot_attention", "alm-plot-attention", "--out", ["the cat"]),
        ("alm_plugin.cli.rescore", "alm-rescore", "--output-1best", None),
        ("alm_plugin.cli.rescore", "alm-rescore", "--output-nbest", None),
    ],
)
@pytest.mark.parametrize("name", ["", "newdir/"])
def test_an_empty_or_folder_output_name_is_refused_before_the_model_loads(tmp_path, module, prog, option, extra, name):
    """An empty output name, or one naming a folder, is refused before any work: nothing is written, no hidden
    file made."""
    checkpoint = tmp_path / "never-loaded.pt"
    if extra is None:
        (tmp_path / "in.nbest").write_text("H-0\t-1.5\tthe cat\n", encoding="utf-8")
        arguments = ["--nbest", tmp_path / "in.nbest", "--lm", checkpoint, option, name]
    else:
        arguments = ["--path", checkpoint, option, name, *extra]
    code, _, stderr = run_module(module, *arguments)
    says = "an empty file name" if not name else "a folder's name"
    assert code == 1 and refused(stderr, prog, f"{option} {name or repr('')}"), stderr
    assert says in stderr and not os.path.exists(os.path.join(ROOT, ".png"))


def test_alm_score_with_stdin_or_stdout_closed_says_so_in_one_line(tmp_path):
    """A closed stdin or stdout is said in one line, not an AttributeError's traceback."""
    for redirect, says in (
        ("<&-", "stdin is closed: give the text file(s) to score, or pipe the text in"),
        (">&-", "stdout is closed, and the scores are written there: send it to a file (> scores.tsv)"),
    ):
        proc = subprocess.run(
            ["bash", "-c", f"{sys.executable} -m alm_plugin.cli.score --path {tmp_path / 'never.pt'} {redirect}"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 1 and proc.stderr.strip().splitlines()[-1] == f"alm-score: error: {says}"
        assert "Traceback" not in proc.stderr


# ---------------------------------------------------------------- the benchmarks' JSON


def test_a_benchmark_json_on_its_data_is_refused_before_the_run(tmp_path):
    """A benchmark's --json onto a file of the split it reads is refused before the run, the split left as it is."""
    from benchmarks import stream_speed

    data = tmp_path / "data"
    shutil.copytree(SAMPLE_DATA, data)
    before = sha(data / "valid.bin")
    script = os.path.join(ROOT, "benchmarks", "stream_speed.py")  # sys.argv[0] under python -m benchmarks.stream_speed
    code, _, stderr = in_process(stream_speed.main, [script, "--data", str(data), "--json", str(data / "valid.bin")])
    assert code == 2 and "Traceback" not in stderr, stderr
    assert re.fullmatch(
        rf"stream_speed\.py: error: --json {re.escape(str(data / 'valid.bin'))} is a file of the data directory .*"
        "give another path",
        stderr.strip(),
    ), stderr
    assert sha(data / "valid.bin") == before


def test_the_results_json_ignores_a_link_planted_at_the_old_temporary_name(tmp_path, capsys):
    """A link planted at ``<json>.tmp`` is left alone: the JSON goes to its own file, not into the file the link
    names."""
    from benchmarks.result_files import write_json as write_result

    victim = tmp_path / "checkpoint_last.pt"
    victim.write_bytes(b"a checkpoint")
    out = tmp_path / "row.json"
    (tmp_path / "row.json.tmp").symlink_to(victim)
    write_result(str(out), {"valid_ppl": 100.0})
    assert victim.read_bytes() == b"a checkpoint" and json.loads(out.read_text()) == {"valid_ppl": 100.0}
    assert capsys.readouterr().out == f"wrote {out}\n"


def test_the_results_json_failing_to_write_ends_in_one_line(tmp_path, monkeypatch):
    from benchmarks.result_files import write_json as write_result

    monkeypatch.setattr(sys, "argv", ["table.py"])
    with pytest.raises(SystemExit) as exit:
        write_result(str(tmp_path / "gone" / "row.json"), {})
    assert str(exit.value.code).startswith(f"table.py: error: writing {tmp_path / 'gone' / 'row.json'} failed (")


# ---------------------------------------------------------------- the writes that do not go through the writer

WRITES = re.compile(
    r"""\bopen\(.*?,\s*(["'][rbt]*[wxa+][bt+]*["']|mode\b)|\.savefig\(|\bjson\.dump\(|\.write_(text|bytes)\("""
    r"""|\bos\.(replace|rename)\("""
    r"""|\bshutil\.(copy\w*|move)\(|\btorch\.save\(|\bnp\.save\w*\("""
)
NOT_THROUGH_THE_WRITER = {  # (file, the line) -> why it writes on its own
    ("benchmarks/eval_speed.py", 'with open("/proc/self/clear_refs", "w") as f:'): "a /proc file, not a file",
    ("benchmarks/gpu/cli_check.py", 'with open(f"{job.log}.out", "w") as out, open(f"{job.log}.err", "w") as err:'): (
        "a process's logs, written as it runs"
    ),
    ("benchmarks/fairseq_runs.py", "with open(log, mode) as f:"): "a run's log, appended as it runs (resumed runs)",
    ("benchmarks/translation.py", 'open(os.path.join(save, UNDER_WAY), "w").close()'): (
        "an empty marker in the language model's own folder, removed once its record is written"
    ),
    ("benchmarks/translation.py", 'with open(os.path.join(folder, STARTS), "a") as f:'): (
        "a row's own record of its starts in its model folder, appended once per run"
    ),
    ("benchmarks/gpu/slim_wheel.py", 'os.replace(f"{path}.tmp", path)  # whole or not at all'): (
        "run before the plugin's dependencies are installed (alm_plugin cannot be imported)"
    ),
    ("benchmarks/table.py", "os.replace(save, aside)"): "a checkpoint folder moved aside, not written",
    ("alm_plugin/cli/tool.py", 'sys.stderr = open(os.devnull, "w", encoding="utf-8")'): (
        "a tool started with stderr closed holds /dev/null there, so nothing lands in its output"
    ),
    ("benchmarks/report/ptb_table.py", "fig.savefig(path, dpi=110)"): "tables.figure's savefig: save_figure",
    ("benchmarks/report/ptb_stream.py", "fig.savefig(path, dpi=110)"): "tables.figure's savefig: save_figure",
    ("benchmarks/report/tables.py", "return super().savefig(fname, **options)  # the open file save_figure gives"): (
        "matplotlib writing into the temporary file save_figure opened"
    ),
    ("examples/language_model/prepare_lm_data.py", 'with open(path, "w", encoding="utf-8") as out:'): (
        "a corpus staged in a fresh folder, renamed whole (standalone: no plugin import)"
    ),
    (
        "examples/language_model/prepare_lm_data.py",
        'with open(os.path.join(new_text, f"{split}.txt"), "w", encoding="utf-8") as out:',
    ): "a corpus staged in a fresh folder, renamed whole",
    ("examples/language_model/prepare_lm_data.py", "os.rename(destination, old)"): "the staged corpus swapped in",
    ("examples/language_model/prepare_lm_data.py", "os.rename(new, destination)"): "the staged corpus swapped in",
    ("examples/language_model/prepare_lm_data.py", "os.rename(old, destination)"): "the old corpus put back",
    ("examples/translation/prepare_multi30k.py", 'with open(path, "w", encoding="utf-8") as f:'): (
        "data preparation into a fresh corpus folder (standalone)"
    ),
    (
        "examples/translation/prepare_multi30k.py",
        'with open(joint, encoding="utf-8") as infile, open(codes, "w", encoding="utf-8") as outfile:',
    ): "data preparation into a fresh corpus folder (standalone)",
    (
        "examples/translation/prepare_multi30k.py",
        'shutil.copyfile(target_dict, os.path.join(args.destdir, "dict.txt"))',
    ): "data preparation into a fresh corpus folder (standalone)",
    ("benchmarks/report/translation_pairs.py", "fig.savefig(path, dpi=110)"): "tables.figure's savefig: save_figure",
    **{
        ("examples/translation/prepare_multi30k.py", line): "data preparation into a fresh corpus folder (standalone)"
        for line in (
            'with open(path, encoding="utf-8") as infile, open(codes, "w", encoding="utf-8") as outfile:',
            'shutil.copyfile(target_dict, os.path.join(destdir, "dict.txt"))',
            'shutil.copyfile(codes["en"], os.path.join(destdir, "bpe.codes.en"))',
            'shutil.copyfile(os.path.join(text_dir, f"{split}.bpe.de"), os.path.join(destdir, f"{split}.bpe.de"))',
        )
    },
}


def test_every_write_goes_through_the_writer_but_the_few_listed():
    """A new open(..., "w"), savefig, json.dump, write_text, rename or copy in the project's code fails here:
    write through alm_plugin/cli/output_files.py, or add it to NOT_THROUGH_THE_WRITER with the reason."""
    found = set()
    for top in ("alm_plugin", "benchmarks", "examples", "scripts"):
        for folder, _, names in os.walk(os.path.join(ROOT, top)):
            for name in names:
                path = os.path.join(folder, name)
                relative = os.path.relpath(path, ROOT)
                if not name.endswith(".py") or relative == "alm_plugin/cli/output_files.py":
                    continue
                for line in open(path, encoding="utf-8"):
                    if WRITES.search(line) and not line.lstrip().startswith("#"):
                        found.add((relative, line.strip()))
    assert found - set(NOT_THROUGH_THE_WRITER) == set(), "writes outside alm_plugin/cli/output_files.py"
    assert set(NOT_THROUGH_THE_WRITER) - found == set(), "listed writes that are gone: drop them from the list"


def test_a_picture_sent_to_a_stream_keeps_its_name(tmp_path):
    """`--out /dev/stdout` or a FIFO is drawn in PNG under its own name (a name without an extension
    otherwise gets .png: /dev/stdout.png)."""
    from alm_plugin.cli.tool import picture_path

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert picture_path(str(fifo), "--out") == str(fifo) and picture_path("/dev/stdout", "--out") == "/dev/stdout"
    assert picture_path(str(tmp_path / "noext"), "--out") == str(tmp_path / "noext.png")


# ---------------------------------------------------------------- an output judged by the file it is


def linked_model(tmp_path, how):
    """(the name --path is given, the model's folder): the model read through a symbolic link, a hard link
    in another folder, or a name not ending in .pt."""
    folder = model_folder(tmp_path)
    if how == "symbolic link":
        path = tmp_path / "model"
        path.symlink_to(folder / "checkpoint_best.pt")
    elif how == "hard link":
        (tmp_path / "elsewhere").mkdir()
        path = tmp_path / "elsewhere" / "model"
        os.link(folder / "checkpoint_best.pt", path)
    else:
        path = folder / "model.bin"
        shutil.copy(folder / "checkpoint_best.pt", path)
    return path, folder


@pytest.mark.parametrize("how", ["symbolic link", "hard link", "a name not ending in .pt"])
@pytest.mark.parametrize(
    "module, prog, option",
    [
        ("alm_plugin.cli.cache_grid", "alm-cache-grid", "--json"),
        ("alm_plugin.cli.cache_posterior", "alm-cache-posterior", "--json"),
        ("alm_plugin.cli.rescore", "alm-rescore", "--output-nbest"),
    ],
)
def test_the_checkpoint_a_resume_reads_is_refused_whatever_names_the_model(tmp_path, how, module, prog, option):
    """`alm-cache-grid --path LINK --json ck/checkpoint_last.pt` never replaces the checkpoint a resume reads,
    whatever LINK is (a symbolic or hard link, a name not ending in .pt): the guard judges the file."""
    path, folder = linked_model(tmp_path, how)
    before = {name: sha(folder / name) for name in os.listdir(folder)}
    output = folder / "checkpoint_last.pt"
    if module.endswith("rescore"):
        (tmp_path / "in.nbest").write_text("H-0\t-1.5\tthe cat\n", encoding="utf-8")
        arguments = ["--nbest", tmp_path / "in.nbest", "--lm", path, option, output]
    else:
        arguments = ["--path", path, option, output]
    code, _, stderr = run_module(module, *arguments)
    assert code == 1 and refused(stderr, prog, f"{option} {output} is "), stderr
    assert {name: sha(folder / name) for name in os.listdir(folder)} == before


def test_a_checkpoint_or_a_rows_results_is_refused_as_an_output_under_any_name(tmp_path):
    """A file torch saved, reached by a hard link or a symbolic link of any name, and a table row's JSON under
    any name, are no output; a file of benchmarks/results is a benchmark's own record only."""
    import torch

    torch.save({"model": {}}, tmp_path / "weights.bin")
    os.link(tmp_path / "weights.bin", tmp_path / "hard.json")
    (tmp_path / "soft.json").symlink_to(tmp_path / "weights.bin")
    (tmp_path / "row.txt").write_text(json.dumps({"row": "lstm", "recipe": {}, "valid_ppl": 100.0}))
    for name, says in (
        ("hard.json", "is a checkpoint (a file torch saved)"),
        ("soft.json", f"(a link to {tmp_path / 'weights.bin'}) is a checkpoint (a file torch saved)"),
        ("row.txt", "is a table row's results"),
        ("checkpoint7.pt", "is a checkpoint's name"),
    ):
        with pytest.raises(ScoringError, match=re.escape(says)):
            check_outputs({"--json": str(tmp_path / name)}, {"--path": ["elsewhere/model.pt"]})
    committed = os.path.join(ROOT, "benchmarks", "results", "gpu", "cli.json")
    with pytest.raises(ScoringError, match="the results the docs are generated from"):
        check_outputs({"--json": committed}, {})
    check_outputs({"--json": committed}, {}, results=True)
    check_outputs({"--json": str(tmp_path / "grid.json")}, {"--path": [str(tmp_path / "weights.bin")]})


def test_the_tables_progress_file_is_never_a_file_the_rows_read(tmp_path, monkeypatch, capsys):
    """`benchmarks.table --progress` never replaces a row's results, nor any file its resume reads."""
    from benchmarks import table

    results, save = tmp_path / "results", tmp_path / "save"
    (save / "lstm").mkdir(parents=True)
    results.mkdir()
    (results / "lstm.json").write_text(json.dumps({"row": "lstm", "epochs": 2}))
    (save / "lstm" / "train.log").write_text("a log\n")
    (tmp_path / "log-link").symlink_to(save / "lstm" / "train.log")
    os.link(results / "lstm.json", tmp_path / "progress.json")
    for output in (results / "lstm.json", tmp_path / "log-link", tmp_path / "progress.json"):
        argv = ["table.py", "--rows", "lstm", "--save-dir", save, "--results-dir", results, "--progress", output]
        monkeypatch.setattr(sys, "argv", [str(a) for a in argv])
        with pytest.raises(SystemExit) as exit:
            table.main()
        assert exit.value.code == 2 and f"--progress {output} is also a file the rows' resume or the docs read" in (
            capsys.readouterr().err
        )
    assert json.loads((results / "lstm.json").read_text()) == {"row": "lstm", "epochs": 2}
    assert (save / "lstm" / "train.log").read_text() == "a log\n"


@pytest.mark.parametrize(
    "committed", ["benchmarks/results/cpu/eval_speed.json", "benchmarks/results/quickstart/test_time_options.json"]
)
def test_the_tables_progress_file_is_never_a_committed_result_of_another_kind(committed, monkeypatch, capsys):
    """`benchmarks.table --progress` onto a committed result that is no progress record (a speed table, the
    quickstart's record) is refused in one line, the file byte for byte as it was; a link to it likewise."""
    from benchmarks import table

    path = os.path.join(ROOT, committed)
    before = open(path, "rb").read()
    monkeypatch.setattr(sys, "argv", ["table.py", "--rows", "lstm", "--progress", path])
    with pytest.raises(SystemExit) as exit:
        table.main()
    assert (
        exit.value.code == 2 and f"--progress {path} is a committed result of another kind" in capsys.readouterr().err
    )
    assert open(path, "rb").read() == before


@pytest.mark.parametrize(
    "module, argv, committed",
    [
        ("benchmarks.output_layer_speed", [], "benchmarks/results/quickstart/run.json"),
        ("benchmarks.host_overhead", [], "benchmarks/results/cpu/eval_speed.json"),
        (
            "benchmarks.gpu.paper_record",
            ["--progress", "p.json", "--rows", "lstm"],
            "benchmarks/results/cpu/setup_cost.json",
        ),
        ("benchmarks.eval_speed", [], "benchmarks/results/cpu/host_overhead.json"),
    ],
)
def test_every_lab_writer_refuses_a_committed_result_of_another_kind(module, argv, committed, monkeypatch, capsys):
    """A speed script, host_overhead and the paper step's record onto a committed result another script wrote:
    one line before the run, the file byte for byte as it was."""
    path = os.path.join(ROOT, committed)
    before = open(path, "rb").read()
    with pytest.raises(SystemExit) as exit:
        monkeypatch.setattr(sys, "argv", [module, *argv, "--json", path])
        importlib.import_module(module).main()
    line = capsys.readouterr().err.strip()
    assert exit.value.code == 2 and f"--json {path} is a committed result of another kind" in line, line
    assert open(path, "rb").read() == before


def test_a_json_output_onto_a_legacy_torch_file_of_any_pickle_protocol_is_refused(tmp_path):
    """A file torch saved in its legacy format, whatever the pickle protocol (2 to 5), is a checkpoint by its
    content, whatever its name."""
    import torch

    for protocol in (2, 3, 4, 5):
        path = tmp_path / f"weights-{protocol}.json"
        torch.save({"w": torch.zeros(2)}, path, _use_new_zipfile_serialization=False, pickle_protocol=protocol)
        with pytest.raises(ScoringError, match="a checkpoint"):
            check_outputs({"--json": str(path)}, {})
