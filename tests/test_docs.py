"""The README and docs/ stay true to the tree: links resolve, the layout map is complete.

Fast: reads files only (no fairseq run; the root is conftest.py's).
"""

import json
import os
import re
import unicodedata
from pathlib import Path

import conftest
import pytest

ROOT = Path(conftest.ROOT)
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
README_MAX_LINES = 300


def prose(text: str) -> str:
    """The page without its fenced code blocks (whose brackets are code, not links)."""
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def anchors(page: Path) -> set:
    """GitHub's anchors for the page's headings: lower case, punctuation dropped, spaces -> '-'."""
    found = set()
    for line in prose(page.read_text(encoding="utf-8")).splitlines():
        match = re.match(r"#{1,6}\s+(.*)", line)
        if match:
            title = unicodedata.normalize("NFC", match.group(1).strip().lower())
            found.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return found


def links(page: Path):
    for target in LINK.findall(prose(page.read_text(encoding="utf-8"))):
        if not re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto: are not checked
            yield target


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target} (no {file.relative_to(ROOT) if ROOT in file.parents else file})")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target} (no heading #{anchor} in {file.relative_to(ROOT)})")
    assert not broken, f"{page.relative_to(ROOT)}: broken links: {broken}"


def test_readme_is_short():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, (
        f"README.md has {lines} lines (at most {README_MAX_LINES}): move the detail to a page under docs/"
    )


def listed_paths():
    """The first word of every line of docs/layout.md's code block: a path in the repository."""
    text = (ROOT / "docs" / "layout.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```\n(.*?)^```", text, flags=re.S | re.M)
    assert blocks, "docs/layout.md has no ``` block with the map"
    return [line.split()[0] for block in blocks for line in block.splitlines() if line.strip()]


def test_layout_lists_every_module():
    listed = set(listed_paths())
    modules = sorted(
        str(path.relative_to(ROOT)).replace(os.sep, "/")
        for path in (ROOT / "alm_plugin").rglob("*.py")
        if path.name != "__init__.py" and "__pycache__" not in path.parts
    )
    missing = [module for module in modules if module not in listed]
    assert not missing, f"docs/layout.md does not list {missing}: add a line saying what each is for"


def test_layout_paths_exist():
    absent = [path for path in listed_paths() if not (ROOT / path).exists()]
    assert not absent, f"docs/layout.md lists paths that do not exist: {absent}"


def test_report_fills_markers_and_keeps_the_rest(tmp_path):
    """``python -m benchmarks.report --update-docs`` fills docs/benchmarks.md's markers (the README no
    longer has them); everything outside the markers is kept."""
    page = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    assert begin_end("ptb-table")[0] not in (ROOT / "README.md").read_text(encoding="utf-8")
    report = benchmarks_module("report")
    copy = tmp_path / "benchmarks.md"
    for marker in ("ptb-table", "ptb-stream"):
        copy.write_text(page, encoding="utf-8")
        begin, end = begin_end(marker)
        assert begin in page and end in page
        report.fill_markers(str(copy), marker, f"| a new {marker} table |")
        written = copy.read_text(encoding="utf-8")
        assert f"{begin}\n| a new {marker} table |\n{end}" in written
        assert written.split(begin)[0] == page.split(begin)[0]
        assert written.split(end)[1] == page.split(end)[1]


def test_benchmarks_page_is_what_the_json_generates():
    """Every generated block of docs/benchmarks.md equals what benchmarks.report writes from the committed
    JSON: a result committed without regenerating the page (or a page edited by hand) fails here."""
    page = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    stale = []
    for marker, text in benchmarks_module("report").blocks(draw=False).items():
        begin, end = begin_end(marker)
        if page.split(begin)[1].split(end)[0] != f"\n{text}\n":
            stale.append(marker)
    assert not stale, f"docs/benchmarks.md's {stale} blocks are stale: run python -m benchmarks.report --update-docs"


# a cell that is nothing but figures: "469.42", "1,084.78 / 4,291.65", "**40.95**", "12.6 ms", "10.45 / 8.92 (1.17x)"
NUMBER = r"[+\-–]?\d[\d,]*(?:\.\d+)?\s*(?:ms|s|%|x|MiB|GB|M|k)?"
FIGURES_CELL = re.compile(rf"^\**{NUMBER}\**(?:\s*/\s*\**{NUMBER}\**)*(?:\s*\({NUMBER}\))?$")


def hand_typed_figure_rows(text):
    """The table rows of ``text`` outside every generated block whose cells hold measured figures
    (a cell of numbers with a decimal point or a thousands comma)."""
    found, inside = [], False
    for number, line in enumerate(text.splitlines(), 1):
        if re.match(r"<!-- [a-z0-9-]+:begin -->", line):
            inside = True
        elif re.match(r"<!-- [a-z0-9-]+:end -->", line):
            inside = False
        elif not inside and line.startswith("|"):
            cells = [cell.strip() for cell in line.strip("|").split("|")]
            if any(FIGURES_CELL.match(cell) and re.search(r"\d[.,]\d", cell) for cell in cells):  # not a budget
                found.append(f"{number}: {line[:80]}")
    return found


