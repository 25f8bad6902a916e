#!/usr/bin/env python
"""Prepare PTB / WikiText-2 (or any text) as one-sentence-per-line fairseq data.

    python examples/language_model/prepare_lm_data.py --corpus ptb
    python examples/language_model/prepare_lm_data.py --corpus wikitext-2
    python examples/language_model/prepare_lm_data.py --corpus wikitext-2 --sample-sentences 3000 \
        --threshold 2 --name wikitext-2-sample            # the shipped data-bin sample
    python examples/language_model/prepare_lm_data.py --raw-dir my_corpus --tokenize en --name mine
    python examples/language_model/prepare_lm_data.py --corpus wikitext-2 --open-vocabulary \
        --name wikitext-2-open                          # for the character-level models

Writes the sentence files to ``examples/language_model/text/<name>/`` and binarises them with
``fairseq-preprocess --only-source`` into ``data-bin/<name>/``. An existing ``<name>`` is refused
unless ``--force``; then the new data is written beside it and swapped in once complete, so a
failure leaves the old dataset whole.

Sentences: PTB is already one sentence per line. WikiText-2 has one paragraph per line and
headings (`` = Title = ``); headings become their own line, blank lines are dropped, and
paragraphs are split after the sentence-final tokens ``.``, ``?`` and ``!`` (the text is
already tokenised, so abbreviations such as ``U.S.`` are single tokens). Raw text of your own
(``--raw-dir`` with train/valid/test.txt) can be tokenised with sacremoses (``--tokenize LANG``).
"""

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

SHARED_DATA = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data")
SPLITS = ("train", "valid", "test")
CORPUS_FILES = {
    "ptb": {s: f"ptb/{s}.txt" for s in SPLITS},
    "wikitext-2": {s: f"wikitext-2/{s}.tokens" for s in SPLITS},
}
SENTENCE_END = {".", "?", "!"}
FAIRSEQ_SPECIAL_SYMBOLS = {"<s>", "<pad>", "</s>", "<unk>"}
# fairseq would read these words as its control symbols (end of sentence, padding); <unk> is fine
RESERVED_WORDS = {"<s>", "<pad>", "</s>"}


def split_sentences(line):
    """Yield the sentences of one tokenised paragraph."""
    sentence = []
    for token in line.split():
        sentence.append(token)
        if token in SENTENCE_END:
            yield " ".join(sentence)
            sentence = []
    if sentence:
        yield " ".join(sentence)


# fairseq-preprocess reads text with Python's universal newlines: a line ends at \r\n, \r or \n
LINE_BREAK = re.compile(rb"\r\n|\r|\n")


def read_sentences(path, paragraphs, tokenizer=None):
    """The sentences of a UTF-8 file (a byte-order mark is dropped), its lines ended as
    fairseq-preprocess ends them (at CR LF, CR or LF). Raises ``ValueError`` with the
    file and line for text that is not UTF-8, holds a NUL byte or a word fairseq reserves."""
    with open(path, "rb") as f:
        raw_lines = LINE_BREAK.split(f.read())
    for number, raw in enumerate(raw_lines, 1):
        nul = raw.find(b"\0")
        if nul >= 0:
            raise ValueError(
                f"{path}:{number}: a NUL byte at column {nul + 1}: this is not "
                "plain text (UTF-16, or a binary file?); convert it to UTF-8, e.g. "
                "iconv -f utf-16 -t utf-8, or remove the NUL bytes"
            )
        try:
            line = raw.decode("utf-8-sig" if number == 1 else "utf-8").strip()
        except UnicodeDecodeError as error:
            raise ValueError(
                f"{path}:{number}: not UTF-8 (byte 0x{raw[error.start]:02x} at column "
                f"{error.start + 1}); convert the file, e.g. iconv -f latin1 -t utf-8"
            ) from None
        if not line:
            continue
        reserved = RESERVED_WORDS.intersection(line.split())
        if reserved:
            raise ValueError(
                f"{path}:{number}: the text contains {', '.join(sorted(reserved))}, which "
                "fairseq would read as its end-of-sentence / padding symbol; remove or "
                "replace it (e.g. with &lt;/s&gt;)"
            )
        if tokenizer is not None:
            line = tokenizer.tokenize(line, return_str=True, escape=False)
        if paragraphs:
            yield from split_sentences(line)
        else:
            yield line


def write_full_dictionary(text_dir):
    """dict.txt counting the words of every split (a word only in test still gets an entry)."""
    counts = collections.Counter()
    for split in SPLITS:
        with open(os.path.join(text_dir, f"{split}.txt"), encoding="utf-8") as f:
            for line in f:
                counts.update(line.split())
    return write_dictionary(counts, os.path.join(text_dir, "dict.txt"))


