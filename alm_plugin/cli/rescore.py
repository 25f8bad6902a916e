"""Rerank translation n-best lists with our language models.

    alm-rescore --nbest test.nbest --lm lm.pt [lm2.pt ...] --lang en --bpe-codes bpe.codes \\
        [--tune-nbest valid.nbest --tune-ref valid.en] [--ref test.en] \\
        --output-1best test.rescored.en --output-nbest test.rescored.nbest

Input (read by ``alm_plugin/cli/nbest.py``): fairseq-generate output (``S-``/``H-``/``P-`` lines;
other lines are ignored) or a Moses n-best list (``id ||| hypothesis ||| features ||| score``),
recognised by its first line.

Every hypothesis gets three features:

    TM   the translation system's score as it printed it: with ``P-`` lines, their sum, the
         hypothesis' log2-probability; without them, fairseq's ``H-`` score (the log2-probability
         divided by the length to the power --lenpen); for a Moses list, its weighted total
         (a model score, not a log-probability)
    LM   log2 p(hypothesis </s>) under the language model (base 2, as fairseq-generate and
         fairseq-eval-lm print scores); with several ``--lm`` an ensemble
         whose per-token probabilities are averaged (as fairseq ensembles models)
    Len  the number of tokens the LM scored, </s> included (a length reward against the LM's
         preference for short outputs)

and the reranked score ``w_TM * TM + w_LM * LM + w_Len * Len``. The weights are given
(``--weights TM=1,LM=0.3,Len=0.5``) or tuned on a dev n-best list by a grid search over
the LM and Len weights, maximising sacrebleu BLEU; the chosen weights are printed.

Text forms (``--hyp-form``, ``--lm-form``; see ``alm_plugin/cli/text_forms.py``): ``bpe``
(tokenised + subword-nmt ``@@`` units, what fairseq-generate prints without
``--remove-bpe``), ``tok`` (sacremoses tokens) or ``raw``. Hypotheses are moved to the form
of the LM's training text; BLEU and the 1-best output use raw text (``--output-form``).
"""

import argparse
import itertools
import os
from typing import Dict, List

from .model_loading import load_models, task_data
from .nbest import (
    Hypothesis,
    NBestError,
    check_outputs,
    group_by_sentence,
    read_nbest,
    read_references,
    write_moses,
    write_whole,
)
from .scoring import LanguageModelScorer
from .text_forms import FORMS, TextForms
from .tool import run_tool

FEATURES = ("TM", "LM", "Len")


# ----------------------------------------------------------------------------- scoring


def add_lm_features(groups, scorer, forms: TextForms, hyp_form: str, lm_form: str) -> int:
    """Fill the LM and Len features; returns how many hypotheses had unknown words."""
    hypotheses = [h for group in groups.values() for h in group]
    lm_texts = [forms.convert(h.text, hyp_form, lm_form) for h in hypotheses]
    for hypothesis, text, score in zip(hypotheses, lm_texts, scorer.sentence_log2_probs(lm_texts)):
        hypothesis.features["LM"] = score
        hypothesis.features["Len"] = float(len(text.split()) + 1)
    unk = scorer.dictionary.unk()
    return sum(bool(scorer.encode(text).eq(unk).any()) for text in lm_texts)


# ----------------------------------------------------------------------------- reranking


def combined(hypothesis: Hypothesis, weights: Dict[str, float]) -> float:
    """The weighted sum; a feature with weight 0 is left out (so a -inf score times 0 is not
    NaN), and a -inf score with a positive weight ranks the hypothesis last."""
    return sum(weights[name] * hypothesis.features[name] for name in FEATURES if weights[name] != 0)


def best(groups, weights) -> Dict[int, Hypothesis]:
    """The highest-scoring hypothesis of each sentence (the first one on a tie)."""
    return {i: max(group, key=lambda h: combined(h, weights)) for i, group in groups.items()}


def system_best(groups) -> Dict[int, Hypothesis]:
    """The translation system's own 1-best: the first hypothesis listed for each sentence."""
    return {i: group[0] for i, group in groups.items()}


def corpus_bleu(chosen: Dict[int, Hypothesis], references: List[str]) -> float:
    import sacrebleu

    return sacrebleu.corpus_bleu([chosen[i].raw for i in range(len(references))], [references]).score