def test_no_table_of_figures_in_the_docs_is_typed_by_hand():
    """Measured figures in a table come from the JSON: they sit between a generated block's markers
    (benchmarks.report writes them), never typed into a page, where they would outlive the code that
    measured them. The check finds such a row, and passes a configuration table."""
    assert hand_typed_figure_rows("| model | ppl |\n|---|---|\n| lstm | 86.38 |") == ["3: | lstm | 86.38 |"]
    for cell in ("1,084.78 / 4,291.65", "**40.95**", "12.6 ms", "10.45 / 8.92 (1.17x)", "**41.82** (+0.79)"):
        assert hand_typed_figure_rows(f"| a | {cell} |") == [f"1: | a | {cell} |"], cell
    assert hand_typed_figure_rows("| forget-gate bias | 1.0 (TensorFlow's) | `timing` | 360 |") == []
    generated = "<!-- x:begin -->\n| lstm | 86.38 |\n<!-- x:end -->\n| `amsrn_small` | 2 x 256, dropout 0.3 |"
    assert hand_typed_figure_rows(generated) == []
    typed = {str(page.relative_to(ROOT)): hand_typed_figure_rows(page.read_text(encoding="utf-8")) for page in PAGES}
    assert not any(typed.values()), f"tables of figures typed by hand (generate them from the JSON): {typed}"


# a measured figure in a sentence: a number with a unit of measure ("28%", "~2x", "80 s", "1,797 MiB",
# "805 tokens/s"), or a perplexity, BLEU or bpc with decimals ("valid bpc 2.31")
MEASURED = re.compile(
    r"(?<![\w.\-/])[~+\-−±]?\d[\d,]*(?:\.\d+)?(?:%|x\b|\s?(?:ms|s|min|minutes|hours?|MiB|GiB|MB|GB)\b|\s?(?:tokens|words)/s)"
    r"|\b(?:ppl|perplexity|BLEU|bpc)\s+(?:of\s+)?\d+\.\d+|\d+\.\d+\s+(?:ppl|BLEU|bpc)\b"
)
# a bound or a setting, not a measurement: ">= 0.85x", "within 10%", "up to 32 MB", "by default 570 s"
BOUND = re.compile(r"(?:>=|≥|<=|≤|at most|at least|within|up to|under|over|more than|less than|default)\s*$")


def measured_figures_in_prose(text):
    """The figures of measurement in ``text``'s sentences outside every generated block, fenced code, inline
    code, link targets and quotations; a bound or a setting ("within 10%") is no measurement."""
    found, inside, fenced, quoted = [], False, False, False
    for number, line in enumerate(text.splitlines(), 1):
        if re.match(r"<!-- [a-z0-9-]+:(begin|end) -->", line):
            inside = line.endswith(":begin -->")
            continue
        if line.startswith("```"):
            fenced = not fenced
        if inside or fenced or line.startswith(("```", "|")):  # tables: hand_typed_figure_rows
            continue
        pieces = re.sub(r"`[^`]*`|\]\([^)]*\)", " ", line).split('"')  # a quotation may span lines
        prose = " ".join(piece for i, piece in enumerate(pieces) if (i % 2 == 1) == quoted)
        quoted ^= len(pieces) % 2 == 0
        found += [f"{number}: {m.group(0)}" for m in MEASURED.finditer(prose) if not BOUND.search(prose[: m.start()])]
    return found


def test_no_measured_figure_in_the_docs_prose_is_typed_by_hand():
    """A figure measured once and typed into a sentence outlives the code that measured it: docs prose holds
    none outside a generated block. The check finds a planted one and passes bounds, settings and code."""
    planted = "The sample's valid split at 20 streams reads ~28% more, scored in 80 s (valid bpc 2.31)."
    assert measured_figures_in_prose(planted) == ["1: ~28%", "1: 80 s", "1: bpc 2.31"]
    quoted = 'the paper: "50% dropout to the\nnon-recurrent connections", and 80% of it'
    assert measured_figures_in_prose(quoted) == ["2: 80%"]  # the quotation spans the lines, the rest is prose
    for fine in (
        "speed >= 0.85x the LSTM's; a difference over 0.1% fails; up to 32 MB held",
        '`--lr 0.003` and [a link](benchmarks.md#x-28%), the paper\'s "50% dropout"',
        "<!-- x:begin -->\nread 28% more\n<!-- x:end -->",
        "```\ntook 80 s\n```",
    ):
        assert measured_figures_in_prose(fine) == [], fine
    typed = {
        str(page.relative_to(ROOT)): found
        for page in PAGES
        if page.parent.name == "docs" and (found := measured_figures_in_prose(page.read_text(encoding="utf-8")))
    }
    assert not typed, f"measured figures typed into the docs' prose (generate them from the JSON): {typed}"


