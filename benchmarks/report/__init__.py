"""Every generated table, statement and picture of docs/benchmarks.md, from the rows' declarations
(``rows.py``) and their JSON (``benchmarks/results/``), nothing else. Each block between a page's
``<!-- MARKER:begin -->`` and ``<!-- MARKER:end -->`` has a module of its own, named after its marker;
they share ``statements`` (the wording of changes, standings and goals) and ``tables`` (the JSON, the
common cells, the mark of a row trained before the dropout fix). Run it from the repository root:

    python -m benchmarks.report                  # print every block, draw the pictures
    python -m benchmarks.report --update-docs    # and write the blocks between their markers
"""

import argparse
import os
import sys

from benchmarks.result_files import ResultError
from benchmarks.rows import PTB, PTB_PAPER, ROOT

from . import (
    adaptive_softmax,
    char_tables,
    host_overhead,
    ptb_choices,
    ptb_paper,
    ptb_paper_stream,
    ptb_slice,
    ptb_stream,
    ptb_table,
    short_answer,
    train_speed,
    wikitext_2,
)

PAGE = os.path.join(ROOT, "docs", "benchmarks.md")


def blocks(ptb_results_dir=None, paper_results_dir=None, draw=True):
    """{marker: text} for every block of docs/benchmarks.md (``draw``: the pictures too), the PTB and
    paper-scale rows' JSON read from the folders given, if any."""
    results = PTB.load(ptb_results_dir)
    if results and draw:
        ptb_table.draw(results)
        ptb_stream.draw(results)
    return {
        "ptb-table": ptb_table.block(results),
        "train-speed": train_speed.block(),
        "host-overhead": host_overhead.block(),
        "ptb-paper": ptb_paper.block(paper := PTB_PAPER.load(paper_results_dir), results),
        "ptb-paper-stream": ptb_paper_stream.block(paper),
        "ptb-stream": ptb_stream.block(results),
        "adaptive-softmax": adaptive_softmax.block(results),
        "wikitext-2": wikitext_2.block(),
        "ptb-choices": ptb_choices.block(),
        "ptb-slice": ptb_slice.block(),
        "char-tables": char_tables.block(),
    }


def fill_markers(path, marker, text):
    """Replace what lies between ``<!-- MARKER:begin -->`` and ``<!-- MARKER:end -->`` in ``path``."""
    begin, end = f"<!-- {marker}:begin -->", f"<!-- {marker}:end -->"
    with open(path) as f:
        page = f.read()
    if begin not in page or end not in page:
        sys.exit(f"{os.path.relpath(path)} has no {begin} ... {end} block to fill")
    head, rest = page.split(begin, 1)
    with open(path, "w") as f:
        f.write(f"{head}{begin}\n{text}\n{end}{rest.split(end, 1)[1]}")


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.report", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--update-docs", action="store_true", help="write every block into docs/benchmarks.md between its markers"
    )
    parser.add_argument("--ptb-results", help="read the PTB rows' JSON from here (default: benchmarks/results/ptb)")
    parser.add_argument(
        "--paper-results", help="read the paper-scale rows' JSON from here (default: benchmarks/results/ptb-paper)"
    )
    args = parser.parse_args(argv)
    try:  # every results file read and checked (result_files.py) before a picture or the page is written
        blocks(args.ptb_results, args.paper_results, draw=False)
    except ResultError as error:
        sys.exit(f"benchmarks.report: error: {error}")
    generated = blocks(args.ptb_results, args.paper_results)
    print("\n".join(f"<!-- {marker} -->\n{text}\n" for marker, text in generated.items()))
    print(f"README.md's short answer:\n{short_answer.text()}")
    if args.update_docs:
        for marker, text in generated.items():
            fill_markers(PAGE, marker, text)
