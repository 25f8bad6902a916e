"""Every generated table, statement and picture of docs/benchmarks.md, from the rows' declarations
(``rows.py``) and their JSON (``benchmarks/results/``), nothing else. Each block between a page's
``<!-- MARKER:begin -->`` and ``<!-- MARKER:end -->`` has a module of its own, named after its marker;
they share ``statements`` (the wording of changes, standings and goals) and ``tables`` (the JSON, the
common cells, the mark of a row trained with the old dropout layout). Every results file is read and
checked and the whole page filled in memory (each marker once, begin above end) before a picture or
the page is written; each is then written once through ``alm_plugin.cli.output_files``, or not at all.
Run it from the repository root:

    python -m benchmarks.report                  # print every block (nothing written)
    python -m benchmarks.report --update-docs    # write the blocks between their markers, draw the pictures
"""

import argparse
import logging
import os
import re
import sys

from benchmarks.result_files import ResultError
from benchmarks.rows import CORPORA, PTB, PTB_PAPER, ROOT

from . import (
    adaptive_softmax,
    char_speed,
    char_tables,
    eval_speed,
    fairseq_speed,
    gpu_timing,
    host_overhead,
    ptb_choices,
    ptb_paper,
    ptb_paper_stream,
    ptb_slice,
    ptb_stream,
    ptb_table,
    quickstart_output,
    setup_cost,
    short_answer,
    step_profile,
    train_speed,
    translation,
    translation_pairs,
    wikitext_2,
)

PAGE = os.path.join(ROOT, "docs", "benchmarks.md")
README = os.path.join(ROOT, "README.md")
TOOLS = os.path.join(ROOT, "docs", "tools.md")


def blocks(ptb_results_dir=None, paper_results_dir=None, draw=True):
    """{marker: text} for every block of docs/benchmarks.md (``draw``: the pictures too), the PTB and
    paper-scale rows' JSON read from the folders given, if any."""
    results = PTB.load(ptb_results_dir)
    if results and draw:
        draw_pictures(results)
    return {
        "ptb-table": ptb_table.block(results),
        "fairseq-speed": fairseq_speed.block(),
        "train-speed": train_speed.block(),
        "eval-speed": eval_speed.block(),
        "step-profile": step_profile.block(),
        "host-overhead": host_overhead.block(),
        "gpu-timing": gpu_timing.block(),
        "ptb-paper": ptb_paper.block(paper := PTB_PAPER.load(paper_results_dir), results),
        "ptb-paper-stream": ptb_paper_stream.block(paper),
        "ptb-stream": ptb_stream.block(results),
        "adaptive-softmax": adaptive_softmax.block(results),
        "wikitext-2": wikitext_2.block(),
        "ptb-choices": ptb_choices.block(),
        "ptb-slice": ptb_slice.block(),
        "char-speed": char_speed.block(),
        "char-tables": char_tables.block(),
        "translation": translation.block(),
        "translation-pairs": translation_pairs.block(draw_picture=draw),
        "short-answer": short_answer.text(),
    }


def other_pages():
    """{page: {marker: text}}: the generated blocks of the pages besides docs/benchmarks.md."""
    return {
        README: {
            "setup-cost": setup_cost.block(),
            "quickstart-output": quickstart_output.block(),
            "short-answer": short_answer.table(),
            "rescoring-answer": translation_pairs.answer(),
        },
        TOOLS: {"installs": setup_cost.installs(), "rescoring-answer": translation_pairs.answer()},
    }


# a corpus's records that are no row: read by a block by name (result_json), or kept beside the rows
NOT_ROWS = {"dynamic-edge.json", "cost.json"}


def undeclared(ptb_results_dir=None, paper_results_dir=None):
    """One line for each JSON file in a folder of rows the docs read that is no declared row
    (``rows.py``): a row renamed or never declared, its figures left out of the docs."""
    folders = {corpus.name: (corpus, corpus.results) for corpus in CORPORA.values()}
    folders[PTB.name] = (PTB, ptb_results_dir or PTB.results)
    folders[PTB_PAPER.name] = (PTB_PAPER, paper_results_dir or PTB_PAPER.results)
    return [
        f"benchmarks.report: note: {os.path.join(folder, name)} is the results of no row of {corpus.name} "
        "(benchmarks/rows.py), so the docs leave it out: declare the row, or move the file away"
        for corpus, folder in folders.values()
        if os.path.isdir(folder)
        for name in sorted(os.listdir(folder))
        if name.endswith(".json") and name not in NOT_ROWS and name[: -len(".json")] not in corpus.rows
    ]


