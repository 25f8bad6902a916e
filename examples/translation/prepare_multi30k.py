#!/usr/bin/env python
"""Prepare Multi30k German-English for fairseq: sacremoses tokens -> joint subword-nmt BPE ->
``fairseq-preprocess``, plus the English side alone for a target-side language model.

    python examples/translation/prepare_multi30k.py                       # ../shared/data/multi30k
    python examples/translation/prepare_multi30k.py --raw-dir my/multi30k  # train/val/test_2016_flickr.{de,en}

Writes
    data-bin/multi30k-de-en/     translation data (dict.de.txt, dict.en.txt, train/valid/test),
                                 bpe.codes, the raw references ({valid,test}.raw.en) and
                                 dict.txt = dict.en.txt, which fairseq-generate --lm-path needs
    data-bin/multi30k-en-lm/     the English side with the same dictionary, for
                                 --task sentence_language_modeling
    examples/translation/text/   the tokenised and BPE text

With ``--parallel-pairs N`` (more target text than parallel text): the translation data holds the
first N training pairs, the language-model data all the English training sentences. Each
language has its own BPE, learnt on what its models train on: English on every English sentence
(``bpe.codes.en``, shared by every N, so every N's dict.en.txt is the language model's), German on
the N German sentences (``bpe.codes.de``). Defaults: data-bin/multi30k-de-en-N and
data-bin/multi30k-en-mono; the sources in BPE form ({valid,test}.bpe.de) sit beside the data.
"""

import argparse
import os
import shutil
import subprocess
import sys

from alm_plugin.cli.text_forms import TextForms  # the plugin, installed (scripts/install.sh)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

SHARED = os.path.join(ROOT, "..", "shared", "data", "multi30k")
SPLITS = {"train": "train", "valid": "val", "test": "test_2016_flickr"}
LANGS = ("de", "en")
DEFAULT_DEST = os.path.join(ROOT, "data-bin", "multi30k-de-en")
DEFAULT_LM_DEST = os.path.join(ROOT, "data-bin", "multi30k-en-lm")


def read_lines(path, limit):
    with open(path, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f]
    return lines[:limit] if limit else lines


def write_lines(path, lines):
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(line + "\n" for line in lines)


def preprocess(*options):
    subprocess.run(["fairseq-preprocess", *map(str, options)], check=True)


def learn_codes(lines, codes, merges, text_dir, name):
    from subword_nmt.learn_bpe import learn_bpe

    path = os.path.join(text_dir, name)
    write_lines(path, lines)
    with open(path, encoding="utf-8") as infile, open(codes, "w", encoding="utf-8") as outfile:
        learn_bpe(infile, outfile, merges)


