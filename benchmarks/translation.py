#!/usr/bin/env python
"""The Multi30k figures (German -> English): run ``examples/translation/multi30k.sh`` and
``shallow_fusion.sh`` as a user does and record what they print, in the run that trains the models.

    python -m benchmarks.translation --threads 1     # writes benchmarks/results/multi30k/<arch>.json
    python -m benchmarks.translation --language-model alm_lstm_small --threads 1   # lm-<arch>.json
    python -m benchmarks.translation --parallel-pairs 2000 --threads 1             # pairs-2000.json

``--language-model ARCH`` trains a target-side language model on all 29,000 English training
sentences (``data-bin/multi30k-en-mono``) and records its valid and test perplexity and its
checkpoint's SHA-256 (its folder holds the marker ``unfinished`` until then). ``--parallel-pairs N``
trains the translation model and the channel model on the first N pairs and compares, on the 50-best
lists, rescoring with TM and the length reward alone, with each of those language models, with the
channel model alone and with both, and shallow fusion with each language model, against beam 5
(sacrebleu's paired bootstrap); it records the SHA-256 of each language model read, from the
``lm-<arch>.json`` beside its own record (it waits for a row under way and refuses a model without one).

The translation model and the language model are trained from scratch: their checkpoints
(``checkpoints/multi30k-<arch>``, ``checkpoints/multi30k-en-<lm arch>``) must not exist, or the
example would skip training and the record would describe older models. A pairs row stopped before
its record resumes, its trainings from their ``checkpoint_last.pt`` (fairseq restarts the count of
``--patience`` there); the record lists each run's commit, the updates it started from and whether it
trained, and its minutes are the last run's. The example's outputs go to
``runs/multi30k-<arch>-benchmark``, emptied first. BLEU is sacrebleu's on the detokenised output of
test_2016_flickr; the example chooses the rescoring weights and the fusion weight on valid, and the
record holds both splits' figures.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

from benchmarks import ROOT
from benchmarks.fairseq_runs import commit, fairseq
from benchmarks.result_files import check_json, write_json

NUMBER = r"(-?[\d.]+(?:e-?\d+)?)"


def run_command(command, env):
    """A command (an example script, a console script), its output shown as it comes and returned whole."""
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    for line in proc.stdout:
        print(line, end="", flush=True)
        lines.append(line)
    if proc.wait() != 0:
        sys.exit(f"{command[0]} failed ({proc.returncode}); its output is above")
    return "".join(lines)


def found(pattern, text, what):
    """The groups of ``pattern``'s first match in ``text`` as floats; exit naming ``what`` if none."""
    match = re.search(pattern, text, re.MULTILINE)
    if match is None:
        sys.exit(f"benchmarks.translation: the example printed no {what}; its output is above")
    return [float(g) for g in match.groups()]


def figures(example, fusion):
    """The BLEU figures ``multi30k.sh`` (``example``) and ``shallow_fusion.sh`` (``fusion``) printed."""
    (beam5,) = found(r"^BLEU, beam 5:\n(?:.*\n)*?" + NUMBER + r"$", example, "beam-5 BLEU")  # past any warning
    tuned = found(r"^tuned on .*: BLEU " + NUMBER + " -> " + NUMBER, example, "tuning BLEU")
    weights = found(r"^weights: TM=" + NUMBER + ",LM=" + NUMBER + ",Len=" + NUMBER, example, "rescoring weights")
    rescored = found(r"test\.nbest10\.txt: BLEU " + NUMBER + r" \(system 1-best\) -> " + NUMBER, example, "test BLEU")
    fusion_valid = re.findall(r"^valid, lm-weight " + NUMBER + ": BLEU " + NUMBER, fusion, re.MULTILINE)
    weight, fused = found(r"^test, lm-weight " + NUMBER + ": BLEU " + NUMBER, fusion, "fusion test BLEU")
    return {
        "test_bleu_beam5": beam5,
        "test_bleu_beam10_1best": rescored[0],
        "rescoring": {
            "weights": {"TM": weights[0], "LM": weights[1], "Len": weights[2]},
            "valid_bleu_before": tuned[0],
            "valid_bleu_after": tuned[1],
            "test_bleu": rescored[1],
        },
        "fusion": {
            "valid_bleu_by_weight": {w: float(b) for w, b in fusion_valid},
            "weight": weight,
            "test_bleu": fused,
        },
    }