def test_the_translation_record_reads_what_the_example_prints():
    """benchmarks.translation records the figures multi30k.sh, alm-rescore and shallow_fusion.sh print, each
    where the script prints it; the block states the changes from those figures."""
    from benchmarks.report import translation as block

    example = (
        "BLEU, beam 5:\n40.95\n"
        "tuned on runs/x/valid.nbest10.txt: BLEU 41.63 -> 42.10\nweights: TM=1,LM=0.15,Len=1.5\n"
        "runs/x/test.nbest10.txt: BLEU 41.03 (system 1-best) -> 41.82 (rescored)\n"
    )
    fusion = "valid, lm-weight 0: BLEU 41.59\nvalid, lm-weight 0.05: BLEU 41.70\ntest, lm-weight 0.05: BLEU 41.29\n"
    record = benchmarks_module("translation").figures(example, fusion)
    assert record["test_bleu_beam5"] == 40.95 and record["test_bleu_beam10_1best"] == 41.03
    assert record["rescoring"] == {
        "weights": {"TM": 1.0, "LM": 0.15, "Len": 1.5},
        "valid_bleu_before": 41.63,
        "valid_bleu_after": 42.10,
        "test_bleu": 41.82,
    }
    assert record["fusion"] == {"valid_bleu_by_weight": {"0": 41.59, "0.05": 41.70}, "weight": 0.05, "test_bleu": 41.29}
    text = block.record(
        {
            **record,
            "arch": "attentive_nmt_small",
            "lm_arch": "amsrn_small",
            "valid_ppl": 5.24,
            "lm_valid_ppl": 37.5,
            "commit": "abc1234",
            "device": "cpu, 1 thread(s)",
            "example_minutes": 60,
            "fusion_minutes": 9,
        }
    )
    assert "+0.79 on the 1-best of beam 10" in text and "+0.34 on beam 5" in text
    with pytest.raises(SystemExit, match="no fusion test BLEU"):
        benchmarks_module("translation").figures(example, "valid, lm-weight 0: BLEU 41.59\n")


def test_every_declared_comparison_names_rows_its_corpus_has():
    """A comparison whose corpus or row is misspelt would never be stated (its rows never run): each names a
    corpus of rows.py with a label, two of its rows, and what differs."""
    from benchmarks.comparisons import COMPARISONS
    from benchmarks.rows import CORPORA

    for c in COMPARISONS:
        corpus = CORPORA[c.corpus]
        assert corpus.label and {c.baseline, c.row} <= set(corpus.rows) and c.baseline != c.row, c
        assert c.things and all(thing.strip() for thing in c.things), c
    assert len({(c.corpus, c.baseline, c.row) for c in COMPARISONS}) == len(COMPARISONS)


def test_the_readme_and_tools_blocks_are_what_the_json_generates():
    """README.md's generated blocks (the set-up cost, the quickstart's output, the short answer) and docs/tools.md's
    (the installs) equal what benchmarks.report writes from the committed JSON: a figure typed by hand fails here."""
    stale = []
    for path, found in benchmarks_module("report").other_pages().items():
        page = open(path, encoding="utf-8").read()
        for marker, text in found.items():
            begin, end = begin_end(marker)
            if page.split(begin)[1].split(end)[0] != f"\n{text}\n":
                stale.append(f"{os.path.relpath(path, ROOT)}: {marker}")
    assert not stale, f"{stale} are stale: run python -m benchmarks.report --update-docs"


def test_the_short_answer_follows_the_figures(monkeypatch):
    """Each step of the short answer says what its two rows show: the layer's gain credited to the layer, the
    attention level when its row is level with the layer's, a step whose rows have not run said so."""
    short_answer = benchmarks_module("report").short_answer
    from benchmarks import rows

    def row(test):
        return {"valid_ppl": test + 3, "test_ppl": test, "dropout_layout": "each tensor once"}

    figures = {
        "ptb-paper": {
            "lstm": row(100.0),
            "lstm-seed2": row(100.4),
            "single-zero-context": row(96.0),
            "single": row(95.9),
        },
        "ptb": {},
        "wikitext-2": {"lstm": row(120.0), "single": row(126.0)},
    }
    monkeypatch.setattr(rows.Corpus, "load", lambda self, results_dir=None: figures[self.name])
    text = short_answer.text()
    assert "the concat layer alone (`single-zero-context` against `lstm`): ahead on test (-4.2%, one seed" in text
    assert "the attention on top of it (`single` against `single-zero-context`): level on test (-0.1%" in text
    assert "On PTB, 2 x 200: the concat layer alone (`single-zero-context` against `lstm`) has not run yet" in text
    wikitext = "(`single` against `lstm`): behind on test (+5.0%, one seed for `single` and `lstm`; level within 1.00%"
    assert wikitext in text
    table = short_answer.table()
    assert "| PTB, 2 x 650 | the concat layer alone | `single-zero-context` against `lstm` | -4.2% | 1 + 2 |" in table
    assert "| 1.00%, the floor (seeds span 0.40%) | ahead |" in table


def test_benchmarks_import_no_cycle():
    """benchmarks/ modules import each other downwards only (rows -> table/report, timing -> speed
    scripts), each as ``benchmarks.NAME``. A package (report/, gpu/) counts as one module, its files'
    imports together (their imports of one another stay inside it)."""
    import ast

    files = {p.parent.name: sorted(p.parent.glob("*.py")) for p in (ROOT / "benchmarks").glob("*/__init__.py")}
    files.update({p.stem: [p] for p in (ROOT / "benchmarks").glob("*.py") if p.stem not in files})
    imports = {}
    for name, paths in files.items():
        found = set()
        for tree in (ast.parse(path.read_text(encoding="utf-8")) for path in paths):
            found |= {
                a.name.split(".")[1]
                for n in ast.walk(tree)
                if isinstance(n, ast.Import)
                for a in n.names
                if a.name.startswith("benchmarks.")
            }
            found |= {
                n.module.split(".")[1]
                for n in ast.walk(tree)
                if isinstance(n, ast.ImportFrom) and n.module and n.module.startswith("benchmarks.")
            }
        imports[name] = (found & set(files)) - {name}
    assert "report" in imports and imports["report"] >= {"rows", "grid_edge"}  # the package, read as one

    def reaches(start, goal, seen=()):
        return any(n == goal or (n not in seen and reaches(n, goal, (*seen, n))) for n in imports[start])

    cycles = sorted(name for name in files if reaches(name, name))
    assert not cycles, f"import cycle through benchmarks/{cycles}"


