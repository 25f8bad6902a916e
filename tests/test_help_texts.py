"""Help texts say what an option does, in one phrase: every config field's ``help`` and every
argparse ``help`` of the plugin's tools and the benchmark scripts is one sentence, with no measured
figure and no history ("was", "now", an issue number); the reasoning is in docs/models.md and
docs/tools.md. The generated page (docs/benchmarks.md's blocks, the README's short answer) carries
no history either."""

import argparse
import dataclasses
import importlib
import inspect
import pkgutil
import re
from unittest import mock

import pytest

from tests.conftest import ROOT

ABBREVIATIONS = re.compile(r"\b(?:al|e\.g|i\.e|Eq|cf|vs|etc)\.$")
FIGURE = re.compile(r"~\s?\d|\d(?:[\d,]*\.?\d*)\s?(?:%|[KMG]i?B|ms|min|h)(?![\w-])|\d\.\d+x\b|\d\s?tokens/s")
HISTORY = re.compile(r"\b(?:was|were|now|no longer|used to|formerly|anymore)\b|\bissues? #?\d+|#\d+\b", re.I)
PAGE_HISTORY = re.compile(r"\b(?:now|no longer|used to|formerly|anymore)\b|\bissues? #?\d+|#\d+\b", re.I)


def sentences(text):
    """How many sentences: a '.', '!' or '?' followed by a space and a capital ends one, but after
    an abbreviation (et al., e.g., Eq.)."""
    ends = [m.start() for m in re.finditer(r"[.!?](?=\s+[A-Z])", text)]
    return 1 + sum(not ABBREVIATIONS.search(text[: end + 1]) for end in ends)


def faults(text):
    """What is wrong with one help text: [] when nothing is."""
    found = []
    if sentences(text) > 1:
        found.append(f"{sentences(text)} sentences")
    found += [f"a measured figure: {m.group()!r}" for m in FIGURE.finditer(text)]
    found += [f"history: {m.group()!r}" for m in HISTORY.finditer(text)]
    return found


class Parsed(Exception):
    """Raised by a parser asked to parse: carries the parser a tool's ``main`` built."""

    def __init__(self, parser):
        self.parser = parser


def _stop(parser, *args, **kwargs):
    raise Parsed(parser)


def modules():
    for package in ("alm_plugin", "benchmarks"):
        root = importlib.import_module(package)
        for info in pkgutil.walk_packages(root.__path__, package + "."):
            if not info.name.endswith("__main__"):
                yield importlib.import_module(info.name)


def help_texts():
    """``{where: help}`` for every dataclass field and every tool's argparse option in the tree."""
    texts = {}
    for module in modules():
        for name, value in vars(module).items():
            if inspect.isclass(value) and dataclasses.is_dataclass(value) and value.__module__ == module.__name__:
                for option in dataclasses.fields(value):
                    if "help" in option.metadata:
                        texts[f"{module.__name__}.{name}.{option.name}"] = option.metadata["help"]
        main = getattr(module, "main", None)
        if not (inspect.isfunction(main) and main.__module__ == module.__name__):
            continue
        with mock.patch.object(argparse.ArgumentParser, "parse_args", _stop):
            with pytest.raises(Parsed) as parsed:
                main([]) if inspect.signature(main).parameters else main()
        for action in parsed.value.parser._actions:
            if action.help not in (None, argparse.SUPPRESS) and not isinstance(action, argparse._HelpAction):
                texts[f"{module.__name__} {'/'.join(action.option_strings) or action.dest}"] = action.help
    return texts


@pytest.fixture(scope="module")
def texts():
    return help_texts()


def test_every_help_text_is_one_short_phrase_without_figures_or_history(texts):
    assert len(texts) > 100, "the collector found too few help texts: it no longer reaches the tools"
    bad = {where: found for where, text in texts.items() if (found := faults(text))}
    assert not bad, "\n".join(f"{where}: {', '.join(found)}: {texts[where]!r}" for where, found in bad.items())


def test_the_collector_reaches_fields_and_tool_flags(texts):
    """Both kinds of declaration are read: a task config's field and a tool's own flag."""
    assert "alm_plugin.evaluation.options.TestTimeOptions.neural_cache_window" in texts
    assert "alm_plugin.cli.score --batch-tokens" in texts
    assert "benchmarks.table --rows" in texts


@pytest.mark.parametrize(
    "text, fault",
    [
        ("the cache's weight. Choose it with alm-cache-grid", "2 sentences"),
        ("a sparse gradient (~10% of a step)", "measured figure"),
        ("chunks of 64 MiB on the CPU", "measured figure"),
        ("runs at 0.85x the baseline", "measured figure"),
        ("--split is now --gen-subset", "history"),
        ("the old name, which was --split", "history"),
        ("refused since issue 47", "history"),
    ],
)
def test_a_planted_fault_is_found(text, fault):
    assert any(fault in found for found in faults(text)), faults(text)


@pytest.mark.parametrize(
    "text",
    [
        "single: v.tanh(W_s h_i) (Eq. 9); combined: v.tanh(W_s h_i + W_q h_t) (Eq. 10)",
        "test time only: > 0 switches on dynamic evaluation (Krause et al. 2018): one step after each segment",
        "use the adaptive softmax, e.g. 2000,10000 (default: the full softmax)",
        "most tokens per training sample (paper: 35)",
        "raw references of --nbest: report BLEU before and after reranking",
        "weights start uniform in [-init_range, init_range], biases at 0 (paper: 0.05)",
    ],
)
def test_a_plain_help_text_passes(text):
    assert faults(text) == []


def generated_text():
    """docs/benchmarks.md's generated blocks and the README's short answer, as they stand."""
    with open(f"{ROOT}/docs/benchmarks.md", encoding="utf-8") as f:
        page = f.read()
    blocks = re.findall(r"<!-- ([a-z0-9-]+):begin -->\n(.*?)<!-- \1:end -->", page, re.S)
    with open(f"{ROOT}/README.md", encoding="utf-8") as f:
        readme = re.findall(r"<!-- ([a-z0-9-]+):begin -->\n(.*?)<!-- \1:end -->", f.read(), re.S)
    assert blocks and readme, "the generated blocks are not where the test looks"
    return [(marker, text) for marker, text in blocks] + [(f"README {marker}", text) for marker, text in readme]


def test_the_generated_page_tells_no_history():
    """The page states what the results are: no 'now', 'no longer' or issue number (its 'was'
    reads a measurement, e.g. 'no spread was measured', and is left to it)."""
    bad = [
        f"{marker}: {text[max(0, m.start() - 40) : m.end() + 40]!r}"
        for marker, text in generated_text()
        for m in PAGE_HISTORY.finditer(text)
    ]
    assert not bad, "\n".join(bad)


def test_the_page_check_finds_planted_history():
    assert PAGE_HISTORY.search("the step is now 2x faster") and PAGE_HISTORY.search("as issue 63 found")
    assert not PAGE_HISTORY.search("no spread was measured, so a difference of some percent is no firm ranking")