def valid_ppl(data, checkpoint, task_args, threads, split="valid"):
    """Perplexity of ``checkpoint`` on ``split`` by fairseq-validate (the NLL, not the smoothed loss)."""
    output = fairseq(
        "validate", data, "--user-dir", "alm_plugin", "--cpu", *task_args, "--path", checkpoint,
        "--valid-subset", split, "--max-tokens", "4000", threads=threads,
    )  # fmt: skip
    return found(r"\| ppl " + NUMBER, output, f"validation perplexity of {checkpoint}")[0]


MONO = os.path.join("data-bin", "multi30k-en-mono")
LM_ARCHS = ("alm_lstm_small", "attentive_lm_small", "amsrn_small")


def sha256(path):
    import hashlib

    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


# in a language model's folder while its row trains and evaluates, until its record is written
UNDER_WAY = "unfinished"


def lm_save(arch):
    return os.path.join(ROOT, "checkpoints", f"multi30k-en-mono-{arch}")


def training_sentences(log):
    """The sentences fairseq-train's log says it loaded for the training split."""
    match = re.search(r"loaded ([\d,]+) examples from: \S*/train$", log, re.MULTILINE)
    if match is None:
        sys.exit("benchmarks.translation: fairseq-train's log names no training set; it is above")
    return int(match.group(1).replace(",", ""))


def language_model_row(parser, args):
    """Train ``args.language_model`` on every English training sentence; its perplexities and checkpoint."""
    save = lm_save(args.language_model)
    if os.path.exists(os.path.join(save, "checkpoint_best.pt")):
        parser.exit(2, f"{parser.prog}: error: {save} holds a trained model: move it away to train afresh\n")
    if not os.path.exists(os.path.join(ROOT, MONO, "dict.txt")):
        parser.exit(
            2, f"{parser.prog}: error: no {MONO}: python examples/translation/prepare_multi30k.py --parallel-pairs N\n"
        )
    task = ["--task", "sentence_language_modeling", "--criterion", "attention_cross_entropy"]
    os.makedirs(save, exist_ok=True)
    # a pairs row waits for this row's record while the marker stays
    open(os.path.join(save, UNDER_WAY), "w").close()
    start = time.time()
    log = fairseq(
        "train", MONO, "--user-dir", "alm_plugin", "--cpu", *task, "--arch", args.language_model,
        "--optimizer", "adam", "--lr", "0.003", "--clip-norm", "5", "--max-tokens", "4000",
        "--max-epoch", str(args.lm_epochs), "--save-dir", save, "--no-epoch-checkpoints", "--seed", "1",
        "--log-format", "simple", "--log-interval", "100", threads=args.threads,
        log=os.path.join(save, "train.log"), mode="w",
    )  # fmt: skip
    minutes = (time.time() - start) / 60
    checkpoint = os.path.join(save, "checkpoint_best.pt")
    perplexity = {split: valid_ppl(MONO, checkpoint, task, args.threads, split) for split in ("valid", "test")}
    write_json(
        args.json,
        {
            "lm_arch": args.language_model,
            "argv": sys.argv[1:],
            "commit": commit(),
            "device": f"cpu, {args.threads} thread(s)",
            "train_sentences": training_sentences(log),
            "epochs": args.lm_epochs,
            "train_minutes": round(minutes, 1),
            "valid_ppl_by_epoch": [float(p) for p in re.findall(r"valid on 'valid' subset \|.*?\| ppl ([\d.]+)", log)],
            "valid_ppl": perplexity["valid"],
            "test_ppl": perplexity["test"],
            "checkpoint_sha256": sha256(checkpoint),
        },
    )
    os.remove(os.path.join(save, UNDER_WAY))


NBEST = 50
FUSION_WEIGHTS = "0 0.05 0.1 0.2 0.3"


