"""Score plain text with a trained language model: one line in, one row of figures out, the corpus
perplexity on stderr (docs/tools.md describes the rows and the options).

    alm-score --path checkpoints/quickstart/checkpoint_best.pt sentences.txt
    echo "The game is set in Japan ." | alm-score --path lm.pt --format jsonl
"""

import argparse
import json
import math
import os
import re
import sys

from ..data.task_reading import reads_streams
from ..errors import ScoringError
from ..evaluation.options import EvaluationOptions, add_arguments
from .model_loading import load_models
from .plain_text import check_plain_text
from .scoring import CharacterModelScorer, LanguageModelScorer, is_character_model
from .tool import run_tool

# fairseq-preprocess reads text with Python's universal newlines: a line ends at \r\n, \r or \n
LINE_BREAK = re.compile(rb"\r\n|\r|\n")
# words fairseq's dictionary reads as its control symbols (<unk> is a word: the unknown one)
RESERVED_WORDS = {"<s>", "<pad>", "</s>"}


def check_inputs(files):
    """Refuse an input that cannot be read (a directory, a missing file, a closed stdin) before
    anything is loaded."""
    for name in files or ["-"]:
        if name != "-" and os.path.isdir(name):
            raise ScoringError(f"input {name} is a directory: give the text file(s) to score")
        if name != "-" and not os.path.exists(name):  # a pipe (<(...), /dev/fd/N, a FIFO) is read once, as stdin
            raise ScoringError(f"input file {name} does not exist")
        if name == "-" and sys.stdin is None:  # started with stdin closed (<&-)
            raise ScoringError("stdin is closed: give the text file(s) to score, or pipe the text in")


def read_lines(files, sizes=None):
    """``[(where, text)]``: every line of the files (or of stdin without files), ``where``
    being ``FILE:LINE``. Lines end as fairseq-preprocess ends them; a UTF-8 byte-order mark
    at the start of a file is dropped. ``sizes`` (a list), if given, gets each file's number of
    lines, in order: each file is a text of its own."""
    lines = []
    for name in files or ["-"]:
        label = "stdin" if name == "-" else name
        try:
            if name == "-":
                data = sys.stdin.buffer.read()
            else:
                with open(name, "rb") as handle:
                    data = handle.read()
        except OSError as error:
            raise ScoringError(f"cannot read {label}: {error.strerror}") from None
        check_plain_text(data, label)  # UTF-16 (with or without its mark), NUL bytes
        if data.startswith(b"\xef\xbb\xbf"):
            data = data[3:]
        raw_lines = LINE_BREAK.split(data)
        if raw_lines[-1] == b"":  # the break after the last line (or an empty input) ends no line
            raw_lines.pop()
        for number, raw in enumerate(raw_lines, 1):
            try:
                lines.append((f"{label}:{number}", raw.decode("utf-8")))
            except UnicodeDecodeError:
                raise ScoringError(
                    f"{label}:{number}: not UTF-8; convert the text, e.g. iconv -f latin1 -t utf-8"
                ) from None
        if sizes is not None:
            sizes.append(len(raw_lines))
    return lines


def check_words(where, line):
    """Refuse a word fairseq would read as one of its control symbols."""
    reserved = RESERVED_WORDS.intersection(line.split())
    if reserved:
        raise ScoringError(
            f"{where}: the text contains {', '.join(sorted(reserved))}, which fairseq would read as "
            "its end-of-sentence / padding symbol, not as a word: remove or replace it "
            "(e.g. with &lt;/s&gt;)"
        )


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="alm-score", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "files",
        nargs="*",
        metavar="FILE",
        help="texts to score, one sentence per line, each a text of its own (default: stdin)",
    )
    parser.add_argument(
        "--path", required=True, help="checkpoint; several separated by ':' are an ensemble (as in fairseq)"
    )
    parser.add_argument(
        "--data", help="data-bin directory with the model's dict.txt (default: as saved in the checkpoint)"
    )
    parser.add_argument(
        "--tokenize",
        default="none",
        metavar="none|LANG",
        help="none (the text is tokenised like the training data) or a sacremoses language",
    )
    parser.add_argument("--bpe-codes", help="the subword-nmt codes of the training data")
    parser.add_argument("--format", choices=["tsv", "jsonl"], default="tsv", help="output format (default: tsv)")
    parser.add_argument("--base2", action="store_true", help="also print log2 p(sentence)")
    parser.add_argument("--batch-size", type=int, default=64, help="most sentences per batch")
    parser.add_argument("--batch-tokens", type=int, default=8000, help="most tokens per batch")
    parser.add_argument(
        "--context",
        choices=["document", "line"],
        help="read the lines as one document or score each line alone (default: as the model's task reads text)",
    )
    add_arguments(parser)  # the test-time options, as fairseq-eval-lm declares them
    parser.add_argument("--cpu", action="store_true", help="score on the CPU even when a GPU is there")
    args = parser.parse_args(argv)
    if args.batch_size < 1 or args.batch_tokens < 1:
        parser.error("--batch-size and --batch-tokens must be at least 1")
    run_tool("alm-score", run, args)