def test_wikitext2_statement_states_the_goals_from_the_figures():
    """The generated WikiText-2 statement: each goal's verdict follows the numbers (met / not met),
    and a result against attention is said as plainly as one for it."""
    wt2_statement = benchmarks_module("report").wikitext_2.statement

    def row(test, **more):
        return {
            "valid_ppl": test + 3,
            "test_ppl": test,
            "params": 5e6,
            "train_minutes": 100,
            "epochs": 4,
            **more,
        }

    results = {
        "lstm": row(120.0),
        "single": row(121.0),
        "lstm-stream": row(100.0, test_ppl_cache=70.0, test_ppl_dynamic=80.0, test_ppl_cache_dynamic=65.0),
        "ps-lstm-stream": row(95.0, test_ppl_cache=80.0, test_ppl_dynamic=78.0, test_ppl_cache_dynamic=69.0),
        "fairseq-lstm_lm": row(104.0),
    }
    text = wt2_statement(results)
    assert (
        "Two things at once, which no row separates (the concat layer; the attention (single score)), WikiText-2, "
        "2 x 200: `single` against `lstm` (valid / test) 124.0 / 121.0 against 123.0 / 120.0 (+0.8% / +0.8%): level "
        "on valid and test." in text
    )
    assert "The neural cache (settings chosen on valid): LSTM (ours, `alm_lstm`), document streams -30.0%" in text
    assert "(1 of 2 stream rows)" in text and "Goal >= 25% below each stream row's test ppl: not met" in text
    assert "Goal >= 15% below each stream row's test ppl: met (2 of 2 stream rows)" in text
    assert "The Pointer Sentinel-LSTM's goal, >= 10% ahead of the stream LSTM on test (-5.0%): not met." in text
    assert (
        "with the cache and dynamic evaluation, test 65.0 (-45.8% against the sentence-level LSTM; goal >= 40% "
        "below: met)" in text
    )
    assert "our stream LSTM's goal is to be at or ahead on test (+4.0% for the peer): met." in text
    results["single"] = row(100.0)
    assert "(-16.3% / -16.7%): ahead on valid and test, credited to no one of them alone." in wt2_statement(results)
    # a pick at the grid's strongest adaptation is flagged (lr 1 of 0.3, 1), one inside it is not
    results["lstm-stream"].update(
        dynamic={"lr": 1.0, "decay": 0.03}, valid_ppl_dynamic=90.0, valid_ppl_cache_dynamic=70.0
    )
    results["ps-lstm-stream"].update(dynamic={"lr": 0.3, "decay": 0.03}, valid_ppl_dynamic=92.0)
    text = wt2_statement(results)
    assert "for LSTM (ours, `alm_lstm`), document streams (the largest lr)." in text
    assert text.count("the largest lr") == 1 and "the smallest decay" not in text
    assert "Not tried beyond the grid yet for LSTM (ours, `alm_lstm`), document streams: " in text
    # grid_edge.py's probe: a step beyond that loses on valid lets the pick stand
    picks = benchmarks_module("grid_edge").picks
    point = {"lr": 3.0, "decay": 0.03, "valid_ppl_dynamic": 95.0, "valid_ppl_cache_dynamic": 72.0}
    probe = {"lstm-stream": {"picks": picks(results["lstm-stream"]), "beyond": [point]}}
    text = wt2_statement(results, probe)
    assert "document streams: lr 3 decay 0.03 95.0 / 72.0 against the picks' 90.0 / 70.0." in text
    assert "for LSTM (ours, `alm_lstm`), document streams: their grid picks stand." in text
    assert "Not tried beyond" not in text
    # a step that wins on valid but not on test is said as such; a row probed for other picks is not probed
    point.update(valid_ppl_dynamic=88.0, dynamic={"lr": 3.0, "decay": 0.03}, test_ppl_dynamic=82.0)
    text = wt2_statement(results, probe)
    assert (
        "**A step beyond wins on valid** (one step was tried; further is untried): LSTM (ours, "
        "`alm_lstm`), document streams at lr 3 decay 0.03: valid "
        "88.0 against 90.0, test 82.0 against the table's 80.0 (+2.5%, **not better on test**)." in text
    )
    assert "picks stand" not in text
    results["ps-lstm-stream"].update(
        dynamic={"lr": 1.0, "decay": 0.03}, valid_ppl_dynamic=92.0, valid_ppl_cache_dynamic=71.0
    )
    probe["ps-lstm-stream"] = {"picks": {"dynamic": {"lr": 0.3, "decay": 0.03, "valid_ppl": 92.0}}, "beyond": []}
    assert "Not tried beyond the grid yet for Pointer Sentinel-LSTM" in wt2_statement(results, probe)