def draw_pictures(results):
    """The page's pictures from the PTB rows' JSON, each saved whole (``tables.figure``)."""
    ptb_table.draw(results)
    ptb_stream.draw(results)


class PageError(Exception):
    """A page whose markers cannot be filled: one line, the marker and how to mend it."""


def filled(page, generated, name):
    """``page`` (the text of the file ``name``) with each block of ``generated`` ({marker: text})
    between its ``<!-- MARKER:begin -->`` and ``<!-- MARKER:end -->``; each marker must be there
    exactly once, the begin above the end, and no block inside another (the page's markers, known or
    not, pair up begin, end, begin, end, ...), or nothing is filled (``PageError``)."""
    opened = None
    for found in re.finditer(r"<!-- (\S+):(begin|end) -->", page):
        marker, side = found.groups()
        if side == "begin" and opened is not None:
            raise PageError(
                f"{name} has <!-- {marker}:begin --> inside the block {opened} (filling {opened} would drop it): "
                "mend the page (git checkout it); it was left unchanged"
            )
        if side == "end" and opened not in (None, marker):
            raise PageError(
                f"{name} has <!-- {marker}:end --> inside the block {opened} (filling {opened} would drop it): "
                "mend the page (git checkout it); it was left unchanged"
            )
        opened = marker if side == "begin" else None
    for marker, text in generated.items():
        begin, end = f"<!-- {marker}:begin -->", f"<!-- {marker}:end -->"
        counts = page.count(begin), page.count(end)
        if counts != (1, 1):
            raise PageError(
                f"{name} holds {begin} {counts[0]} time(s) and {end} {counts[1]} time(s), each wanted once: "
                "mend the page (git checkout it); it was left unchanged"
            )
        if page.index(end) < page.index(begin):
            raise PageError(f"{name} has {end} above {begin}: mend the page (git checkout it); it was left unchanged")
        head, rest = page.split(begin)
        page = f"{head}{begin}\n{text}\n{end}{rest.split(end, 1)[1]}"
    return page


def read_page(path):
    """The text of the page ``path``; one that cannot be read is a ``PageError``."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as error:
        raise PageError(f"cannot read {os.path.relpath(path)} ({error}): restore the page (git checkout it)") from None


def update_page(path, generated):
    """Every block of ``generated`` into the page ``path``, built whole in memory and written once
    (``alm_plugin.cli.output_files``: a temporary file renamed onto it), or not at all."""
    from alm_plugin.cli.output_files import write_text

    write_text(path, filled(read_page(path), generated, os.path.relpath(path)))


def fill_markers(path, marker, text):
    """Replace what lies between ``<!-- MARKER:begin -->`` and ``<!-- MARKER:end -->`` in ``path``."""
    update_page(path, {marker: text})


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.report", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--update-docs",
        action="store_true",
        help="write every block into its page between its markers (docs/benchmarks.md, README.md, docs/tools.md)",
    )
    parser.add_argument("--ptb-results", help="read the PTB rows' JSON from here (default: benchmarks/results/ptb)")
    parser.add_argument(
        "--paper-results", help="read the paper-scale rows' JSON from here (default: benchmarks/results/ptb-paper)"
    )
    args = parser.parse_args(argv)
    from alm_plugin.cli.output_files import write_text
    from alm_plugin.errors import UserError

    # importing fairseq (through alm_plugin) sets the root logger to DEBUG (its wav2vec2_classification)
    logging.getLogger().setLevel(logging.WARNING)

    try:  # every results file read and checked (result_files.py), the pages filled in memory, then written
        generated = {PAGE: blocks(args.ptb_results, args.paper_results, draw=False), **other_pages()}
        pages = {
            path: filled(read_page(path), found, os.path.relpath(path)) for path, found in generated.items()
        }  # every marker checked, whether or not the pages are written
        for path, found in generated.items():
            print("\n".join(f"<!-- {os.path.relpath(path)}: {m} -->\n{text}\n" for m, text in found.items()))
        for line in undeclared(args.ptb_results, args.paper_results):
            print(line, file=sys.stderr)
        if args.update_docs:  # nothing is written, the pictures neither, without it
            if results := PTB.load(args.ptb_results):
                draw_pictures(results)
            translation_pairs.draw_rows()
            for path, page in pages.items():
                write_text(path, page)
    except (ResultError, PageError, UserError) as error:
        sys.exit(f"benchmarks.report: error: {error}")