def run(args):
    if sys.stdout is None:  # started with stdout closed (>&-): the scores would go nowhere
        raise ScoringError("stdout is closed, and the scores are written there: send it to a file (> scores.tsv)")
    forms = None
    if args.tokenize != "none" or args.bpe_codes:
        from .text_forms import TextForms

        if args.bpe_codes and not os.path.isfile(args.bpe_codes):
            raise ScoringError(f"the BPE codes file {args.bpe_codes} does not exist")
        forms = TextForms("en" if args.tokenize == "none" else args.tokenize, args.bpe_codes)
    paths = args.path.split(":")
    if "" in paths:
        raise ScoringError(
            f"--path {args.path!r} has an empty checkpoint path (a ':' at an end or doubled): "
            "give CHECKPOINT, or CK1:CK2 for an ensemble"
        )
    check_inputs(args.files)
    loaded = load_models(paths, args.data, args.cpu)
    kinds = {is_character_model(model) for model, _ in loaded}
    if len(kinds) > 1:
        raise ScoringError("an ensemble cannot mix word-level and character-level models: score them apart")
    streams = any(reads_streams(task) for _, task in loaded)  # a document task's model reads the text as one stream
    if streams and args.context == "line" and not is_character_model(loaded[0][0]):
        raise ScoringError(
            f"{args.path} was trained on document_language_modeling, which reads text as one "
            "stream: drop --context line"
        )
    EvaluationOptions.read(args).prepare(loaded, streams)  # refused before stdin is read, or given to the models
    texts = []  # the number of lines of each file: each a text of its own
    numbered = read_lines(args.files, texts)
    if not numbered:
        raise ScoringError(
            f"nothing to score: {' and '.join(args.files) or 'stdin'} "
            f"{'has' if len(args.files) < 2 else 'have'} no lines (an empty line, which scores "
            "its </s>, is a line; an empty input is not)"
        )
    lines = [text for _, text in numbered]
    if forms is not None:
        source = "tok" if args.tokenize == "none" else "raw"
        lines = [forms.convert(line, source, "bpe" if args.bpe_codes else "tok") for line in lines]
    for (where, _), line in zip(numbered, lines):  # as the model will read it
        check_words(where, line)
    if is_character_model(loaded[0][0]):
        scorer = CharacterModelScorer(
            paths, args.data, args.cpu, args.batch_tokens, args.batch_size, loaded, document=args.context != "line"
        )
        encoded = scorer.encode_all(lines)
        if scorer.unspellable:
            examples = ", ".join(f"{w!r} ({n}x)" for w, n in scorer.unspellable[:5])
            count = sum(n for _, n in scorer.unspellable)
            print(
                f"alm-score: WARNING: words with characters the model never saw are scored as <unk> "
                f"(counted in 'unk'), {count} in all: {examples}",
                file=sys.stderr,
            )
    else:
        scorer = LanguageModelScorer(
            paths,
            args.data,
            args.cpu,
            args.batch_tokens,
            args.batch_size,
            loaded=loaded,
            document=args.context == "document" or streams,
        )
        encoded = [scorer.encode(line) for line in lines]
    characters = scorer.characters_of if isinstance(scorer, CharacterModelScorer) else None
    scores = scorer.token_log_probs(encoded, progress_bar(len(encoded)), texts=texts)
    report(encoded, scores, scorer.dictionary.unk(), characters, args)


def report(encoded, scores, unk, characters, args):
    """One row per line on stdout, the corpus summary on stderr; ``characters(tokens)`` gives
    ``|c|`` for character models (their rows and summary add bits per character). A failed
    write (a full disk) is a ``ScoringError``, the rows written so far being all there is."""
    try:
        _report(encoded, scores, unk, characters, args)
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as error:
        _discard_stdout()
        raise ScoringError(
            f"cannot write the scores to stdout ({error.strerror or error}): free space on its "
            "disk, or send the output elsewhere; the output is incomplete"
        ) from None


def _discard_stdout():
    """Point stdout at /dev/null, so that the interpreter's last flush of what is still buffered
    does not fail a second time (with 'Exception ignored' and exit status 120)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # not a file descriptor (an in-process run's StringIO)
        pass


def _report(encoded, scores, unk, characters, args):
    total_logprob, total_tokens, total_unk, total_chars = 0.0, 0, 0, 0
    header = [
        "line",
        "logprob",
        *(["log2prob"] if args.base2 else []),
        "tokens",
        *(["chars"] if characters else []),
        "unk",
        *(["bpc"] if characters else []),
        "ppl",
    ]
    if args.format == "tsv":
        print("\t".join(header))
    for number, (tokens, values) in enumerate(zip(encoded, scores), 1):
        logprob, count, unknown = float(values.double().sum()), len(tokens), int(tokens.eq(unk).sum())
        total_logprob, total_tokens, total_unk = total_logprob + logprob, total_tokens + count, total_unk + unknown
        row = {"line": number, "logprob": round(logprob, 4)}
        if args.base2:
            row["log2prob"] = round(logprob / math.log(2), 4)
        row["tokens"] = count
        if characters:
            chars = characters(number - 1)
            total_chars += chars
            # an empty line has no characters: its </s> is in the summary's bits, it has no bpc
            bpc = round(-logprob / math.log(2) / chars, 4) if chars else None
            row.update(chars=chars, unk=unknown, bpc=bpc)
        row.update(unk=unknown, ppl=round(math.exp(-logprob / count), 4))
        print(
            json.dumps(row) if args.format == "jsonl" else "\t".join("" if v is None else str(v) for v in row.values())
        )
    loss = -total_logprob / max(total_tokens, 1)
    figures = (
        f"bpc {-total_logprob / math.log(2) / max(total_chars, 1):.4f}, word"
        if characters
        else f"loss {loss:.4f} nats, {loss / math.log(2):.4f} bits per token,"
    )
    print(
        f"alm-score: {len(encoded)} sentences, {total_tokens} tokens (</s> included), "
        f"{f'{total_chars} characters, ' if characters else ''}{total_unk} <unk>; {figures} ppl {math.exp(loss):.2f}",
        file=sys.stderr,
    )


def progress_bar(total):
    """A tqdm bar on stderr for long input at a terminal (its ``update``), else nothing."""
    if total < 1000 or not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit="sentence", file=sys.stderr).update


if __name__ == "__main__":
    main()