def test_grid_edge_probes_one_step_beyond_and_scores_test_only_for_a_winner(monkeypatch):
    """benchmarks/grid_edge.py: the points one ladder step past the grid's edge (none inside it), for
    either pick, and test is read only where a point beats that pick on valid, with its own flags."""
    edge = benchmarks_module("grid_edge")
    from benchmarks.rows import WIKITEXT2  # lr 0.3, 1 x decay 0.01, 0.03

    assert edge.beyond(WIKITEXT2.declared_grid, {"lr": 1.0, "decay": 0.01}) == [(3.0, 0.01), (1.0, 0.003)]
    assert edge.beyond(WIKITEXT2.declared_grid, {"lr": 1.0, "decay": 0.03}) == [(3.0, 0.03)]
    assert edge.beyond(WIKITEXT2.declared_grid, {"lr": 0.3, "decay": 0.03}) == []
    assert edge.step(3000.0, up=True) is None and edge.step(0.001, up=False) == 0.0003
    row = {
        "dynamic": {"lr": 1.0, "decay": 0.03},
        "both": {"lr": 0.3, "decay": 0.01},
        "valid_ppl_dynamic": 90.0,
        "valid_ppl_cache_dynamic": 81.0,
    }
    assert edge.points_to_probe(WIKITEXT2, row) == [(3.0, 0.03), (0.3, 0.003)]  # each pick's own step
    valid = {(3.0, 0.03): (95.0, 80.0), (0.3, 0.003): (88.0, 82.0)}  # (alone, with the cache) on valid
    monkeypatch.setattr(
        edge,
        "grid_point",
        lambda corpus, checkpoint, lr, decay, threads, device: (
            {
                "dynamic": {"lr": lr, "decay": decay, "ppl": valid[lr, decay][0], "segment": 20},
                "both": {
                    "lr": lr,
                    "decay": decay,
                    "ppl": valid[lr, decay][1],
                    "segment": 20,
                    "window": 2000,
                    "theta": 0.7,
                    "lambda": 0.3,
                },
            },
            0,
        ),
    )
    scored = []
    monkeypatch.setattr(
        edge,
        "eval_lm_ppl",
        lambda corpus, row, checkpoint, split, flags, threads, device: scored.append((split, flags)) or 70.0,
    )
    found = edge.probe(WIKITEXT2, "lstm-stream", row, "checkpoint_best.pt", 1)
    up, down = found["beyond"]
    assert "test_ppl_dynamic" not in up and up["test_ppl_both"] == 70.0  # 80 < 81 with the cache only
    assert down["test_ppl_dynamic"] == 70.0 and "test_ppl_both" not in down  # 88 < 90 alone only
    assert scored == [
        (
            "test",
            [
                "--dynamic-eval-lr",
                "3.0",
                "--dynamic-eval-decay",
                "0.03",
                "--dynamic-eval-segment",
                "20",
                "--neural-cache-window",
                "2000",
                "--neural-cache-theta",
                "0.7",
                "--neural-cache-lambda",
                "0.3",
            ],
        ),
        ("test", ["--dynamic-eval-lr", "0.3", "--dynamic-eval-decay", "0.003", "--dynamic-eval-segment", "20"]),
    ]
    assert found["picks"] == {
        "dynamic": {"lr": 1.0, "decay": 0.03, "valid_ppl": 90.0},
        "both": {"lr": 0.3, "decay": 0.01, "valid_ppl": 81.0},
    }


def test_grid_edge_refuses_an_unknown_row():
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.grid_edge", "--rows", "lstm-strem", "--save-dir", "nowhere"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert (
        proc.returncode == 1 and "unknown rows ['lstm-strem'] for --corpus wikitext-2; choose from lstm," in proc.stderr
    )


def test_test_time_flags_of_each_choice(monkeypatch):
    """row_scoring.py scores test with each choice's eval-lm flags: the cache's, dynamic evaluation's (a stream
    row steps every segment, a sentence row every sentence) and both (dynamic's, then the cache's)."""
    scoring = benchmarks_module("row_scoring")
    from benchmarks.row_commands import CPU
    from benchmarks.rows import WIKITEXT2

    cache = {"window": 500, "theta": 0.3, "lambda": 0.1}
    chosen = {
        **cache,
        "ppl_with_cache": 80.0,
        "dynamic": {"lr": 1.0, "decay": 0.01, "segment": 20, "ppl": 85.0},
        "both": {"lr": 0.3, "decay": 0.03, "segment": 20, "ppl": 75.0, "window": 2000, "theta": 1.0, "lambda": 0.2},
    }
    monkeypatch.setattr(scoring, "combine_grid", lambda points: (chosen, 0))
    scored = []
    monkeypatch.setattr(
        scoring,
        "eval_lm_ppl",
        lambda corpus, row, checkpoint, split, flags, threads, device: scored.append((split, flags)) or 70.0,
    )
    result = scoring.evaluate_test_time(WIKITEXT2, WIKITEXT2.rows["lstm-stream"], "checkpoint_best.pt", [], 1, CPU)
    cache_flags = ["--neural-cache-window", "500", "--neural-cache-theta", "0.3", "--neural-cache-lambda", "0.1"]
    # valid is not read again: its figures with each option are the grid's
    assert scored[0] == ("test", cache_flags) and [s for s, _ in scored] == ["test"] * 3
    assert result["valid_ppl_cache"] == 80.0 and result["valid_ppl_dynamic"] == 85.0
    assert result["test_ppl_cache_dynamic"] == 70.0 and result["valid_ppl_cache_dynamic"] == 75.0
    assert result["dynamic_eval_grid"] == {"lr": [0.3, 1.0], "decay": [0.01, 0.03]}  # the grid it chose from
    flags = [f for _, f in scored]
    assert flags[1:] == [
        ["--dynamic-eval-lr", "1.0", "--dynamic-eval-decay", "0.01", "--dynamic-eval-segment", "20"],
        [
            "--dynamic-eval-lr",
            "0.3",
            "--dynamic-eval-decay",
            "0.03",
            "--dynamic-eval-segment",
            "20",
            "--neural-cache-window",
            "2000",
            "--neural-cache-theta",
            "1.0",
            "--neural-cache-lambda",
            "0.2",
        ],
    ]
    scoring.evaluate_test_time(WIKITEXT2, WIKITEXT2.rows["lstm"], "checkpoint_best.pt", [], 1, CPU)  # a sentence row
    assert scored[5][1] == [
        "--dynamic-eval-lr",
        "0.3",
        "--dynamic-eval-decay",
        "0.03",
        "--neural-cache-window",
        "2000",
        "--neural-cache-theta",
        "1.0",
        "--neural-cache-lambda",
        "0.2",
    ]