def tune_weights(groups, references, start: Dict[str, float], grids: Dict[str, List[float]]):
    """Grid search over every combination of the grids' weights (TM keeps its weight: scaling
    every weight changes nothing), maximising corpus BLEU; the first best point wins, so the
    smallest weights come first. A joint grid, not one feature at a time: a larger LM weight
    usually pays only with a larger length reward at the same time. Returns the weights and
    their BLEU."""
    weights, best_bleu = dict(start), corpus_bleu(best(groups, start), references)
    seen = {}
    names = list(grids)
    for values in itertools.product(*(grids[name] for name in names)):
        trial = {**start, **dict(zip(names, values))}
        chosen = best(groups, trial)
        key = tuple(id(chosen[i]) for i in range(len(references)))
        if key not in seen:  # many weights pick the same hypotheses: score each choice once
            seen[key] = corpus_bleu(chosen, references)
        if seen[key] > best_bleu + 1e-9:
            weights, best_bleu = trial, seen[key]
    return weights, best_bleu


def parse_weights(text: str) -> Dict[str, float]:
    weights = {"TM": 1.0, "LM": 0.0, "Len": 0.0}
    for item in filter(None, text.split(",")):
        name, _, value = item.partition("=")
        if name not in FEATURES or not value:
            raise argparse.ArgumentTypeError(
                f"weights look like TM=1,LM=0.3,Len=0.5 (features: {', '.join(FEATURES)}), got {item!r}"
            )
        weights[name] = float(value)
    return weights


GRID_POINTS = 1000


def grid(text: str) -> List[float]:
    try:
        low, high, step = map(float, text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"a grid is low:high:step, e.g. 0:1:0.05, got {text!r}") from None
    if not step > 0 or high < low:
        raise argparse.ArgumentTypeError(f"a grid low:high:step needs step > 0 and high >= low, got {text!r}")
    if (high - low) / step > GRID_POINTS:
        raise argparse.ArgumentTypeError(
            f"a grid low:high:step of at most {GRID_POINTS} steps (each is scored), got {text!r}: give a larger step"
        )
    return [round(low + k * step, 6) for k in range(int(round((high - low) / step)) + 1)]


def no_line_for_every_id(path: str, ids: List[int]) -> None:
    """Line i of the 1-best is sentence i: every id below the largest must have hypotheses (the first
    few missing named, counted without listing them all: an id may be 10^9)."""
    count = ids[-1] + 1 - len(ids) if ids else 0
    if not count:
        return
    first, expected = [], 0
    for i in ids:
        while expected < i and len(first) < 5:
            first.append(expected)
            expected += 1
        expected = i + 1
    raise NBestError(
        f"{path}: sentence ids {', '.join(map(str, first))}{', ...' if count > len(first) else ''} have no "
        f"hypotheses ({count} of {ids[-1] + 1}), so line i of the 1-best would not be sentence i. Is the n-best "
        "list truncated? (fairseq-generate drops a last batch whose size is not a multiple of "
        "--required-batch-size-multiple: generate with --required-batch-size-multiple 1)"
    )


def no_field_separator(path: str, groups) -> None:
    """A Moses list separates its fields with '|||': a hypothesis holding it could not be read back."""
    for group in groups.values():
        for h in group:
            if "|||" in h.text:
                raise NBestError(
                    f"{path}:{h.line}: the hypothesis holds '|||', the Moses list's field separator, so the "
                    "--output-nbest list could not be read back: leave out --output-nbest (--output-1best holds it)"
                )


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="alm-rescore", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nbest", required=True, help="n-best list to rerank (fairseq-generate output or Moses)")
    parser.add_argument("--lm", required=True, nargs="+", help="language model checkpoint(s); several = an ensemble")
    parser.add_argument(
        "--lm-data", help="data-bin directory with the LM's dict.txt (default: as saved in the checkpoint)"
    )
    parser.add_argument("--lang", default="en", help="target language, for sacremoses (default: en)")
    parser.add_argument("--hyp-form", choices=FORMS, default="bpe", help="form of the n-best hypotheses (default: bpe)")
    parser.add_argument("--lm-form", choices=FORMS, default="bpe", help="form of the LM's training text (default: bpe)")
    parser.add_argument("--bpe-codes", help="subword-nmt codes, needed to apply BPE to tok/raw hypotheses")
    parser.add_argument(
        "--weights",
        type=parse_weights,
        default=parse_weights("TM=1,LM=0.3"),
        help="feature weights, e.g. TM=1,LM=0.3,Len=0.5 (default: TM=1,LM=0.3,Len=0; "
        "with --tune-nbest: kept unless a grid point scores higher)",
    )
    parser.add_argument("--tune-nbest", help="dev n-best list to tune the weights on (BLEU with sacrebleu)")
    parser.add_argument("--tune-ref", help="raw references of the dev n-best list, one line per sentence id")
    parser.add_argument("--lm-grid", type=grid, default=grid("0:1:0.05"), help="LM weights tried, low:high:step")
    parser.add_argument("--len-grid", type=grid, default=grid("-1:3:0.25"), help="Len weights tried, low:high:step")
    parser.add_argument("--ref", help="raw references of --nbest: report BLEU before and after reranking")
    parser.add_argument("--output-1best", help="write the reranked best hypothesis of each sentence here")
    parser.add_argument("--output-form", choices=FORMS, default="raw", help="form of the 1-best output (default: raw)")
    parser.add_argument("--output-nbest", help="write the n-best list here, Moses format, with TM/LM/Len features")
    parser.add_argument("--batch-tokens", type=int, default=4000, help="most LM tokens per batch")
    parser.add_argument("--cpu", action="store_true", help="score on the CPU even when a GPU is there")
    args = parser.parse_args(argv)
    if bool(args.tune_nbest) != bool(args.tune_ref):
        parser.error("--tune-nbest and --tune-ref go together")
    run_tool("alm-rescore", run, args)