def write_dictionary(counts, path):
    """A fairseq dict.txt of ``counts``, most frequent first (fairseq's own symbols left out)."""
    with open(path, "w", encoding="utf-8") as out:
        for word, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
            if word in FAIRSEQ_SPECIAL_SYMBOLS:  # already in every fairseq dictionary
                continue
            out.write(f"{word} {count}\n")
    return path


def sentence_count(text):
    """``--sample-sentences``' value: a whole number of sentences, at least 1 (0 and below would keep
    every sentence, or none)."""
    try:
        count = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of sentences") from None
    if count < 1:
        raise argparse.ArgumentTypeError(
            f"{count}: keep at least 1 sentence (leave the option out to keep the whole corpus)"
        )
    return count


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", choices=sorted(CORPUS_FILES), help="a corpus from ../shared/data")
    parser.add_argument("--shared-data", default=SHARED_DATA, help="folder holding ptb/ and wikitext-2/")
    parser.add_argument("--raw-dir", help="instead of --corpus: a folder with train.txt, valid.txt, test.txt")
    parser.add_argument("--tokenize", metavar="LANG", help="tokenise raw text with sacremoses for LANG")
    parser.add_argument(
        "--paragraphs",
        action="store_true",
        help="lines are paragraphs: split them into sentences (on by default for wikitext-2)",
    )
    parser.add_argument(
        "--sample-sentences",
        type=sentence_count,
        default=0,
        help="keep only the first N training sentences (and N/10 valid and test ones)",
    )
    parser.add_argument(
        "--sample-train-only",
        action="store_true",
        help="with --sample-sentences: keep valid and test whole and the dictionary of the "
        "whole training text, so the slice is scored on the full corpus's words",
    )
    parser.add_argument(
        "--threshold",
        type=int,
        default=0,
        help="map training words seen at most this many times to <unk> (fairseq-preprocess --thresholdsrc)",
    )
    parser.add_argument(
        "--open-vocabulary",
        action="store_true",
        help="build the dictionary over all splits, so that no word becomes <unk> "
        "(for the character-level models, which spell every word)",
    )
    parser.add_argument("--name", help="output name (default: the corpus name)")
    parser.add_argument("--destdir", default="data-bin", help="where the binarised folder goes")
    parser.add_argument(
        "--text-dir",
        default=os.path.join(os.path.dirname(__file__), "text"),
        help="where the one-sentence-per-line text goes",
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace an existing --destdir/NAME and --text-dir/NAME (the new data is "
        "written aside and swapped in once complete, so a failure keeps the old)",
    )
    args = parser.parse_args()

    if bool(args.corpus) == bool(args.raw_dir):
        parser.error("give exactly one of --corpus or --raw-dir")
    if args.corpus:
        files = {s: os.path.join(args.shared_data, p) for s, p in CORPUS_FILES[args.corpus].items()}
        paragraphs = args.paragraphs or args.corpus == "wikitext-2"
    else:
        files = {s: os.path.join(args.raw_dir, f"{s}.txt") for s in SPLITS}
        paragraphs = args.paragraphs
    missing = [p for p in files.values() if not os.path.exists(p)]
    if missing:
        sys.exit(
            f"error: input file(s) not found: {', '.join(missing)}\n"
            "Give --shared-data (the folder with ptb/ and wikitext-2/) or --raw-dir."
        )

    tokenizer = None
    if args.tokenize:
        from sacremoses import MosesTokenizer

        from alm_plugin.cli.text_forms import check_language  # the plugin, installed (scripts/install.sh)

        try:
            tokenizer = MosesTokenizer(lang=check_language(args.tokenize))
        except ValueError as error:
            sys.exit(f"error: --tokenize: {error}")

    name = args.name or args.corpus or os.path.basename(os.path.normpath(args.raw_dir))
    text_dir = os.path.join(args.text_dir, name)
    bin_dir = os.path.join(args.destdir, name)
    if args.sample_train_only and not args.sample_sentences:
        parser.error(
            "--sample-train-only keeps the whole training text's dictionary for a slice: give --sample-sentences N"
        )
    if args.sample_train_only and (args.open_vocabulary or args.threshold):
        parser.error(
            "--sample-train-only takes its dictionary from the whole training text: drop --open-vocabulary "
            "and --threshold"
        )
    if args.open_vocabulary and args.threshold:
        parser.error("--open-vocabulary keeps every word: drop --threshold")
    for path in (bin_dir, text_dir):
        if os.path.exists(path) and not os.path.isdir(path):
            sys.exit(f"error: {path} is a file, not a dataset folder: move it away or give another --name")
    existing = [path for path in (bin_dir, text_dir) if os.path.isdir(path) and os.listdir(path)]
    if existing and not args.force:
        sys.exit(
            f"error: {' and '.join(existing)} already exist{'s' if len(existing) == 1 else ''}: give "
            "another --name (or --destdir / --text-dir), or --force to replace "
            f"{'it' if len(existing) == 1 else 'them'} (the old data stays whole until the new is complete)"
        )

    # everything is written beside the destinations and swapped in at the end, so a failure (or
    # an interrupted run) leaves an existing dataset untouched
    staged = []
    try:
        new_text, new_bin = stage(text_dir, staged), stage(bin_dir, staged)
        train_counts = collections.Counter()  # --sample-train-only: the whole training text's words
        for split, path in files.items():
            limit = args.sample_sentences if split == "train" else max(1, args.sample_sentences // 10)
            whole = args.sample_train_only and split != "train"
            try:
                sentences = []
                for sentence in read_sentences(path, paragraphs, tokenizer):
                    if args.sample_train_only and split == "train":
                        train_counts.update(sentence.split())
                    elif args.sample_sentences and not whole and len(sentences) >= limit:
                        break
                    if whole or not args.sample_sentences or len(sentences) < limit:
                        sentences.append(sentence)
            except ValueError as error:
                sys.exit(f"error: {error}")
            if not sentences:
                sys.exit(
                    f"error: {path} has no sentences (it is empty or blank): every split needs at "
                    "least one, or fairseq fails on an empty dataset later"
                )
            with open(os.path.join(new_text, f"{split}.txt"), "w", encoding="utf-8") as out:
                out.writelines(sentence + "\n" for sentence in sentences)
            print(f"{split}: {len(sentences)} sentences -> {text_dir}/{split}.txt")

        command = [
            "fairseq-preprocess",
            "--only-source",
            "--trainpref",
            os.path.join(new_text, "train.txt"),
            "--validpref",
            os.path.join(new_text, "valid.txt"),
            "--testpref",
            os.path.join(new_text, "test.txt"),
            "--destdir",
            new_bin,
            "--workers",
            str(args.workers),
        ]
        if args.open_vocabulary:
            command += ["--srcdict", write_full_dictionary(new_text)]
        elif args.sample_train_only:
            command += ["--srcdict", write_dictionary(train_counts, os.path.join(new_text, "dict.txt"))]
        elif args.threshold:
            command += ["--thresholdsrc", str(args.threshold)]
        print(" ".join(command))
        kept = " (the existing data is unchanged)" if existing else ""
        try:
            code = subprocess.run(command).returncode
        except OSError as error:
            sys.exit(
                f"error: cannot run fairseq-preprocess ({error.strerror}): install fairseq in this environment{kept}"
            )
        if code != 0:
            sys.exit(f"error: fairseq-preprocess failed (exit code {code}; its message is above){kept}")
        swap_in([(new_text, text_dir), (new_bin, bin_dir)])
    except OSError as error:
        sys.exit(
            f"error: {error.filename or ''}: {error.strerror}"
            + (" (the existing data is unchanged)" if existing else "")
        )
    finally:
        for path in staged:
            shutil.rmtree(path, ignore_errors=True)
    print(f"{'replaced' if existing else 'wrote'} {bin_dir} and {text_dir}")


def stage(destination, staged):
    """A new empty folder beside ``destination`` (same file system: the swap is a rename),
    with the permissions ``os.makedirs`` would give it."""
    parent, base = os.path.split(os.path.normpath(destination))
    os.makedirs(parent or ".", exist_ok=True)
    path = tempfile.mkdtemp(prefix=f".{base}.new-", dir=parent or ".")
    staged.append(path)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, 0o777 & ~umask)
    return path


def swap_in(pairs):
    """Rename each new folder onto its destination; the old folders are moved aside first and
    deleted only once every new one is in place (put back if a rename fails)."""
    moved_aside, moved_in = [], []
    try:
        for new, destination in pairs:
            if os.path.exists(destination):
                old = f"{os.path.normpath(destination)}.old-{os.getpid()}"
                os.rename(destination, old)
                moved_aside.append((old, destination))
            os.rename(new, destination)
            moved_in.append(destination)
    except OSError:
        for destination in moved_in:
            shutil.rmtree(destination, ignore_errors=True)
        for old, destination in moved_aside:
            os.rename(old, destination)
        raise
    for old, _ in moved_aside:
        shutil.rmtree(old)


if __name__ == "__main__":
    main()
