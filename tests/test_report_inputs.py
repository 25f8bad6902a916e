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
    """The package, writing copies of docs/benchmarks.md, README.md and docs/tools.md (the other two in a folder
    of their own) and drawing no picture (each draw recorded)."""
    report = importlib.import_module("benchmarks.report")
    page = tmp_path / "benchmarks.md"
    shutil.copy(f"{ROOT}/docs/benchmarks.md", page)
    monkeypatch.setattr(report, "PAGE", str(page))
    (tmp_path / "others").mkdir()
    for name, source in (("README", "README.md"), ("TOOLS", "docs/tools.md")):
        copy = tmp_path / "others" / os.path.basename(source)
        shutil.copy(f"{ROOT}/{source}", copy)
        monkeypatch.setattr(report, name, str(copy))
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
    # a figure that is not what its key names (before: `true` published as 1.0, -5 accepted, "100" a ValueError)
    "test_ppl true": (
        json.dumps({**GOOD, "test_ppl": True}),
        ": 'test_ppl' is true, not a perplexity (a finite number of at least 1.05, so that none is printed as 1.0)",
    ),
    "test_ppl -5": (json.dumps({**GOOD, "test_ppl": -5}), ": 'test_ppl' is -5, not a perplexity"),
    "valid_ppl 1": (json.dumps({**GOOD, "valid_ppl": 1}), ": 'valid_ppl' is 1, not a perplexity"),
    "test_ppl a string": (json.dumps({**GOOD, "test_ppl": "95.0"}), ": 'test_ppl' is \"95.0\", not a perplexity"),
    "valid_paper_ppl false": (
        json.dumps({**GOOD, "valid_paper_ppl": False}),
        ": 'valid_paper_ppl' is false, not a perplexity",
    ),
    # figures past what they can be (before: a 301-digit count, 1e20 epochs, epoch 99 of 10 published)
    "params 1e300": (json.dumps({**GOOD, "params": 1e300}), ": 'params' is 1e+300, not a number of parameters"),
    "epochs 1e20": (json.dumps({**GOOD, "epochs": 1e20}), ": 'epochs' is 1e+20, not a number of epochs"),
    "epochs 2.5": (json.dumps({**GOOD, "epochs": 2.5}), ": 'epochs' is 2.5, not a number of epochs"),
    "best_epoch past its epochs": (
        json.dumps({**GOOD, "epochs": 10, "best_epoch": 99}),
        ": 'best_epoch' is 99, past its 10 epochs",
    ),
    "nested 100,000 deep": ("[" * 100000 + "]" * 100000, " nests its JSON too deep to be a results file"),
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
    "a curve of strings": (
        {**ptb_row(100.0, fixed=True), "valid_ppl_per_epoch": ["150.0", "120.0"]},
        ": 'valid_ppl_per_epoch[0]' is \"150.0\", not a perplexity",
    ),
    "train_minutes a string": (
        {**ptb_row(100.0, fixed=True), "train_minutes": "30"},
        ": 'train_minutes' is \"30\", not a duration (a finite number, not negative)",
    ),
    "bpc 0": ({**ptb_row(100.0, fixed=True), "test_bpc": 0}, ": 'test_bpc' is 0, not bits per character"),
    # before: published as they were
    "train_minutes -5": (
        {**ptb_row(100.0, fixed=True), "train_minutes": -5},
        ": 'train_minutes' is -5, not a duration",
    ),
    "params 0": ({**ptb_row(100.0, fixed=True), "params": 0}, ": 'params' is 0, not a number of parameters"),
    "epochs 2.5": ({**ptb_row(100.0, fixed=True), "epochs": 2.5}, ": 'epochs' is 2.5, not a number of epochs"),
    "a negative speed": (
        {**ptb_row(100.0, fixed=True), "train_tokens_per_s": -5000},
        ": 'train_tokens_per_s' is -5000, not a speed (a finite number above 0)",
    ),
    "test_ppl 1.0000001": (
        {**ptb_row(100.0, fixed=True), "test_ppl": 1.0000001},
        ": 'test_ppl' is 1.0000001, not a perplexity (a finite number of at least 1.05",
    ),
    "a curve that is an object": (
        {**ptb_row(100.0, fixed=True), "valid_ppl_per_epoch": {"1": 150.0}},
        ": 'valid_ppl_per_epoch' is {\"1\": 150.0}, not a curve (a list of figures, one an epoch)",
    ),
}