def run(args):
    outputs = {"--output-1best": args.output_1best, "--output-nbest": args.output_nbest}
    inputs = {
        "--nbest": [args.nbest],
        "--ref": [args.ref],
        "--tune-nbest": [args.tune_nbest],
        "--tune-ref": [args.tune_ref],
        "--bpe-codes": [args.bpe_codes],
        "--lm": args.lm,
    }
    check_outputs(outputs, inputs, data=[args.lm_data])
    for path, what in (
        (args.nbest, "the n-best list"),
        (args.ref, "the reference file"),
        (args.tune_nbest, "the dev n-best list"),
        (args.tune_ref, "the dev reference file"),
        (args.bpe_codes, "the BPE codes file"),
    ):
        if path and not os.path.isfile(path):
            raise NBestError(f"{what} {path} does not exist (or is not a file)")
    forms = TextForms(args.lang, args.bpe_codes)
    if args.hyp_form != "bpe" and "bpe" in (args.lm_form, args.output_form) and args.bpe_codes is None:
        raise NBestError(
            f"hypotheses in '{args.hyp_form}' form need --bpe-codes (the codes the LM's "
            "data was prepared with) to become BPE units"
        )
    listed = group_by_sentence(read_nbest(args.nbest))  # what makes the outputs impossible, found before the run
    if args.ref is None and args.output_1best:
        no_line_for_every_id(args.nbest, list(listed))
    if args.output_nbest:
        no_field_separator(args.nbest, listed)
    loaded = load_models(args.lm, args.lm_data, args.cpu, tool="alm-rescore")
    check_outputs(outputs, inputs, data=[task_data(task) for _, task in loaded])  # the data saved in each checkpoint
    scorer = LanguageModelScorer(args.lm, args.lm_data, args.cpu, args.batch_tokens, tool="alm-rescore", loaded=loaded)
    print(
        f"alm-rescore: {len(scorer.models)} language model(s), {len(scorer.dictionary)} types; "
        "LM scores are log2-probabilities; TM is the system's own score (log2 with P- lines)"
    )

    def prepare(path, ref_path, groups=None):
        groups = groups or group_by_sentence(read_nbest(path))
        references = read_references(ref_path, groups, path) if ref_path else None
        with_unk = add_lm_features(groups, scorer, forms, args.hyp_form, args.lm_form)
        n = sum(len(g) for g in groups.values())
        print(f"{path}: {len(groups)} sentences, {n} hypotheses ({with_unk} with words unknown to the LM)")
        for group in groups.values():
            for h in group:
                h.raw = forms.convert(h.text, args.hyp_form, "raw")
        return groups, references

    weights = args.weights
    if args.tune_nbest:
        groups, references = prepare(args.tune_nbest, args.tune_ref)
        baseline = corpus_bleu(system_best(groups), references)
        weights, bleu = tune_weights(groups, references, weights, {"LM": args.lm_grid, "Len": args.len_grid})
        print(f"tuned on {args.tune_nbest}: BLEU {baseline:.2f} -> {bleu:.2f}")
    print("weights: " + ",".join(f"{name}={weights[name]:g}" for name in FEATURES))

    groups, references = prepare(args.nbest, args.ref, listed)
    if references is not None:
        baseline = corpus_bleu(system_best(groups), references)
        rescored = corpus_bleu(best(groups, weights), references)
        print(f"{args.nbest}: BLEU {baseline:.2f} (system 1-best) -> {rescored:.2f} (rescored)")
    chosen = best(groups, weights)
    if args.output_1best:
        write_whole(
            args.output_1best, [forms.convert(chosen[i].text, args.hyp_form, args.output_form) + "\n" for i in groups]
        )
        print(f"wrote {args.output_1best}")
    if args.output_nbest:
        write_moses(args.output_nbest, groups, lambda h: combined(h, weights), FEATURES)
        print(f"wrote {args.output_nbest}")


if __name__ == "__main__":
    main()