def parallel_pairs(args):
    """The first N pairs as translation data, every English sentence as language-model data."""
    pairs = args.parallel_pairs
    destdir = args.destdir if args.destdir != DEFAULT_DEST else f"{DEFAULT_DEST}-{pairs}"
    lm_destdir = (
        args.lm_destdir if args.lm_destdir != DEFAULT_LM_DEST else os.path.join(ROOT, "data-bin", "multi30k-en-mono")
    )
    text_dir = os.path.join(args.text_dir, f"pairs-{pairs}")
    os.makedirs(text_dir, exist_ok=True)
    os.makedirs(destdir, exist_ok=True)
    tokenized, raw = {}, {}
    for split, name in SPLITS.items():
        for lang in LANGS:
            raw[split, lang] = read_lines(os.path.join(args.raw_dir, f"{name}.{lang}"), 0)
            forms = TextForms(lang)
            tokenized[split, lang] = [forms.tokenize(line) for line in raw[split, lang]]
    if pairs > len(tokenized["train", "de"]):
        sys.exit(f"--parallel-pairs {pairs}: the training set has {len(tokenized['train', 'de'])} pairs")
    codes = {"en": os.path.join(lm_destdir, "bpe.codes.en"), "de": os.path.join(destdir, "bpe.codes.de")}
    if not os.path.exists(os.path.join(lm_destdir, "dict.txt")):  # the English side: made once, for every N
        os.makedirs(lm_destdir, exist_ok=True)
        mono = os.path.join(args.text_dir, "mono")
        os.makedirs(mono, exist_ok=True)
        learn_codes(tokenized["train", "en"], codes["en"], args.bpe_merges, mono, "train.tok.en")
        forms = TextForms("en", codes["en"])
        for split in SPLITS:
            write_lines(os.path.join(mono, f"{split}.bpe.en"), [forms.apply_bpe(t) for t in tokenized[split, "en"]])
        prefixes = [x for s in SPLITS for x in (f"--{s}pref", os.path.join(mono, f"{s}.bpe.en"))]
        preprocess("--only-source", *prefixes, "--destdir", lm_destdir, "--workers", args.workers)
    learn_codes(tokenized["train", "de"][:pairs], codes["de"], args.bpe_merges, text_dir, "train.tok.de")
    for lang in LANGS:
        forms = TextForms(lang, codes[lang])
        for split in SPLITS:
            lines = tokenized[split, lang][:pairs] if split == "train" else tokenized[split, lang]
            write_lines(os.path.join(text_dir, f"{split}.bpe.{lang}"), [forms.apply_bpe(t) for t in lines])
    for split in ("valid", "test"):
        for lang in LANGS:
            write_lines(os.path.join(destdir, f"{split}.raw.{lang}"), raw[split, lang])
        shutil.copyfile(os.path.join(text_dir, f"{split}.bpe.de"), os.path.join(destdir, f"{split}.bpe.de"))
    shutil.copyfile(codes["en"], os.path.join(destdir, "bpe.codes.en"))
    prefixes = [x for s in SPLITS for x in (f"--{s}pref", os.path.join(text_dir, f"{s}.bpe"))]
    target_dict = os.path.join(lm_destdir, "dict.txt")
    preprocess(
        "--source-lang", "de", "--target-lang", "en", *prefixes, "--tgtdict", target_dict,
        "--destdir", destdir, "--workers", args.workers,
    )  # fmt: skip
    shutil.copyfile(target_dict, os.path.join(destdir, "dict.txt"))
    print(f"translation data ({pairs} pairs): {destdir}\nlanguage-model data: {lm_destdir}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--raw-dir", default=SHARED, help="train/val/test_2016_flickr .de/.en, raw")
    parser.add_argument("--destdir", default=DEFAULT_DEST)
    parser.add_argument("--lm-destdir", default=DEFAULT_LM_DEST)
    parser.add_argument("--text-dir", default=os.path.join(HERE, "text"))
    parser.add_argument("--bpe-merges", type=int, default=8000, help="joint BPE merge operations")
    parser.add_argument("--train-pairs", type=int, default=0, help="use only the first N training pairs (0: all)")
    parser.add_argument("--eval-pairs", type=int, default=0, help="use only the first N valid/test pairs (0: all)")
    parser.add_argument("--parallel-pairs", type=int, default=0, help="translation data: the first N pairs")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    missing = [
        f"{SPLITS[s]}.{lang}"
        for s in SPLITS
        for lang in LANGS
        if not os.path.exists(os.path.join(args.raw_dir, f"{SPLITS[s]}.{lang}"))
    ]
    if missing:
        sys.exit(
            f"{args.raw_dir} lacks {', '.join(missing)}: point --raw-dir at the raw Multi30k "
            "task-1 files (github.com/multi30k/dataset, data/task1/raw, gunzipped)"
        )
    if args.parallel_pairs:
        return parallel_pairs(args)
    os.makedirs(args.text_dir, exist_ok=True)
    os.makedirs(args.destdir, exist_ok=True)
    codes = os.path.join(args.destdir, "bpe.codes")

    raw, tokenized = {}, {}
    for split, name in SPLITS.items():
        limit = args.train_pairs if split == "train" else args.eval_pairs
        for lang in LANGS:
            raw[split, lang] = read_lines(os.path.join(args.raw_dir, f"{name}.{lang}"), limit)
            forms = TextForms(lang)
            tokenized[split, lang] = [forms.tokenize(line) for line in raw[split, lang]]
            write_lines(os.path.join(args.text_dir, f"{split}.tok.{lang}"), tokenized[split, lang])

    # one BPE model for both languages: shared names and numbers split the same way
    from subword_nmt.learn_bpe import learn_bpe

    joint = os.path.join(args.text_dir, "train.tok.de-en")
    write_lines(joint, tokenized["train", "de"] + tokenized["train", "en"])
    with open(joint, encoding="utf-8") as infile, open(codes, "w", encoding="utf-8") as outfile:
        learn_bpe(infile, outfile, args.bpe_merges)
    for lang in LANGS:
        forms = TextForms(lang, codes)
        for split in SPLITS:
            write_lines(
                os.path.join(args.text_dir, f"{split}.bpe.{lang}"),
                [forms.apply_bpe(line) for line in tokenized[split, lang]],
            )
    for split in ("valid", "test"):
        for lang in LANGS:
            write_lines(os.path.join(args.destdir, f"{split}.raw.{lang}"), raw[split, lang])

    prefixes = {f"--{s}pref": os.path.join(args.text_dir, f"{s}.bpe") for s in SPLITS}
    subprocess.run(
        [
            "fairseq-preprocess",
            "--source-lang",
            "de",
            "--target-lang",
            "en",
            *sum(map(list, prefixes.items()), []),
            "--destdir",
            args.destdir,
            "--workers",
            str(args.workers),
        ],
        check=True,
    )
    target_dict = os.path.join(args.destdir, "dict.en.txt")
    shutil.copyfile(target_dict, os.path.join(args.destdir, "dict.txt"))
    subprocess.run(
        [
            "fairseq-preprocess",
            "--only-source",
            "--srcdict",
            target_dict,
            *sum([[k, v + ".en"] for k, v in prefixes.items()], []),
            "--destdir",
            args.lm_destdir,
            "--workers",
            str(args.workers),
        ],
        check=True,
    )
    print(f"translation data: {args.destdir}\nlanguage-model data: {args.lm_destdir}")


if __name__ == "__main__":
    main()
