"""Every generated table, statement and picture of docs/benchmarks.md, from the rows' JSON
(``benchmarks/results/``). Each block between a page's ``<!-- MARKER:begin -->`` and
``<!-- MARKER:end -->`` has a module of its own, named after its marker:

    ptb_table          full PTB, sentence level: attention against an equal LSTM (and its picture)
    train_speed        the training step against a bare nn.LSTM LM
    host_overhead      the host's share of a fairseq training update and its reads of device values
    ptb_paper          the paper's scale: 2 x 650 on a GPU beside the paper's and our 2 x 200 rows
    ptb_stream         full PTB as document streams, the neural cache, dynamic evaluation (and its picture)
    adaptive_softmax   the adaptive softmax's speed and quality
    wikitext_2         WikiText-2 beside the paper's Table 2 (wikitext_2_choices: the slices that chose its settings)
    ptb_choices        the dropout layout and the recipe's choices, one at a time on a PTB slice
    char_tables        the character models beside Kawakami et al.'s

They share ``statements`` (relative changes, where a row stands, a goal's verdict) and ``tables``
(the results' JSON, the common cells). Run it from the repository root:

    python -m benchmarks.report                  # print every block, draw the pictures
    python -m benchmarks.report --update-docs    # and write the blocks between their markers

It reads the rows' declarations (``rows.py``) and the JSON, nothing else: what ``table.py``,
``gpu/run.sh`` and the speed scripts wrote is the whole record.
"""
import argparse
import os
import sys

from benchmarks.result_files import ResultError
from benchmarks.rows import PTB, PTB_PAPER, ROOT

from . import (adaptive_softmax, char_tables, host_overhead, ptb_choices, ptb_paper, ptb_stream, ptb_table,
               train_speed, wikitext_2)

PAGE = os.path.join(ROOT, "docs", "benchmarks.md")


def blocks(ptb_results_dir=None, paper_results_dir=None, draw=True):
    """{marker: text} for every generated block of docs/benchmarks.md; ``draw``: the pictures too.
    ``ptb_results_dir``, ``paper_results_dir``: read the full-PTB rows' (2 x 200) or the paper-scale
    rows' (2 x 650) JSON from there instead of ``benchmarks/results/<corpus>``."""
    results = PTB.load(ptb_results_dir)
    if results and draw:
        ptb_table.draw(results)
        ptb_stream.draw(results)
    return {"ptb-table": ptb_table.block(results),
            "train-speed": train_speed.block(),
            "host-overhead": host_overhead.block(),
            "ptb-paper": ptb_paper.block(PTB_PAPER.load(paper_results_dir), results),
            "ptb-stream": ptb_stream.block(results),
            "adaptive-softmax": adaptive_softmax.block(results),
            "wikitext-2": wikitext_2.block(),
            "ptb-choices": ptb_choices.block(),
            "char-tables": char_tables.block()}


def fill_markers(path, marker, text):
    """Replace what lies between ``<!-- MARKER:begin -->`` and ``<!-- MARKER:end -->`` in ``path``."""
    begin, end = f"<!-- {marker}:begin -->", f"<!-- {marker}:end -->"
    with open(path) as f:
        page = f.read()
    if begin not in page or end not in page:
        sys.exit(f"{os.path.relpath(path)} has no {begin} ... {end} block to fill")
    head, rest = page.split(begin, 1)
    _, tail = rest.split(end, 1)
    with open(path, "w") as f:
        f.write(f"{head}{begin}\n{text}\n{end}{tail}")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.report", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--update-docs", action="store_true", help="write every block into docs/benchmarks.md "
                                                                   "between its markers")
    parser.add_argument("--ptb-results", help="read the PTB rows' JSON from here (default: benchmarks/results/ptb)")
    parser.add_argument("--paper-results", help="read the paper-scale rows' JSON from here (default: "
                                                "benchmarks/results/ptb-paper)")
    args = parser.parse_args(argv)
    try:  # every results file read and checked (result_files.py) before a picture or the page is written
        blocks(args.ptb_results, args.paper_results, draw=False)
    except ResultError as error:
        sys.exit(f"benchmarks.report: error: {error}")
    generated = blocks(args.ptb_results, args.paper_results)
    for marker, text in generated.items():
        print(f"<!-- {marker} -->\n{text}\n")
    if args.update_docs:
        for marker, text in generated.items():
            fill_markers(PAGE, marker, text)