def detokenised(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def significance(references, baseline, systems):
    """sacrebleu's paired bootstrap of each system against ``baseline`` (its default samples and seed):
    BLEU, the bootstrap mean and confidence half-interval, and the p-value of the difference."""
    from sacrebleu.metrics import BLEU
    from sacrebleu.significance import PairedTest

    named = [("beam5", baseline), *systems.items()]
    _, scores = PairedTest(named, {"BLEU": BLEU(references=[references])}, references=None, test_type="bs")()
    results = {}
    for name, result in zip(scores["System"], scores["BLEU"]):
        results[name] = {
            "bleu": round(float(result.score), 2),
            "bootstrap_mean": round(float(result.mean), 2),
            "ci95": round(float(result.ci), 2),
            **({} if result.p_value is None else {"p_value": round(float(result.p_value), 4)}),
        }
    return results


def oracle_bleu(nbest, references):
    """The n-best list's ceiling: each sentence's hypothesis of highest sentence BLEU, scored as a corpus."""
    import sacrebleu

    from alm_plugin.cli.nbest import group_by_sentence, read_nbest
    from alm_plugin.cli.text_forms import TextForms

    forms = TextForms("en")
    groups = group_by_sentence(read_nbest(nbest))
    chosen = []
    for i, reference in enumerate(references):
        texts = [forms.convert(h.text, "bpe", "raw") for h in groups[i]]
        chosen.append(max(texts, key=lambda text: sacrebleu.sentence_bleu(text, [reference]).score))
    return round(sacrebleu.corpus_bleu(chosen, [references]).score, 2)


def wait_for_language_model(record, checkpoint, poll=60):
    """Until the language model's row has written ``record``; then its checkpoint must be the one recorded."""
    marker = os.path.join(os.path.dirname(checkpoint), UNDER_WAY)
    if not os.path.exists(record):
        print(f"benchmarks.translation: waiting for {record} (its row is still training)", flush=True)
    while not os.path.exists(record):
        if not os.path.exists(marker) and not os.path.exists(record):  # the row ended without it
            sys.exit(f"benchmarks.translation: the row of {checkpoint} ended without writing {record}")
        time.sleep(poll)
    with open(record) as f:
        if json.load(f).get("checkpoint_sha256") != sha256(checkpoint):
            sys.exit(f"benchmarks.translation: {checkpoint} is not the model {record} records: train it afresh")


# in a model's folder, one line per run of the pairs row that has used it, "commit updates state", until
# recorded; state: "training" (fresh or resumed) or "finished" (trained by an earlier run)
STARTS = "starts.txt"


def updates_so_far(folder):
    """The updates of the ``checkpoint_last.pt`` in ``folder`` a training resumes from (0: none)."""
    from alm_plugin.mends.checkpoint_safety import read_checkpoint

    last = os.path.join(folder, "checkpoint_last.pt")
    return read_checkpoint(last)["optimizer_history"][-1]["num_updates"] if os.path.exists(last) else 0


def note_start(folder):
    """Append this run's commit, the updates it starts from and whether the example will train there to
    ``folder``'s starts; return every start."""
    os.makedirs(folder, exist_ok=True)
    finished = os.path.exists(os.path.join(folder, "checkpoint_best.pt")) and not os.path.exists(
        os.path.join(folder, "unfinished")
    )  # the example's marker: see its train()
    with open(os.path.join(folder, STARTS), "a") as f:
        f.write(f"{commit() or 'unknown'} {updates_so_far(folder)} {'finished' if finished else 'training'}\n")
    starts = []
    with open(os.path.join(folder, STARTS)) as f:
        for number, line in enumerate(f, 1):
            match = re.fullmatch(r"(\S+) (\d+) (training|finished)\n?", line)
            if match is None:
                sys.exit(f"{os.path.join(folder, STARTS)}:{number}: not 'commit updates training|finished': fix it")
            starts.append({"commit": match[1], "updates": int(match[2]), "state": match[3]})
    return starts


def pairs_row(parser, args):
    """Every reranking method at ``args.parallel_pairs`` pairs, from the models trained in this run."""
    pairs = args.parallel_pairs
    data = os.path.join("data-bin", f"multi30k-de-en-{pairs}")
    save = os.path.join(ROOT, "checkpoints", f"multi30k-{pairs}-{args.arch}")
    folders = {"translation": save, "channel": save + "-channel"}
    for folder in folders.values():  # absent, or this row's, from a run stopped before its record
        if os.path.exists(os.path.join(folder, "checkpoint_best.pt")) and not os.path.exists(
            os.path.join(folder, STARTS)
        ):
            parser.exit(2, f"{parser.prog}: error: {folder} holds a trained model: move it away to train afresh\n")
    lms = {arch: os.path.join(lm_save(arch), "checkpoint_best.pt") for arch in LM_ARCHS}
    records = {arch: os.path.join(os.path.dirname(args.json), f"lm-{arch}.json") for arch in LM_ARCHS}
    for arch in LM_ARCHS:  # each trained, or its row under way (it is waited for before the reranking)
        if not os.path.exists(records[arch]) and not os.path.exists(os.path.join(lm_save(arch), UNDER_WAY)):
            parser.exit(
                2,
                f"{parser.prog}: error: no {records[arch]} and no --language-model {arch} row under way: train it "
                f"so, or give --json in the folder that holds lm-{arch}.json\n",
            )
    out = os.path.join(ROOT, "runs", f"multi30k-{pairs}-benchmark")
    shutil.rmtree(out, ignore_errors=True)  # the example reuses the n-best lists it finds there
    env = {
        **os.environ, "ARCH": args.arch, "LM_ARCH": LM_ARCHS[0], "OUT": out, "PAIRS": str(pairs),
        "CHANNEL": "1", "NBEST": str(NBEST), "OMP_NUM_THREADS": str(args.threads),
    }  # fmt: skip
    starts = {name: note_start(folder) for name, folder in folders.items()}  # the example resumes a stopped training
    start = time.time()
    example = run_command(["bash", "examples/translation/multi30k.sh"], env)
    example_minutes = (time.time() - start) / 60
    (beam5,) = found(r"^BLEU, beam 5:\n(?:.*\n)*?" + NUMBER + r"$", example, "beam-5 BLEU")
    references = detokenised(os.path.join(ROOT, data, "test.raw.en"))
    baseline = detokenised(os.path.join(out, "test.beam5.detok.en"))
    lists = {split: os.path.join(out, f"{split}.nbest{NBEST}.txt") for split in ("valid", "test")}
    channel = os.path.join(save + "-channel", "checkpoint_best.pt")

    for arch in LM_ARCHS:
        wait_for_language_model(records[arch], lms[arch])

    def rescore(name, lm=None, with_channel=False):
        """alm-rescore with one LM, the channel model, both, or neither (TM and Len alone); its valid and
        test BLEU and 1-best."""
        command = [
            "alm-rescore", "--nbest", lists["test"], "--tune-nbest", lists["valid"],
            "--tune-ref", os.path.join(data, "valid.raw.en"), "--ref", os.path.join(data, "test.raw.en"),
            "--lang", "en", "--hyp-form", "bpe", "--lm-form", "bpe", "--bpe-codes", os.path.join(data, "bpe.codes.en"),
            "--tuner", "random", "--trials", "200", "--seed", "1", "--cpu",
            "--output-1best", os.path.join(out, f"test.{name}.en"),
            "--output-trials", os.path.join(out, f"trials.{name}.json"),
        ]  # fmt: skip
        if lm:
            command += ["--lm", lms[lm], "--lm-data", MONO]
        if not lm and not with_channel:
            command += ["--length-only"]
        if with_channel:
            command += ["--channel", channel, "--source", os.path.join(data, "test.bpe.de")]
            command += ["--tune-source", os.path.join(data, "valid.bpe.de"), "--source-form", "bpe"]
        output = run_command(command, env)
        valid = found(r"^tuned on .*: BLEU " + NUMBER + " -> " + NUMBER, output, f"{name}'s tuning BLEU")
        with open(os.path.join(out, f"trials.{name}.json")) as f:
            weights = json.load(f)["weights"]
        return {"valid_bleu": valid[1], "weights": weights}, detokenised(os.path.join(out, f"test.{name}.en"))

    start = time.time()
    methods, outputs = {}, {}
    methods["length"], outputs["length"] = rescore("length")  # what every reranking's Len gives by itself
    for arch in LM_ARCHS:
        methods[f"rescore:{arch}"], outputs[f"rescore:{arch}"] = rescore(arch, lm=arch)
    methods["channel"], outputs["channel"] = rescore("channel", with_channel=True)
    best_lm = max(LM_ARCHS, key=lambda arch: methods[f"rescore:{arch}"]["valid_bleu"])
    methods["noisy_channel"], outputs["noisy_channel"] = rescore("noisy_channel", lm=best_lm, with_channel=True)
    methods["noisy_channel"]["lm_arch"] = best_lm
    rescore_minutes = (time.time() - start) / 60

    start = time.time()
    for arch in LM_ARCHS:
        fusion_env = {**env, "LM_ARCH": arch, "WEIGHTS": FUSION_WEIGHTS}
        fusion = run_command(["bash", "examples/translation/shallow_fusion.sh"], fusion_env)
        by_weight = re.findall(r"^valid, lm-weight " + NUMBER + ": BLEU " + NUMBER, fusion, re.MULTILINE)
        weight, _ = found(r"^test, lm-weight " + NUMBER + ": BLEU " + NUMBER, fusion, "fusion test BLEU")
        methods[f"fusion:{arch}"] = {
            "valid_bleu_by_weight": {w: float(b) for w, b in by_weight},
            "valid_bleu": max(float(b) for _, b in by_weight),
            "weight": weight,
        }
        outputs[f"fusion:{arch}"] = detokenised(os.path.join(out, f"test.fusion-{arch}-{weight:g}.detok.en"))
    fusion_minutes = (time.time() - start) / 60

    tested = significance(references, baseline, outputs)
    for name in methods:
        methods[name]["test"] = tested[name]
    translation = ["--task", "translation", "--source-lang", "de", "--target-lang", "en"]
    reverse = ["--task", "translation", "--source-lang", "en", "--target-lang", "de"]
    write_json(
        args.json,
        {
            "parallel_pairs": pairs,
            "arch": args.arch,
            "argv": sys.argv[1:],
            "commit": commit(),
            "device": f"cpu, {args.threads} thread(s)",
            "nbest": NBEST,
            "example_minutes": round(example_minutes, 1),
            "training_starts": starts,
            "rescore_minutes": round(rescore_minutes, 1),
            "fusion_minutes": round(fusion_minutes, 1),
            "valid_ppl": valid_ppl(data, os.path.join(save, "checkpoint_best.pt"), translation, args.threads),
            "channel_valid_ppl": valid_ppl(data, channel, reverse, args.threads),
            "language_models": {arch: sha256(path) for arch, path in lms.items()},
            "test_bleu_beam5": tested["beam5"],
            "test_oracle_bleu": oracle_bleu(lists["test"], references),
            "methods": methods,
        },
    )
    for folder in folders.values():  # recorded: a later run trains afresh
        os.remove(os.path.join(folder, STARTS))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--arch", default="attentive_nmt_small", help="the translation model's architecture")
    parser.add_argument("--lm-arch", default="amsrn_small", help="the target-side language model's architecture")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="CPU threads of every command")
    parser.add_argument("--json", help="where the record goes (default: benchmarks/results/multi30k/<arch>.json)")
    parser.add_argument("--language-model", choices=LM_ARCHS, help="train this LM on all the English text alone")
    parser.add_argument("--lm-epochs", type=int, default=12, help="--language-model: its training epochs")
    parser.add_argument("--parallel-pairs", type=int, help="the row of N parallel pairs and every reranking method")
    args = parser.parse_args()
    if args.json is None:  # the default's folder is the project's: made here
        name = (
            f"lm-{args.language_model}"
            if args.language_model
            else f"pairs-{args.parallel_pairs}"
            if args.parallel_pairs
            else args.arch
        )
        args.json = os.path.join(ROOT, "benchmarks", "results", "multi30k", f"{name}.json")
        os.makedirs(os.path.dirname(args.json), exist_ok=True)
    if args.language_model:
        check_json(parser, args.json, own=lambda record: "checkpoint_sha256" in record)
        return language_model_row(parser, args)
    if args.parallel_pairs:
        check_json(parser, args.json, own=lambda record: "parallel_pairs" in record)
        return pairs_row(parser, args)
    check_json(parser, args.json, own=lambda record: "test_bleu_beam5" in record)
    save = os.path.join(ROOT, "checkpoints", f"multi30k-{args.arch}")
    lm_save = os.path.join(ROOT, "checkpoints", f"multi30k-en-{args.lm_arch}")
    for folder in (save, lm_save):
        if os.path.exists(os.path.join(folder, "checkpoint_best.pt")):
            parser.exit(2, f"{parser.prog}: error: {folder} holds a trained model: move it away to train afresh\n")
    out = os.path.join(ROOT, "runs", f"multi30k-{args.arch}-benchmark")
    shutil.rmtree(out, ignore_errors=True)  # the example reuses the n-best lists it finds there
    env = {**os.environ, "ARCH": args.arch, "LM_ARCH": args.lm_arch, "OUT": out, "OMP_NUM_THREADS": str(args.threads)}

    start = time.time()
    example = run_command(["bash", "examples/translation/multi30k.sh"], env)
    example_minutes = (time.time() - start) / 60
    start = time.time()
    fusion = run_command(["bash", "examples/translation/shallow_fusion.sh"], env)
    fusion_minutes = (time.time() - start) / 60

    data = os.path.join("data-bin", "multi30k-de-en")
    translation = ["--task", "translation", "--source-lang", "de", "--target-lang", "en"]
    write_json(
        args.json,
        {
            "arch": args.arch,
            "lm_arch": args.lm_arch,
            "argv": sys.argv[1:],
            "commit": commit(),
            "device": f"cpu, {args.threads} thread(s)",
            "example_minutes": round(example_minutes, 1),
            "fusion_minutes": round(fusion_minutes, 1),
            "valid_ppl": valid_ppl(data, os.path.join(save, "checkpoint_best.pt"), translation, args.threads),
            "lm_valid_ppl": valid_ppl(
                os.path.join("data-bin", "multi30k-en-lm"),
                os.path.join(lm_save, "checkpoint_best.pt"),
                ["--task", "sentence_language_modeling", "--criterion", "attention_cross_entropy"],
                args.threads,
            ),
            **figures(example, fusion),
        },
    )


if __name__ == "__main__":
    main()
