"""Comments and docstrings say what the code does, in the present tense: no measured figure and no
history ("was", "now", "no longer", an issue number) in a ``#`` comment or a docstring of a ``.py``
under alm_plugin/, benchmarks/ or examples/ (the help texts' FIGURE and HISTORY). What changed is
in the commit log, the figures and the reasoning in docs/. A message the code prints, raises or
writes tells no history either: no "for now", "before the ... fix", "no longer", "used to",
"formerly", "anymore" or issue number in a string of alm_plugin/ or benchmarks/ (a message's "was"
reads what a run or a checkpoint did, and is left to it)."""

import ast
import bisect
import io
import os
import re
import tokenize

import pytest

from tests.conftest import ROOT
from tests.test_help_texts import FIGURE, HISTORY

FOLDERS = ("alm_plugin", "benchmarks", "examples")
MESSAGE_FOLDERS = ("alm_plugin", "benchmarks")
MESSAGE_HISTORY = re.compile(
    r"\bfor now\b|\bbefore the\b[^.;:]{0,40}?\bfix(?:es)?\b|\b(?:no longer|used to|formerly|anymore)\b|\bissues? #?\d+",
    re.I,
)
DEFINITIONS = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def code_files():
    """The ``.py`` files the check reads, relative to the root: examples' text data left out."""
    for folder in FOLDERS:
        for top, dirs, names in os.walk(os.path.join(ROOT, folder)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not (folder == "examples" and d == "text"))
            for name in sorted(names):
                path = os.path.relpath(os.path.join(top, name), ROOT)
                if name.endswith(".py"):
                    yield path


def comments(source):
    """``(line, text)`` for each run of ``#`` comments on consecutive lines, the marks dropped and
    the lines joined by newlines (a phrase may run on into the next line)."""
    runs = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type != tokenize.COMMENT:
            continue
        text = token.string.lstrip("#").strip()
        if runs and runs[-1][0] + runs[-1][1].count("\n") + 1 == token.start[0]:
            runs[-1] = (runs[-1][0], runs[-1][1] + "\n" + text)
        else:
            runs.append((token.start[0], text))
    return runs


def docstrings(tree):
    """``(line, text)`` for the module's, each class's and each function's docstring, as written
    (uncleaned, so a line within it counts from the line its literal starts on)."""
    return [
        (node.body[0].lineno, text)
        for node in ast.walk(tree)
        if isinstance(node, DEFINITIONS) and (text := ast.get_docstring(node, clean=False)) is not None
    ]


def strings(tree):
    """``(line, text)`` for every string constant but the docstrings (read with the comments), the
    f-strings' literal parts among them."""
    docs = {
        id(node.body[0].value) for node in ast.walk(tree) if isinstance(node, DEFINITIONS) and ast.get_docstring(node)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
    ]


def matches(path, line, text, patterns):
    """``path:line: 'match': 'context'`` for each match of ``patterns`` in ``text`` (which starts on
    ``line``): its lines are read as one, each break and the indentation around it a single space,
    so a phrase broken over two lines is found."""
    pieces = [piece.strip() for piece in text.split("\n")]
    starts = [sum(len(p) + 1 for p in pieces[:i]) for i in range(len(pieces))]
    flat = " ".join(pieces)
    return [
        f"{path}:{line + bisect.bisect_right(starts, m.start()) - 1}: {m.group()!r}: "
        f"{flat[max(0, m.start() - 50) : m.end() + 30]!r}"
        for pattern in patterns
        for m in pattern.finditer(flat)
    ]


def text_faults(path, source):
    """What is wrong with a file's comments and docstrings (a message's history too): [] when nothing is."""
    found = [
        fault
        for line, text in comments(source) + docstrings(ast.parse(source, path))
        for fault in matches(path, line, text, (HISTORY, MESSAGE_HISTORY, FIGURE))
    ]
    return list(dict.fromkeys(found))  # a phrase both histories match, once


def message_faults(path, source):
    """History in a file's strings (what it prints, raises or writes): [] when there is none."""
    return [
        fault
        for line, text in strings(ast.parse(source, path))
        for fault in matches(path, line, text, (MESSAGE_HISTORY,))
    ]


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def test_the_scan_reaches_every_folder():
    files = list(code_files())
    for folder in FOLDERS:
        assert any(path.startswith(folder + os.sep) for path in files), f"no .py file read under {folder}/"
    assert os.path.join("alm_plugin", "modules", "cuda_graphs.py") in files


def test_comments_and_docstrings_tell_no_history_and_no_figure():
    bad = [fault for path in code_files() for fault in text_faults(path, read(path))]
    assert not bad, "\n".join(bad)


def test_printed_and_raised_strings_tell_no_history():
    bad = [
        fault for path in code_files() if path.startswith(MESSAGE_FOLDERS) for fault in message_faults(path, read(path))
    ]
    assert not bad, "\n".join(bad)


PLANTED = '''"""A module. Its step was slower before issue 12."""


def step(x):
    """Runs the step. It no longer copies x:
    a copy used
    to cost 26 MB."""
    # the cache is kept now, not dropped
    # as it
    # formerly was (#63)
    raise ValueError(f"--fp16 is refused for now: {x}")


def rows(x):
    print(f"rows trained before the dropout fix: {x}")
    sys.exit(f"{x}: the name issue 47 gave it")
'''


@pytest.mark.parametrize(
    "line, found",
    [
        (1, "'was'"),
        (1, "'issue 12'"),
        (5, "'no longer'"),
        (6, "'used to'"),
        (7, "'26 MB'"),
        (8, "'now'"),
        (10, "'formerly'"),
        (10, "'was'"),
        (10, "'#63'"),
    ],
)
def test_a_planted_comment_or_docstring_is_found(line, found):
    faults = text_faults("planted.py", PLANTED)
    assert any(fault.startswith(f"planted.py:{line}: {found}:") for fault in faults), "\n".join(faults)


@pytest.mark.parametrize("line, found", [(11, "'for now'"), (15, "'before the dropout fix'"), (16, "'issue 47'")])
def test_a_planted_message_is_found(line, found):
    faults = message_faults("planted.py", PLANTED)
    assert any(fault.startswith(f"planted.py:{line}: {found}:") for fault in faults), "\n".join(faults)


def test_plain_text_passes():
    plain = '''"""Scores a text: each word's log-probability, summed (Eq. 9)."""

# the state is carried across chunks, as the paper reads the corpus
MESSAGE = "the checkpoint was trained on another dictionary: give its data-bin"
'''
    assert text_faults("plain.py", plain) == []
    assert message_faults("plain.py", plain) == []
