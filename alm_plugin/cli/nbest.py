"""N-best lists as alm-rescore reads them (fairseq-generate output or a Moses list, recognised by the
first line) and writes them (Moses form), and their pairing with references."""

import collections
import math
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Sequence

from ..errors import ScoringError
from .output_files import check_outputs, output_file  # noqa: F401  (alm-rescore imports it from here)
from .plain_text import check_plain_text


class NBestError(ScoringError):
    """A problem with the user's input files: reported as one line, no traceback."""


@dataclass
class Hypothesis:
    sentence_id: int
    text: str
    line: int
    features: Dict[str, float] = field(default_factory=dict)
    extra_features: str = ""  # a Moses list's own features, written back unchanged
    raw: str = ""  # the hypothesis as raw text, for BLEU
    tm_is_sum: bool = False  # TM is the sum of P- scores, a log2-probability (not an H- or Moses score)
    source_length: int = 0  # the source's tokens and </s> as the channel model read them (with --channel)


# ----------------------------------------------------------------------------- reading

FAIRSEQ_LINE = re.compile(r"^([A-Z])-(\d+)\t")
# a line ends at CR LF, CR or LF, as fairseq-preprocess and alm-score read text: a list that
# went through Windows would otherwise keep a CR in every hypothesis, and write it out again
LINE_BREAK = re.compile(r"\r\n|\r|\n")


def read_lines(path: str, what: str) -> List[str]:
    """The lines of a UTF-8 text file (a byte-order mark dropped), or one clear error."""
    if not os.path.isfile(path):
        raise NBestError(f"{what} {path} does not exist (or is not a file)")
    with open(path, "rb") as f:
        data = f.read()
    check_plain_text(data, path, NBestError)  # UTF-16 (with or without its mark), NUL bytes
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = len(LINE_BREAK.findall(data[: error.start].decode("utf-8"))) + 1
        raise NBestError(
            f"{path}:{line}: not UTF-8 (byte 0x{data[error.start]:02x}); convert the "
            "file, e.g. iconv -f latin1 -t utf-8"
        ) from None
    lines = LINE_BREAK.split(text.removeprefix("\ufeff"))
    return lines[:-1] if lines[-1] == "" else lines  # the break after the last line ends no line


def read_nbest(path: str) -> List[Hypothesis]:
    lines = read_lines(path, "the n-best list")
    first = next((line for line in lines if line.strip()), "")
    if " ||| " in first:
        hypotheses = read_moses(path, lines)
    else:
        hypotheses = read_fairseq(path, lines)
    if not hypotheses:
        raise NBestError(
            f"{path}: no hypotheses found: expected fairseq-generate output "
            "(H-<id> lines) or a Moses n-best list (id ||| hypothesis ||| features ||| score)"
        )
    check_duplicates(path, hypotheses, moses=" ||| " in first)
    return hypotheses


def check_duplicates(path: str, hypotheses: List[Hypothesis], moses: bool) -> None:
    """The same hypothesis twice for one sentence: beam search never prints that (two outputs
    concatenated?); a Moses list without 'distinct' may, and is only warned about."""
    seen, repeats = {}, []
    for h in hypotheses:
        key = (h.sentence_id, h.text)
        if key in seen:
            repeats.append((seen[key], h.line, h.sentence_id))
        else:
            seen[key] = h.line
    if not repeats:
        return
    first, again, sentence = repeats[0]
    message = (
        f"{path}:{again}: the hypothesis of line {first} appears again for sentence {sentence} "
        f"({len(repeats)} repeats in all)"
    )
    if not moses:
        raise NBestError(message + ": fairseq-generate never repeats one; were two outputs concatenated?")
    print(
        f"alm-rescore: warning: {message}; each is scored (Moses lists without 'distinct' repeat strings)",
        file=sys.stderr,
    )


def read_fairseq(path: str, lines: List[str]) -> List[Hypothesis]:
    """``H-<id>\\t<score>\\t<text>`` then ``P-<id>\\t<scores>`` for each hypothesis."""
    hypotheses, with_positional = [], set()
    for number, line in enumerate(lines, 1):
        match = FAIRSEQ_LINE.match(line)
        if match is None:
            if re.match(r"^[HP]-", line):
                raise NBestError(
                    f"{path}:{number}: an {line[0]}- line must be '{line[0]}-<id><TAB>...', got {line[:60]!r}"
                )
            continue  # log lines, BLEU summary, ...
        kind, sentence_id = match.group(1), int(match.group(2))
        fields = line.split("\t")
        if kind == "H":
            if len(fields) != 3:
                raise NBestError(
                    f"{path}:{number}: an H- line has 3 tab-separated fields "
                    f"(H-id, score, hypothesis), got {len(fields)}"
                )
            score = parse_float(fields[1], path, number, "the hypothesis score")
            hypotheses.append(Hypothesis(sentence_id, fields[2], number, {"TM": score}))
        elif kind == "P":
            last = hypotheses[-1] if hypotheses else None
            if last is None or last.sentence_id != sentence_id or len(hypotheses) in with_positional:
                raise NBestError(f"{path}:{number}: P-{sentence_id} does not follow its H-{sentence_id} line")
            scores = [parse_float(v, path, number, "a positional score") for v in fields[1].split()]
            expected = len(last.text.split()) + 1  # one per token of the hypothesis, and </s>
            if len(scores) != expected:
                raise NBestError(
                    f"{path}:{number}: P-{sentence_id} has {len(scores)} scores but its "
                    f"hypothesis (line {last.line}) has {expected - 1} tokens + </s>: a "
                    "truncated or edited line would give a wrong TM score"
                )
            last.features["TM"] = sum(scores)
            last.tm_is_sum = True
            with_positional.add(len(hypotheses))
    if 0 < len(with_positional) < len(hypotheses):
        raise NBestError(
            f"{path}: {len(hypotheses) - len(with_positional)} of {len(hypotheses)} H- lines "
            "have no P- line: the TM feature would mix sums and per-token averages"
        )
    return hypotheses