def test_a_second_seeds_row_trains_its_twin_with_another_seed(monkeypatch, tmp_path):
    """ptb-paper's seed rows: the twin's arguments, fairseq-train's --seed (its last) 2 and 3."""
    table = benchmarks_module("table")
    from benchmarks.row_commands import CPU
    from benchmarks.rows import PTB_PAPER

    trained = []
    monkeypatch.setattr(table, "fairseq", lambda tool, *args, **kwargs: trained.append(list(args)))
    for name in ("single", "single-seed2", "single-seed3"):
        table.train_row(PTB_PAPER, PTB_PAPER.rows[name], str(tmp_path), 1, str(tmp_path / "log"), 20, CPU)
    seeds = [args[len(args) - args[::-1].index("--seed")] for args in trained]  # the value after the last --seed
    assert seeds == ["1", "2", "3"]
    assert PTB_PAPER.rows["single-seed3"].args == PTB_PAPER.rows["single"].args


def test_character_statement_follows_the_figures():
    """The generated character-model statement: each claim's verdict follows the bpc (better / not
    better, the WikiText-2-against-PTB claim holds or not), and a row not finished is named with the
    command that runs it, never as a table row."""
    char_tables = benchmarks_module("report").char_tables

    def row(bpc):
        return {
            "valid_bpc": bpc + 0.02,
            "test_bpc": bpc,
            "valid_ppl": 300.0,
            "test_ppl": 290.0,
            "best_epoch": 6,
            "epochs": 6,
            "params": 1.6e6,
            "train_minutes": 80,
        }

    results = {
        "PTB": {"char-lstm": row(1.60), "hclm": row(1.50), "hclm-cache": row(1.48)},
        "WikiText-2": {"hclm": row(1.90), "hclm-cache": row(1.92)},
    }
    text = char_tables.statement(results)
    assert "(5 of 6 rows, generated from the JSON)" in text
    assert "HCLM against the character LSTM: PTB test 1.5000 against 1.6000 bpc (-6.2%; the paper -4.1%)" in text
    assert (
        "word ppl 290.0 against 290.0: ahead on PTB (no character row has a second seed: ahead or behind past" in text
    )
    assert "WikiText-2 test 1.9200 against 1.9000 bpc (+1.1%; the paper -10.2%)" in text
    assert ": ahead on PTB; behind on WikiText-2 (no character row" in text
    assert "here +1.1% against -1.3% (the paper -10.2% against -2.3%): **it does not hold here**." in text
    results["PTB"]["hclm-cache"] = row(1.55)  # the cache worse on both, less so on WikiText-2: no gain to compare
    text = char_tables.statement(results)
    assert ": behind on PTB and WikiText-2 (no character row" in text and "+1.1% against +3.3%" in text
    assert "**it does not hold here**" in text
    results["WikiText-2"]["hclm-cache"], results["PTB"]["hclm-cache"] = row(1.70), row(1.48)
    assert "-10.5% against -1.3% (the paper -10.2% against -2.3%): it holds here." in char_tables.statement(results)
    assert (
        "Not in the tables yet, queued: WikiText-2 char-lstm (`python -m benchmarks.table --corpus "
        "wikitext-2-chars --rows char-lstm --threads 1`)"
    ) in text
    results["PTB"]["hclm"]["bpc_per_epoch"] = [1.60, 1.55, 1.52]
    assert (
        "Valid bpc was still falling in the last epoch (its change from the one before) for PTB HCLM (`hclm`) "
        "(-0.0300): the epoch budget"
    ) in char_tables.statement(results)
    table = char_tables.table(char_tables.CORPORA["WikiText-2"], results["WikiText-2"])
    assert "char LSTM" not in table and table.count("\n") == 3


