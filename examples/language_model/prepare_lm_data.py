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
``fairseq-preprocess --only-source`` into ``data-bin/<name>/``.

Sentences: PTB is already one sentence per line. WikiText-2 has one paragraph per line and
headings (`` = Title = ``); headings become their own line, blank lines are dropped, and
paragraphs are split after the sentence-final tokens ``.``, ``?`` and ``!`` (the text is
already tokenised, so abbreviations such as ``U.S.`` are single tokens). Raw text of your own
(``--raw-dir`` with train/valid/test.txt) can be tokenised with sacremoses (``--tokenize LANG``).
"""
import argparse
import collections
import os
import subprocess
import sys

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


def read_sentences(path, paragraphs, tokenizer=None):
    """The sentences of a UTF-8 file (a byte-order mark is dropped). Raises ``ValueError`` with
    the file and line for text that is not UTF-8 or holds a word fairseq reserves."""
    with open(path, "rb") as f:
        raw_lines = f.read().split(b"\n")
    for number, raw in enumerate(raw_lines, 1):
        try:
            line = raw.decode("utf-8-sig" if number == 1 else "utf-8").strip()
        except UnicodeDecodeError as error:
            raise ValueError(f"{path}:{number}: not UTF-8 (byte 0x{raw[error.start]:02x} at column "
                             f"{error.start + 1}); convert the file, e.g. iconv -f latin1 -t utf-8") from None
        if not line:
            continue
        reserved = RESERVED_WORDS.intersection(line.split())
        if reserved:
            raise ValueError(f"{path}:{number}: the text contains {', '.join(sorted(reserved))}, which "
                             "fairseq would read as its end-of-sentence / padding symbol; remove or "
                             "replace it (e.g. with &lt;/s&gt;)")
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
    path = os.path.join(text_dir, "dict.txt")
    with open(path, "w", encoding="utf-8") as out:
        for word, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
            if word in FAIRSEQ_SPECIAL_SYMBOLS:  # already in every fairseq dictionary
                continue
            out.write(f"{word} {count}\n")
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", choices=sorted(CORPUS_FILES), help="a corpus from ../shared/data")
    parser.add_argument("--shared-data", default=SHARED_DATA, help="folder holding ptb/ and wikitext-2/")
    parser.add_argument("--raw-dir", help="instead of --corpus: a folder with train.txt, valid.txt, test.txt")
    parser.add_argument("--tokenize", metavar="LANG", help="tokenise raw text with sacremoses for LANG")
    parser.add_argument("--paragraphs", action="store_true",
                        help="lines are paragraphs: split them into sentences (on by default for wikitext-2)")
    parser.add_argument("--sample-sentences", type=int, default=0,
                        help="keep only the first N training sentences (and N/10 valid and test ones)")
    parser.add_argument("--threshold", type=int, default=0,
                        help="map training words seen at most this many times to <unk> (fairseq-preprocess --thresholdsrc)")
    parser.add_argument("--open-vocabulary", action="store_true",
                        help="build the dictionary over all splits, so that no word becomes <unk> "
                             "(for the character-level models, which spell every word)")
    parser.add_argument("--name", help="output name (default: the corpus name)")
    parser.add_argument("--destdir", default="data-bin", help="where the binarised folder goes")
    parser.add_argument("--text-dir", default=os.path.join(os.path.dirname(__file__), "text"),
                        help="where the one-sentence-per-line text goes")
    parser.add_argument("--workers", type=int, default=2)
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
        sys.exit(f"error: input file(s) not found: {', '.join(missing)}\n"
                 "Give --shared-data (the folder with ptb/ and wikitext-2/) or --raw-dir.")

    tokenizer = None
    if args.tokenize:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
        from alm_plugin.text_forms import check_language
        from sacremoses import MosesTokenizer
        try:
            tokenizer = MosesTokenizer(lang=check_language(args.tokenize))
        except ValueError as error:
            sys.exit(f"error: --tokenize: {error}")

    name = args.name or args.corpus or os.path.basename(os.path.normpath(args.raw_dir))
    text_dir = os.path.join(args.text_dir, name)
    os.makedirs(text_dir, exist_ok=True)
    for split, path in files.items():
        limit = args.sample_sentences if split == "train" else max(1, args.sample_sentences // 10)
        try:
            sentences = []
            for sentence in read_sentences(path, paragraphs, tokenizer):
                if args.sample_sentences and len(sentences) >= limit:
                    break
                sentences.append(sentence)
        except ValueError as error:
            sys.exit(f"error: {error}")
        if not sentences:
            sys.exit(f"error: {path} has no sentences (it is empty or blank): every split needs at "
                     "least one, or fairseq fails on an empty dataset later")
        with open(os.path.join(text_dir, f"{split}.txt"), "w", encoding="utf-8") as out:
            out.writelines(sentence + "\n" for sentence in sentences)
        print(f"{split}: {len(sentences)} sentences -> {text_dir}/{split}.txt")

    command = [
        "fairseq-preprocess", "--only-source",
        "--trainpref", os.path.join(text_dir, "train.txt"),
        "--validpref", os.path.join(text_dir, "valid.txt"),
        "--testpref", os.path.join(text_dir, "test.txt"),
        "--destdir", os.path.join(args.destdir, name), "--workers", str(args.workers),
    ]
    if args.open_vocabulary:
        if args.threshold:
            parser.error("--open-vocabulary keeps every word: drop --threshold")
        command += ["--srcdict", write_full_dictionary(text_dir)]
    elif args.threshold:
        command += ["--thresholdsrc", str(args.threshold)]
    print(" ".join(command))
    subprocess.run(command, check=True)


if __name__ == "__main__":
    main()