def read_moses(path: str, lines: List[str]) -> List[Hypothesis]:
    """``id ||| hypothesis ||| features ||| total score``."""
    hypotheses = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        fields = [f.strip() for f in line.split("|||")]
        if len(fields) != 4:
            raise NBestError(
                f"{path}:{number}: a Moses n-best line has 4 fields separated by "
                f"'|||' (id ||| hypothesis ||| features ||| score), got {len(fields)}"
            )
        if not fields[0].isdigit():
            raise NBestError(f"{path}:{number}: the sentence id must be a number, got {fields[0]!r}")
        for token in fields[2].split():
            if not token.endswith("="):
                parse_float(token, path, number, "a feature value (or a 'Name=' label)")
        score = parse_float(fields[3], path, number, "the total score")
        hypotheses.append(Hypothesis(int(fields[0]), fields[1], number, {"TM": score}, fields[2]))
    return hypotheses


def parse_float(text: str, path: str, number: int, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise NBestError(f"{path}:{number}: {what} must be a number, got {text!r}") from None
    if math.isnan(value):
        raise NBestError(f"{path}:{number}: {what} is NaN")
    if value == math.inf:
        # no log-probability is +inf; it would rank first under any positive weight (-inf ranks last)
        raise NBestError(f"{path}:{number}: {what} is {text!r}: no score is +inf, regenerate the n-best list")
    return value


def group_by_sentence(hypotheses: List[Hypothesis]) -> Dict[int, List[Hypothesis]]:
    groups = collections.defaultdict(list)
    for hypothesis in hypotheses:
        groups[hypothesis.sentence_id].append(hypothesis)
    return dict(sorted(groups.items()))


# ----------------------------------------------------------------------------- references


def read_references(path: str, groups: Dict[int, List[Hypothesis]], nbest_path: str) -> List[str]:
    """The reference of sentence ``i`` is line ``i + 1``; every id must have its line and
    every line its hypotheses, or nothing is paired."""
    references = read_lines(path, "the reference file")
    ids = set(groups)
    missing = sorted(set(range(len(references))) - ids)
    extra = sorted(i for i in ids if i >= len(references))
    if missing or extra:
        problems = []
        if missing:
            problems.append(f"{len(missing)} reference lines have no hypotheses (ids {short_list(missing)})")
        if extra:
            problems.append(f"{len(extra)} ids have no reference line (ids {short_list(extra)})")
        raise NBestError(
            f"{nbest_path} and {path} do not line up: {'; '.join(problems)}. "
            f"The n-best has {len(ids)} sentences, the references {len(references)} lines; "
            "sentence id i is paired with reference line i+1."
            + (
                " (fairseq-generate drops a last batch whose size is not a multiple of "
                "--required-batch-size-multiple, 8 by default: generate with "
                "--required-batch-size-multiple 1)"
                if missing
                else ""
            )
        )
    return references


def short_list(values, shown=5):
    return ", ".join(map(str, values[:shown])) + (", ..." if len(values) > shown else "")


# ----------------------------------------------------------------------------- writing


def format_features(hypothesis: Hypothesis, names: Sequence[str]) -> str:
    ours = " ".join(f"{name}= {hypothesis.features[name]:.4f}" for name in names)
    return f"{hypothesis.extra_features} {ours}".strip()


def write_moses(
    path: str, groups: Dict[int, List[Hypothesis]], score: Callable[[Hypothesis], float], names: Sequence[str]
) -> None:
    """The list in Moses form, each sentence's hypotheses best first by ``score`` (the first
    listed on a tie), with the features ``names`` after a Moses list's own."""
    lines = [
        f"{i} ||| {h.text} ||| {format_features(h, names)} ||| {score(h):.4f}\n"
        for i, group in groups.items()
        for h in sorted(group, key=lambda h: -score(h))
    ]
    write_whole(path, lines)


def write_whole(path: str, lines: List[str]) -> None:
    """Write to a temporary file of a unique name beside it and rename it (``output_files``): never a
    half-written output, never written through a link."""
    with output_file(path) as out:
        out.writelines(lines)