def test_the_cache_rows_copy_lists_come_from_their_json(monkeypatch):
    """row_scoring.py asks alm-cache-posterior for the cache row's lists (Table 7 and Table 8's rare-in-train
    filter) and keeps them in the row's JSON; the docs show them side by side, a shorter list ending in
    blank cells, with corpus words that markdown would eat (``<unk>``, ``|``) escaped."""
    scoring = benchmarks_module("row_scoring")
    char_tables = benchmarks_module("report").char_tables
    from benchmarks.row_commands import CPU
    from benchmarks.rows import WIKITEXT2_CHARS

    def validate(tool, *args, threads=None):  # a model with a cache logs its use
        split = args[args.index("--valid-subset") + 1]
        cache = {f"{split}_cache_use": "0.1"} if "cache" in args[args.index("--path") + 1] else {}
        return f"| {split} | " + json.dumps({f"{split}_bpc": "1.5", f"{split}_ppl": "250.0", **cache})

    monkeypatch.setattr(scoring, "fairseq", validate)
    asked = []
    tables = [
        {
            "title": "every",
            "types": 900,
            "copied": [["<unk>", 0.9, 30], ["Gore", 0.8, 4]],
            "spelled": [["17", 0.0, 5], ["a|b", 0.01, 2]],
        },
        {"title": "rare", "types": 40, "copied": [["Nerva", 0.97, 3]], "spelled": [["440", 0.005, 2]]},
    ]
    monkeypatch.setattr(
        scoring,
        "plugin_tool",
        lambda module, *args, json_out, threads: (
            asked.append((module, args))
            or {"mean_posterior": 0.12, "bpc": 1.5, "rare_in_train": 5, "tables": tables, "words": 10}
        ),
    )
    result = scoring.evaluate(WIKITEXT2_CHARS, WIKITEXT2_CHARS.rows["hclm-cache"], "cache/checkpoint_best.pt", 1, CPU)
    module, args = asked[0]
    assert module == "cache_posterior" and args[args.index("--rare-in-train") + 1] == "5"
    assert args[args.index("--gen-subset") + 1] == "test" and result["test_cache_posterior"]["tables"] == tables
    assert "test_cache_posterior" not in scoring.evaluate(
        WIKITEXT2_CHARS, WIKITEXT2_CHARS.rows["hclm"], "hclm/checkpoint_best.pt", 1, CPU
    )
    text = char_tables.copy_lists("WikiText-2", result["test_cache_posterior"])
    rows = text.split("|---" * 12 + "|\n")[1].splitlines()
    assert rows[:2] == [
        "| &lt;unk&gt; | 0.900 | 30 | 17 | 0.000 | 5 | Nerva | 0.970 | 3 | 440 | 0.005 | 2 |",
        "| Gore | 0.800 | 4 | a\\|b | 0.010 | 2 |  |  |  |  |  |  |",
    ]
    assert "(900 repeated types)" in text and "< 5 in train (40 types)" in text and "mean over every word 0.120" in text
    assert char_tables.markdown_text("a|b") == "a\\|b"


def test_table_takes_the_streams_from_the_corpus():
    """table.py trains a corpus's stream and character rows on its own number of streams (the
    paper's 25 on PTB, 10 on WikiText-2, 20 for the word streams) and scores every one as one stream."""
    from benchmarks.row_commands import CPU, task_args
    from benchmarks.rows import PTB, PTB_CHARS, WIKITEXT2_CHARS

    def batch(corpus, row, training):
        return task_args(corpus, corpus.rows[row], training, CPU)[
            task_args(corpus, corpus.rows[row], training, CPU).index("--batch-size") + 1
        ]

    assert [batch(PTB_CHARS, "hclm", True), batch(WIKITEXT2_CHARS, "hclm", True), batch(PTB, "lstm-stream", True)] == [
        "25",
        "10",
        "20",
    ]
    assert {batch(PTB_CHARS, "hclm-cache", False), batch(PTB, "lstm-stream", False)} == {"1"}


def benchmarks_module(name):
    import importlib

    return importlib.import_module(f"benchmarks.{name}")


def begin_end(marker):
    return f"<!-- {marker}:begin -->", f"<!-- {marker}:end -->"


def test_a_killed_row_resumes_after_its_finished_grid(tmp_path):
    """benchmarks/row_scoring.py reuses a row's finished alm-cache-grid choice only if it read the current
    checkpoint (written after it) with the windows and dynamic points asked for now."""
    import json

    finished_grid = benchmarks_module("row_scoring").finished_grid
    checkpoint, grid = tmp_path / "checkpoint_best.pt", tmp_path / "cache_grid.json"
    checkpoint.write_bytes(b"weights")
    record = {
        "split": "valid",
        "grid": [{"window": w, "theta": 0.1, "lambda": 0.1, "ppl": 90.0} for w in (100, 500)],
        "dynamic_grid": [{"lr": lr, "decay": 0.01, "ppl": 85.0} for lr in (0.3, 1.0)],
    }
    grid.write_text(json.dumps(record))
    os.utime(checkpoint, (1, 1))  # the checkpoint is older than the grid
    assert finished_grid(grid, checkpoint, [100.0, 500.0], [0.3, 1.0], [0.01]) == record
    assert finished_grid(grid, checkpoint, [100.0, 500.0, 2000.0], [0.3, 1.0], [0.01]) is None  # other windows
    assert finished_grid(grid, checkpoint, [100.0, 500.0], [0.3, 1.0], [0.01, 0.03]) is None  # other points
    assert finished_grid(tmp_path / "none.json", checkpoint, [100.0, 500.0], [0.3, 1.0], [0.01]) is None
    os.utime(checkpoint, None)
    os.utime(grid, (1, 1))  # trained again after the grid ran
    assert finished_grid(grid, checkpoint, [100.0, 500.0], [0.3, 1.0], [0.01]) is None