@pytest.mark.parametrize(
    "args, says",
    [
        ([], "'recipe.size' is 9999, but its args give none, and the row is 2 x 650"),
        (["--hidden-size", "200"], "'recipe.size' is 9999, but its args give --hidden-size 200"),
    ],
)
def test_a_recorded_size_its_own_arguments_do_not_give_is_refused(report, capsys, tmp_path, args, says):
    """A size typed into a row's JSON is not published: the width comes from the row's own arguments."""
    forged = paper_row(110.0, 105.0, args=args, recipe={"epochs": 20, "size": "9999"})
    folder = write(tmp_path / "paper", {"lstm": forged, "single": paper_row(100.0, 96.0)})
    assert refused_by_the_generator(report, capsys, ["--paper-results", str(folder)], f"{folder / 'lstm.json'}: {says}")


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
        # a figure of no declared kind written as words, or as an object: refused where the docs take a number
        (
            "eval_speed.json",
            lambda text, record: json.dumps(
                {
                    **record,
                    "peak_mib": {**record["peak_mib"], "lstm_lm": {**record["peak_mib"]["lstm_lm"], "35": "a lot"}},
                }
            ),
            ": 'peak_mib.lstm_lm.35' is \"a lot\", not a number",
        ),
        (
            "eval_speed.json",
            lambda text, record: json.dumps({**record, "peak_mib": {**record["peak_mib"], "lstm_lm": "a lot"}}),
            ": 'peak_mib.lstm_lm' is \"a lot\", not an object or a list of figures",
        ),
        (
            "step_profile.json",
            lambda text, record: json.dumps(
                {**record, "before_issue_46": {**record["before_issue_46"], "attentive_lm combined B32": [948]}}
            ),
            ": 'before_issue_46.attentive_lm combined B32' is [948], not a number",
        ),
        (
            "step_profile.json",
            lambda text, record: json.dumps({**record, "counts": "a lot"}),
            ": 'counts' is \"a lot\", not an object or a list of figures",
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


def test_a_curve_with_epochs_not_logged_is_still_read(tmp_path):
    """null in a curve: an epoch whose validation was not logged (the table leaves it out)."""
    from benchmarks.result_files import read_result

    folder = write(tmp_path / "ptb", {"lstm": {**ptb_row(100.0, fixed=True), "valid_ppl_per_epoch": [None, 120.0]}})
    assert read_result(str(folder / "lstm.json"))["valid_ppl_per_epoch"] == [None, 120.0]


def test_a_results_file_that_is_a_directory_is_refused_by_name(report, capsys, tmp_path):
    """A results path that is a directory is refused by name, not with IsADirectoryError's traceback."""
    folder = write(tmp_path / "paper", {"lstm": paper_row(100.0, 96.0)})
    (folder / "single.json").mkdir()
    says = f"{folder / 'single.json'} is a directory, not a results file"
    assert refused_by_the_generator(report, capsys, ["--paper-results", str(folder)], says)


def test_a_results_file_of_no_declared_row_is_named(report, capsys, tmp_path):
    """A results file of no declared row is named on stderr, not left out of the docs without a word."""
    folder = write(tmp_path / "paper", {"lstm": paper_row(100.0, 96.0), "singel": paper_row(99.0, 95.0)})
    report.main(["--paper-results", str(folder)])
    notes = [line for line in capsys.readouterr().err.splitlines() if "note:" in line]
    assert notes == [
        f"benchmarks.report: note: {folder / 'singel.json'} is the results of no row of ptb-paper "
        "(benchmarks/rows.py), so the docs leave it out: declare the row, or move the file away"
    ]


# ---------------------------------------------------------------- the page: built whole, written once or not at all


def broken(page, how):
    """``page`` with one marker's lines misplaced (``how``)."""
    if how == "end above begin":  # the first block's end marker moved above its begin
        begin, end = "<!-- ptb-table:begin -->", "<!-- ptb-table:end -->"
        return page.replace(end, "", 1).replace(begin, f"{end}\n{begin}", 1)
    if how == "a later block's end missing":
        return page.replace("<!-- char-tables:end -->", "")
    if how in ("a block inside another", "a block inside a later one"):  # each marker once, in order
        inner, outer = ("wikitext-2", "ptb-table") if how == "a block inside another" else ("ptb-table", "wikitext-2")
        begin, end = f"<!-- {inner}:begin -->", f"<!-- {inner}:end -->"
        block = page[page.index(begin) : page.index(end) + len(end)]
        page = page.replace(block, "")
        return page.replace(f"<!-- {outer}:end -->", f"{block}\n<!-- {outer}:end -->")
    if how == "a block of no module inside one":
        return page.replace(
            "<!-- ptb-table:end -->", "<!-- notes:begin -->\nmine\n<!-- notes:end -->\n<!-- ptb-table:end -->"
        )
    return page.replace("<!-- wikitext-2:begin -->", "<!-- wikitext-2:begin -->\n<!-- wikitext-2:begin -->")


@pytest.mark.parametrize(
    "how",
    [
        "end above begin",
        "a later block's end missing",
        "a begin twice",
        "a block inside another",
        "a block inside a later one",
        "a block of no module inside one",
    ],
)
def test_a_page_with_a_broken_marker_is_left_byte_for_byte_and_no_picture_is_drawn(report, capsys, how):
    """The page is filled in memory before it is written: a marker out of order, or a block inside another,
    leaves it byte for byte as it was and draws no picture."""
    page = broken(open(report.PAGE, encoding="utf-8").read(), how)
    open(report.PAGE, "w", encoding="utf-8").write(page)
    with pytest.raises(SystemExit) as exit:
        report.main(["--update-docs"])
    line = str(exit.value.code)
    assert line.startswith("benchmarks.report: error: ") and "\n" not in line, line
    assert line.endswith("mend the page (git checkout it); it was left unchanged")
    assert open(report.PAGE, encoding="utf-8").read() == page and report.drawn == []


def test_the_page_is_written_once_through_a_temporary_file(report, monkeypatch):
    """A hard link to the page keeps the old text: the page is renamed into place, never rewritten in place."""
    twin = report.PAGE + ".twin"
    os.link(report.PAGE, twin)
    before = open(twin, encoding="utf-8").read()
    os.chmod(report.PAGE, 0o640)
    report.main(["--update-docs"])
    assert open(twin, encoding="utf-8").read() == before
    assert not os.path.samefile(twin, report.PAGE) and oct(os.stat(report.PAGE).st_mode & 0o777) == oct(0o640)
    written = sorted(os.listdir(os.path.dirname(report.PAGE)))
    assert written == ["benchmarks.md", "benchmarks.md.twin", "others"]  # others: the fixture's README and tools


def test_the_pictures_are_saved_through_the_writer(tmp_path):
    """A picture of the report (tables.figure) saved over a hard link leaves the other name's bytes."""
    from benchmarks.report.tables import figure

    picture, twin = tmp_path / "valid.png", tmp_path / "twin.png"
    picture.write_bytes(b"old picture")
    os.link(picture, twin)
    fig, ax = figure((2, 2))
    ax.plot([1, 2], [3, 4])
    fig.savefig(str(picture), dpi=50)
    assert twin.read_bytes() == b"old picture" and picture.read_bytes().startswith(b"\x89PNG")
    assert sorted(os.listdir(tmp_path)) == ["twin.png", "valid.png"]


@pytest.mark.parametrize(
    "change, says",
    [
        (
            lambda r: r.update(test_bleu_beam5=True),
            "'test_bleu_beam5' is true, not a BLEU score (a finite number from 0",
        ),
        (lambda r: r["fusion"].update(test_bleu=-40.59), "'fusion.test_bleu' is -40.59, not a BLEU score"),
        (lambda r: r.update(example_minutes=-3), "'example_minutes' is -3, not a duration"),
    ],
)
def test_a_wrong_translation_figure_is_refused_by_file_and_key(report, capsys, tmp_path, monkeypatch, change, says):
    """A BLEU that is not a number from 0 to 100 is refused by file and key, never published."""
    results = tmp_path / "results"
    shutil.copytree(f"{ROOT}/benchmarks/results", results)
    path = results / "multi30k" / "attentive_nmt_small.json"
    record = json.loads(path.read_text())
    change(record)
    path.write_text(json.dumps(record))
    monkeypatch.setattr(report.tables, "RESULTS", str(results))
    assert refused_by_the_generator(report, capsys, [], f"{path}: {says}")


def test_a_results_file_read_again_gives_its_new_figures_and_no_reader_can_change_it(tmp_path):
    from benchmarks.result_files import read_result

    path = tmp_path / "row.json"
    path.write_text(json.dumps({"valid_ppl": 120.0, "valid_ppl_per_epoch": [130.0, 120.0]}))
    first = read_result(str(path))
    assert read_result(str(path)) is first  # parsed and checked once
    path.write_text(json.dumps({"valid_ppl": 110.0, "valid_ppl_per_epoch": [130.0, 110.0]}))  # same size
    assert read_result(str(path))["valid_ppl"] == 110.0
    with pytest.raises(TypeError, match="read-only"):
        first["valid_ppl"] = 1.0
    with pytest.raises(TypeError, match="read-only"):
        first["valid_ppl_per_epoch"].append(1.0)
    assert first["valid_ppl"] == 120.0
