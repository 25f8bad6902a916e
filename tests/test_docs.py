"""The README and docs/ stay true to the tree: links resolve, the layout map is complete.

Fast: reads files only (no fairseq run; the root is conftest.py's).
"""

import os
import re
import unicodedata
from pathlib import Path

import conftest
import pytest
from conftest import benchmarks_module

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


def begin_end(marker):
    return f"<!-- {marker}:begin -->", f"<!-- {marker}:end -->"


def test_tools_md_names_only_paths_that_exist_or_says_they_do_not_yet():
    """A path docs/tools.md names that the repository lacks (a folder run.sh writes on the machine it runs on)
    is said to be not in the repository."""
    text = open(os.path.join(ROOT, "docs", "tools.md"), encoding="utf-8").read()
    for paragraph in text.split("\n\n"):
        for path in re.findall(r"`((?:alm_plugin|benchmarks|scripts|tests|docs)/[\w./-]*)`", paragraph):
            if not os.path.exists(os.path.join(ROOT, path)):
                assert "not in the repository" in " ".join(paragraph.split()), (path, paragraph)