def test_a_killed_grid_resumes_after_its_finished_points(monkeypatch, tmp_path):
    """row_scoring.py runs alm-cache-grid once per learning rate where it has room: a row killed in its grid
    reruns only the runs without a finished JSON, and the choices combine as one grid's (the best point wins)."""
    import dataclasses
    import json
    import subprocess

    scoring = benchmarks_module("row_scoring")
    from benchmarks.row_commands import CPU
    from benchmarks.rows import WIKITEXT2

    corpus = dataclasses.replace(WIKITEXT2, cache_windows="100,500", dynamic_lrs="0.3,1", dynamic_decays="0.01")
    checkpoint = tmp_path / "checkpoint_best.pt"
    checkpoint.write_bytes(b"weights")
    os.utime(checkpoint, (1, 1))

    def record(lr, ppl):
        return {
            "split": "valid",
            "window": 500,
            "theta": 0.3,
            "lambda": 0.1,
            "ppl_with_cache": 80.0,
            "grid": [{"window": w, "theta": 0.3, "lambda": 0.1, "ppl": 80.0} for w in (100, 500)],
            "dynamic_grid": [{"lr": lr, "decay": 0.01, "ppl": ppl}],
            "dynamic": {"lr": lr, "decay": 0.01, "ppl": ppl},
            "both": {"lr": lr, "decay": 0.01, "ppl": ppl - 5},
        }

    (tmp_path / "cache_grid_lr0.3_decay0.01.json").write_text(json.dumps(record(0.3, 70.0)))  # finished before a kill
    ran = []

    def fake_grid(command, **kwargs):
        lr = float(command[command.index("--dynamic-lrs") + 1])
        ran.append(lr)
        with open(command[command.index("--json") + 1], "w") as f:
            json.dump(record(lr, 60.0), f)
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(scoring.subprocess, "run", fake_grid)
    chosen, reused = scoring.combine_grid(
        [scoring.grid_run(corpus, str(checkpoint), *run, 1, CPU) for run in scoring.grid_runs(corpus, 2)]
    )
    assert ran == [1.0] and reused == 1
    assert chosen["dynamic"]["lr"] == 1.0 and chosen["both"]["ppl"] == 55.0 and chosen["window"] == 500
    assert [p["lr"] for p in chosen["dynamic_grid"]] == [0.3, 1.0]


def test_the_grid_runs_as_many_alm_cache_grid_runs_as_there_is_room_for(monkeypatch, tmp_path):
    """row_scoring.py splits the grid's learning rates over the scoring commands left beside the static ones
    (at least one run, each with every decay), and a run of several points is resumed as one."""
    import dataclasses
    import json
    import subprocess

    scoring = benchmarks_module("row_scoring")
    from benchmarks.row_commands import CPU
    from benchmarks.rows import PTB_PAPER, WIKITEXT2

    assert scoring.grid_runs(PTB_PAPER, 5) == [([lr], [0.01]) for lr in (0.1, 0.3, 1.0, 3.0)]
    assert scoring.grid_runs(PTB_PAPER, 2) == [([0.1, 0.3], [0.01]), ([1.0, 3.0], [0.01])]
    assert scoring.grid_runs(PTB_PAPER, -1) == [([0.1, 0.3, 1.0, 3.0], [0.01])]  # the dry run's 2 jobs
    assert scoring.grid_runs(WIKITEXT2, 3) == [([0.3], [0.01, 0.03]), ([1.0], [0.01, 0.03])]
    corpus = dataclasses.replace(WIKITEXT2, cache_windows="100", dynamic_lrs="0.3,1", dynamic_decays="0.01")
    checkpoint = tmp_path / "checkpoint_best.pt"
    checkpoint.write_bytes(b"weights")
    os.utime(checkpoint, (1, 1))
    ran = []

    def fake_grid(command, **kwargs):
        ran.append(command[command.index("--dynamic-lrs") + 1])
        points = [{"lr": float(lr), "decay": 0.01, "ppl": 60.0} for lr in ran[-1].split(",")]
        with open(command[command.index("--json") + 1], "w") as f:
            json.dump({"split": "valid", "grid": [{"window": 100}], "dynamic_grid": points}, f)
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(scoring.subprocess, "run", fake_grid)
    assert scoring.grid_run(corpus, str(checkpoint), [0.3, 1.0], [0.01], 1, CPU)[1] == 0
    assert ran == ["0.3,1"] and (tmp_path / "cache_grid_lr0.3-1_decay0.01.json").exists()
    assert scoring.grid_run(corpus, str(checkpoint), [0.3, 1.0], [0.01], 1, CPU)[1] == 2  # both points found
    assert ran == ["0.3,1"]


def test_tools_md_names_only_paths_that_exist_or_says_they_do_not_yet():
    """A path docs/tools.md names that the repository lacks (a folder run.sh writes on the machine it runs on)
    is said to be not in the repository."""
    text = open(os.path.join(ROOT, "docs", "tools.md"), encoding="utf-8").read()
    for paragraph in text.split("\n\n"):
        for path in re.findall(r"`((?:alm_plugin|benchmarks|scripts|tests|docs)/[\w./-]*)`", paragraph):
            if not os.path.exists(os.path.join(ROOT, path)):
                assert "not in the repository" in " ".join(paragraph.split()), (path, paragraph)
