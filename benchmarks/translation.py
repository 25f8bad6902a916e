#!/usr/bin/env python
"""The Multi30k figures (German -> English): run ``examples/translation/multi30k.sh`` and
``shallow_fusion.sh`` as a user does and record what they print, in the run that trains the models.

    python -m benchmarks.translation --threads 1     # writes benchmarks/results/multi30k/<arch>.json

The translation model and the language model are trained from scratch: their checkpoints
(``checkpoints/multi30k-<arch>``, ``checkpoints/multi30k-en-<lm arch>``) must not exist, or the
example would skip training and the record would describe older models; the example's outputs go
to ``runs/multi30k-<arch>-benchmark``, emptied first. BLEU is sacrebleu's on
the detokenised output of test_2016_flickr; the example chooses the rescoring weights and the
fusion weight on valid, and the record holds both splits' figures.
"""

import argparse
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


def run(script, env):
    """Run an example script, its output shown as it comes and returned whole."""
    proc = subprocess.Popen(
        ["bash", script], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    lines = []
    for line in proc.stdout:
        print(line, end="", flush=True)
        lines.append(line)
    if proc.wait() != 0:
        sys.exit(f"{script} failed ({proc.returncode}); its output is above")
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


def valid_ppl(data, checkpoint, task_args, threads):
    """Perplexity of ``checkpoint`` on valid by fairseq-validate (the NLL, not the smoothed loss)."""
    output = fairseq(
        "validate", data, "--user-dir", "alm_plugin", "--cpu", *task_args, "--path", checkpoint,
        "--valid-subset", "valid", "--max-tokens", "4000", threads=threads,
    )  # fmt: skip
    return found(r"\| ppl " + NUMBER, output, f"validation perplexity of {checkpoint}")[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--arch", default="attentive_nmt_small", help="the translation model's architecture")
    parser.add_argument("--lm-arch", default="amsrn_small", help="the target-side language model's architecture")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="CPU threads of every command")
    parser.add_argument("--json", help="where the record goes (default: benchmarks/results/multi30k/<arch>.json)")
    args = parser.parse_args()
    if args.json is None:  # the default's folder is the project's: made here
        args.json = os.path.join(ROOT, "benchmarks", "results", "multi30k", f"{args.arch}.json")
        os.makedirs(os.path.dirname(args.json), exist_ok=True)
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
    example = run("examples/translation/multi30k.sh", env)
    example_minutes = (time.time() - start) / 60
    start = time.time()
    fusion = run("examples/translation/shallow_fusion.sh", env)
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
