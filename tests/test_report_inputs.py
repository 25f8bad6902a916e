"""The docs generator (`python -m benchmarks.report --update-docs`) checks each results file it reads
(benchmarks/result_files.py: present and parsed, the keys its block reads, finite numbers) and
refuses a broken one in one line naming the file and the key, leaving docs/benchmarks.md and its
pictures as they were.

Before: test_ppl / valid_ppl NaN in a row's JSON exited 0 and wrote `nan | **nan**`, `+nan%` and
"behind on valid and test" into the docs (infinity: `+inf%`); a key removed ended in `KeyError:
'test_ppl'`, an invalid or empty file in `JSONDecodeError`, a null in a `TypeError`, none naming
the file. Fast: JSON only, the page a copy (no fairseq run)."""

import importlib
import json
import os
import shutil

import conftest
import pytest
from test_report_layouts import row as ptb_row
from test_report_paper import row as paper_row

ROOT = conftest.ROOT


@pytest.fixture
def report(monkeypatch, tmp_path):
    """The package, writing a copy of docs/benchmarks.md and drawing no picture (each draw recorded)."""
    report = importlib.import_module("benchmarks.report")
    page = tmp_path / "benchmarks.md"
    shutil.copy(f"{ROOT}/docs/benchmarks.md", page)
    monkeypatch.setattr(report, "PAGE", str(page))
    report.drawn = []
    monkeypatch.setattr(report.ptb_table, "draw", lambda results, *a, **k: report.drawn.append("ptb_table"))
    monkeypatch.setattr(report.ptb_stream, "draw", lambda results, *a, **k: report.drawn.append("ptb_stream"))
    return report


def write(folder, rows):
    folder.mkdir(exist_ok=True)
    for name, content in rows.items():
        (folder / f"{name}.json").write_text(content if isinstance(content, str) else json.dumps(content))
    return folder


def refused_by_the_generator(report, capsys, args, message):
    page = open(report.PAGE, encoding="utf-8").read()
    with pytest.raises(SystemExit) as exit:
        report.main(["--update-docs", *args])
    line = str(exit.value.code)
    assert line.startswith(f"benchmarks.report: error: {message}") and "\n" not in line
    assert line.endswith(
        ": rerun the row (benchmarks/table.py) or its script, or restore the file; the docs were left unchanged"
    )
    assert open(report.PAGE, encoding="utf-8").read() == page and report.drawn == []
    assert capsys.readouterr().out == ""  # not a block printed either
    return True


def without(record, key):
    return {k: v for k, v in record.items() if k != key}


GOOD = paper_row(100.0, 95.0)
PAPER_CASES = {  # the single row's file -> what the line says after its name
    "test_ppl NaN": (json.dumps({**GOOD, "test_ppl": float("nan")}), ": 'test_ppl' is nan, not a finite number"),
    "valid_ppl NaN": (json.dumps({**GOOD, "valid_ppl": float("nan")}), ": 'valid_ppl' is nan, not a finite number"),
    "test_ppl infinite": (json.dumps({**GOOD, "test_ppl": float("inf")}), ": 'test_ppl' is inf, not a finite number"),
    "valid_ppl -Infinity": (
        json.dumps({**GOOD, "valid_ppl": float("-inf")}),
        ": 'valid_ppl' is -inf, not a finite number",
    ),
    "test_ppl removed": (json.dumps(without(GOOD, "test_ppl")), ": no 'test_ppl', which the docs read"),
    "valid_paper_ppl removed": (
        json.dumps(without(GOOD, "valid_paper_ppl")),
        ": no 'valid_paper_ppl', which the docs read",
    ),
    "test_ppl null": (json.dumps({**GOOD, "test_ppl": None}), ": 'test_ppl' is null, and the docs read it"),
    "invalid JSON": ('{"valid_ppl": 100.0, "test_ppl": ', " is not valid JSON (Expecting value at line 1 column 34)"),
    "an empty file": ("", " is empty"),
    "a JSON list": ("[100.0, 95.0]", " holds a JSON list, not an object of figures"),
}


@pytest.mark.parametrize("case", list(PAPER_CASES))
def test_a_broken_paper_row_is_refused_by_file_and_key_and_the_docs_are_untouched(report, capsys, tmp_path, case):
    content, says = PAPER_CASES[case]
    folder = write(tmp_path / "paper", {"lstm": paper_row(100.0, 96.0), "single": content})
    assert refused_by_the_generator(report, capsys, ["--paper-results", str(folder)], f"{folder / 'single.json'}{says}")


PTB_CASES = {  # another block (ptb-table, ptb-stream, adaptive-softmax read --ptb-results): a row broken inside
    "a NaN in an epoch's curve": (
        {**ptb_row(100.0, fixed=True), "valid_ppl_per_epoch": [150.0, float("nan")]},
        ": 'valid_ppl_per_epoch[1]' is nan, not a finite number",
    ),
    "params removed": (without(ptb_row(100.0, fixed=True), "params"), ": no 'params', which the docs read"),
    "train_minutes null": ({**ptb_row(100.0, fixed=True), "train_minutes": None}, ": 'train_minutes' is null"),
}


@pytest.mark.parametrize("case", list(PTB_CASES))
def test_a_broken_ptb_row_is_refused_by_file_and_key_and_no_picture_is_drawn(report, capsys, tmp_path, case):
    record, says = PTB_CASES[case]
    folder = write(tmp_path / "ptb", {"lstm": ptb_row(100.0, fixed=True), "single": record})
    assert refused_by_the_generator(report, capsys, ["--ptb-results", str(folder)], f"{folder / 'single.json'}{says}")


@pytest.mark.parametrize(
    "name, change, says",
    [
        ("stream_speed.json", lambda text, record: text.replace("}", ', "x": Infinity}', 1), ": '"),
        (
            "output_layer_speed.json",
            lambda text, record: json.dumps(
                {
                    **record,
                    "by_threads": {
                        t: {**v, "eval": {k: x for k, x in v["eval"].items() if k != "ratio"}}
                        for t, v in record["by_threads"].items()
                    },
                }
            ),
            ": no 'by_threads.1.eval.ratio', which the docs read",
        ),
    ],
)
def test_a_broken_speed_file_is_refused_too(report, capsys, tmp_path, monkeypatch, name, change, says):
    """The scripts' JSON (benchmarks/results/cpu/...) goes through the same reader: a key nested in it named whole."""
    results = tmp_path / "results"
    shutil.copytree(f"{ROOT}/benchmarks/results/cpu", results / "cpu")
    text = (results / "cpu" / name).read_text()
    (results / "cpu" / name).write_text(change(text, json.loads(text)))
    monkeypatch.setattr(report.tables, "RESULTS", str(results))
    assert refused_by_the_generator(report, capsys, [], f"{results / 'cpu' / name}{says}")


def test_sound_results_generate_the_same_blocks_as_plain_json(report):
    """The checked rows read as the JSON did: every block of the repository's results, unchanged."""
    from benchmarks import rows

    paths = {name: os.path.join(rows.PTB.results, f"{name}.json") for name in rows.PTB.rows}
    plain = {name: json.load(open(path)) for name, path in paths.items() if os.path.exists(path)}
    checked = rows.PTB.load()
    assert checked == plain and report.ptb_table.block(checked) == report.ptb_table.block(plain)
    assert all(isinstance(text, str) and "nan" not in text.split() for text in report.blocks(draw=False).values())
