"""Rerank translation n-best lists with language models and, for noisy-channel reranking, a channel
model; the weights are given or tuned for BLEU on a dev list (docs/tools.md describes the features).

    alm-rescore --nbest test.nbest --lm lm.pt --lang en --bpe-codes bpe.codes \\
        --tune-nbest valid.nbest --tune-ref valid.en --output-1best test.rescored.en
"""

import argparse
import json
import os
from typing import Dict, List

from .model_loading import load_models, task_data
from .nbest import (
    Hypothesis,
    NBestError,
    check_outputs,
    group_by_sentence,
    read_lines,
    read_nbest,
    read_references,
    write_moses,
    write_whole,
)
from .scoring import LanguageModelScorer
from .text_forms import FORMS, TextForms
from .tool import run_tool
from .tuning import TUNERS, BleuTable, tune

# ----------------------------------------------------------------------------- scoring


def lm_names(count: int, separate: bool) -> List[str]:
    """The LM features' names: none, one ensemble, or one per model."""
    return [f"LM{k}" for k in range(1, count + 1)] if separate and count > 1 else ["LM"] * (count > 0)


def feature_names(lms: List[str], channel: bool) -> List[str]:
    return ["TM", *lms, *(["Ch"] if channel else []), "Len"]


def add_lm_features(groups, scorer, forms: TextForms, hyp_form: str, lm_form: str, name: str = "LM") -> int:
    """Fill the ``name`` and Len features; returns how many hypotheses had unknown words."""
    hypotheses = [h for group in groups.values() for h in group]
    lm_texts = [forms.convert(h.text, hyp_form, lm_form) for h in hypotheses]
    for hypothesis, text, score in zip(hypotheses, lm_texts, scorer.sentence_log2_probs(lm_texts)):
        hypothesis.features[name] = score
        hypothesis.features["Len"] = float(len(text.split()) + 1)
    unk = scorer.dictionary.unk()
    return sum(bool(scorer.encode(text).eq(unk).any()) for text in lm_texts)


def add_channel_feature(groups, channel, sources: List[str], hypothesis_form: str) -> None:
    """Fill the Ch feature: ``sources[i]`` (the channel's form) given each hypothesis of sentence i."""
    hypotheses = [h for group in groups.values() for h in group]
    texts = [hypothesis_form(h.text) for h in hypotheses]
    scores = channel.log2_probs(texts, [sources[h.sentence_id] for h in hypotheses])
    for hypothesis, score in zip(hypotheses, scores):
        hypothesis.features["Ch"] = score
        hypothesis.source_length = len(sources[hypothesis.sentence_id].split()) + 1


def normalize(groups, names: List[str]) -> None:
    """Divide TM and the LM features by the hypothesis' length (</s> included) and Ch by the source's."""
    for group in groups.values():
        for h in group:
            length = len(h.text.split()) + 1
            for name in names:
                if name == "Ch":
                    h.features[name] /= h.source_length
                elif name != "Len":
                    h.features[name] /= length


def read_sources(path: str, groups, nbest_path: str) -> List[str]:
    """The source sentence of id i is line i + 1 of ``path``; every id must have its line and the file no more."""
    sources = read_lines(path, "the source file")
    if len(sources) != len(groups) or max(groups) >= len(sources):
        uncovered = [str(i) for i in range(len(sources)) if i not in groups][:5]
        raise NBestError(
            f"{path} has {len(sources)} lines but {nbest_path} has hypotheses for {len(groups)} sentence ids "
            f"(the largest {max(groups)}{'; none for ids ' + ', '.join(uncovered) if uncovered else ''}): give "
            "the source file the n-best list was translated from, line i + 1 being sentence id i"
        )
    return sources


# ----------------------------------------------------------------------------- reranking


def combined(hypothesis: Hypothesis, weights: Dict[str, float]) -> float:
    """The weighted sum; a feature with weight 0 is left out (so a -inf score times 0 is not
    NaN), and a -inf score with a positive weight ranks the hypothesis last."""
    return sum(weight * hypothesis.features[name] for name, weight in weights.items() if weight != 0)


def best(groups, weights) -> Dict[int, Hypothesis]:
    """The highest-scoring hypothesis of each sentence (the first one on a tie)."""
    return {i: max(group, key=lambda h: combined(h, weights)) for i, group in groups.items()}


def system_best(groups) -> Dict[int, Hypothesis]:
    """The translation system's own 1-best: the first hypothesis listed for each sentence."""
    return {i: group[0] for i, group in groups.items()}


def corpus_bleu(chosen: Dict[int, Hypothesis], references: List[str]) -> float:
    import sacrebleu

    return sacrebleu.corpus_bleu([chosen[i].raw for i in range(len(references))], [references]).score


def parse_weights(text: str) -> Dict[str, float]:
    """``NAME=VALUE,...`` as given; the names are checked against the run's features once it knows them."""
    weights = {}
    for item in filter(None, text.split(",")):
        name, _, value = item.partition("=")
        try:
            weights[name] = float(value) if name not in weights else None
        except ValueError:
            raise argparse.ArgumentTypeError(f"weights look like TM=1,LM=0.3,Len=0.5, got {item!r}") from None
        if weights[name] is None:
            raise argparse.ArgumentTypeError(f"the weight of {name} is given twice in {text!r}: give it once")
    return weights


def check_weights(given: Dict[str, float], names: List[str]) -> Dict[str, float]:
    """The run's weights: unless given, TM 1, each LM feature 0.3 and the rest 0; a name the run has no
    feature for is refused."""
    unknown = [name for name in given if name not in names]
    if unknown:
        raise NBestError(
            f"--weights names {', '.join(unknown)}, which this run has no feature for: its features are "
            f"{', '.join(names)} (LM1, LM2, ... with --separate-lms, Ch with --channel)"
        )
    defaults = {name: 1.0 if name == "TM" else 0.3 if name.startswith("LM") else 0.0 for name in names}
    return {name: given.get(name, defaults[name]) for name in names}


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
    parser.add_argument("--lm", nargs="+", default=[], help="language model checkpoint(s); several = an ensemble")
    parser.add_argument("--separate-lms", action="store_true", help="each --lm its own feature, LM1, LM2, ...")
    parser.add_argument(
        "--lm-data", help="data-bin directory with the LM's dict.txt (default: as saved in the checkpoint)"
    )
    parser.add_argument("--lang", default="en", help="target language, for sacremoses (default: en)")
    parser.add_argument("--hyp-form", choices=FORMS, default="bpe", help="form of the n-best hypotheses (default: bpe)")
    parser.add_argument("--lm-form", choices=FORMS, default="bpe", help="form of the LM's training text (default: bpe)")
    parser.add_argument("--bpe-codes", help="subword-nmt codes, needed to apply BPE to tok/raw hypotheses")
    channel = parser.add_argument_group("noisy channel")
    channel.add_argument("--channel", help="translation checkpoint trained target -> source: the Ch feature")
    channel.add_argument("--channel-data", help="data-bin directory with the channel model's dictionaries")
    channel.add_argument("--channel-form", choices=FORMS, default="bpe", help="form of the channel model's text")
    channel.add_argument("--source", help="the source sentences of --nbest, one line per sentence id")
    channel.add_argument("--tune-source", help="the source sentences of --tune-nbest")
    channel.add_argument("--source-lang", default="de", help="source language, for sacremoses (default: de)")
    channel.add_argument("--source-form", choices=FORMS, default="raw", help="form of the --source files")
    channel.add_argument("--source-bpe-codes", help="subword-nmt codes of the channel model's source-side text")
    parser.add_argument(
        "--length-only", action="store_true", help="rerank by TM and Len alone, the baseline an LM or channel must beat"
    )
    parser.add_argument("--normalize", action="store_true", help="divide each score by its sentence's length")
    parser.add_argument(
        "--weights",
        type=parse_weights,
        default={},
        help="feature weights, e.g. TM=1,LM=0.3,Len=0.5 (default: TM=1, each LM feature 0.3, the rest 0; "
        "with --tune-nbest: the tuner's first trial)",
    )
    parser.add_argument("--tune-nbest", help="dev n-best list to tune the weights on (BLEU with sacrebleu)")
    parser.add_argument("--tune-ref", help="raw references of the dev n-best list, one line per sentence id")
    parser.add_argument("--tuner", choices=TUNERS, default="grid", help="how the weights are searched for")
    parser.add_argument("--trials", type=int, default=200, help="random search: the weights drawn")
    parser.add_argument("--rounds", type=int, default=3, help="coordinate ascent: the passes over the weights")
    parser.add_argument("--seed", type=int, default=1, help="random search: the seed of the draws")
    parser.add_argument("--lm-grid", type=grid, default=grid("0:1:0.05"), help="LM weights tried, low:high:step")
    parser.add_argument("--len-grid", type=grid, default=grid("-1:3:0.25"), help="Len weights tried, low:high:step")
    parser.add_argument("--channel-grid", type=grid, default=grid("0:2:0.1"), help="Ch weights tried, low:high:step")
    parser.add_argument("--ref", help="raw references of --nbest: report BLEU before and after reranking")
    parser.add_argument("--output-1best", help="write the reranked best hypothesis of each sentence here")
    parser.add_argument("--output-form", choices=FORMS, default="raw", help="form of the 1-best output (default: raw)")
    parser.add_argument("--output-nbest", help="write the n-best list here, Moses format, with its features")
    parser.add_argument("--output-trials", help="write the tuner's trials and chosen weights here, as JSON")
    parser.add_argument("--batch-tokens", type=int, default=4000, help="most LM tokens per batch")
    parser.add_argument("--cpu", action="store_true", help="score on the CPU even when a GPU is there")
    args = parser.parse_args(argv)
    if args.length_only and (args.lm or args.channel):
        parser.error("--length-only reranks without a language model or a channel: drop --lm and --channel")
    if not args.lm and not args.channel and not args.length_only:
        parser.error("nothing to rescore with: give --lm, --channel or both (or --length-only, TM and Len alone)")
    if bool(args.tune_nbest) != bool(args.tune_ref):
        parser.error("--tune-nbest and --tune-ref go together")
    if args.channel and not args.source:
        parser.error("--channel scores the source given each hypothesis: give --source, the n-best list's source")
    if args.channel and args.tune_nbest and not args.tune_source:
        parser.error("--channel with --tune-nbest needs --tune-source, the dev n-best list's source")
    if (args.source or args.tune_source) and not args.channel:
        parser.error("--source and --tune-source are read by the channel model: give --channel, or drop them")
    if args.output_trials and not args.tune_nbest:
        parser.error("--output-trials records the tuning: give --tune-nbest and --tune-ref")
    if args.trials < 1 or args.rounds < 1:
        parser.error("--trials and --rounds are counts of at least 1")
    run_tool("alm-rescore", run, args)


def check_normalize(path: str, groups) -> None:
    """Dividing TM by the length needs it to be a log-probability sum (fairseq's P- lines)."""
    if not all(h.tm_is_sum for group in groups.values() for h in group):
        raise NBestError(
            f"{path}: --normalize divides the TM log-probability by the length, but this list's TM is "
            "fairseq's length-normalised H- score or a Moses total: give fairseq-generate output with its "
            "P- lines, or drop --normalize"
        )


def run(args):
    outputs = {
        "--output-1best": args.output_1best,
        "--output-nbest": args.output_nbest,
        "--output-trials": args.output_trials,
    }
    inputs = {
        "--nbest": [args.nbest],
        "--ref": [args.ref],
        "--tune-nbest": [args.tune_nbest],
        "--tune-ref": [args.tune_ref],
        "--bpe-codes": [args.bpe_codes],
        "--lm": args.lm,
        "--channel": [args.channel],
        "--source": [args.source],
        "--tune-source": [args.tune_source],
        "--source-bpe-codes": [args.source_bpe_codes],
    }
    check_outputs(outputs, inputs, data=[args.lm_data, args.channel_data])
    for path, what in (
        (args.nbest, "the n-best list"),
        (args.ref, "the reference file"),
        (args.tune_nbest, "the dev n-best list"),
        (args.tune_ref, "the dev reference file"),
        (args.bpe_codes, "the BPE codes file"),
        (args.source, "the source file"),
        (args.tune_source, "the dev source file"),
        (args.source_bpe_codes, "the source BPE codes file"),
    ):
        if path and not os.path.isfile(path):
            raise NBestError(f"{what} {path} does not exist (or is not a file)")
    lms = lm_names(len(args.lm), args.separate_lms)
    names = feature_names(lms, bool(args.channel))
    weights = check_weights(args.weights, names)
    ranges = {name: args.lm_grid for name in lms}  # TM keeps its weight: scaling every weight changes nothing
    ranges.update({"Ch": args.channel_grid} if args.channel else {})
    ranges["Len"] = args.len_grid
    if args.tune_nbest and args.tuner == "grid" and len(ranges) > 2:
        raise NBestError(
            f"--tuner grid tries every combination of {', '.join(ranges)}: with more than two tuned weights use "
            "--tuner random or --tuner coordinate"
        )
    forms = TextForms(args.lang, args.bpe_codes)
    needs_bpe = "bpe" in (args.lm_form, args.output_form, args.channel_form if args.channel else None)
    if args.hyp_form != "bpe" and needs_bpe and not args.bpe_codes:
        raise NBestError(
            f"hypotheses in '{args.hyp_form}' form need --bpe-codes (the codes the LM's "
            "data was prepared with) to become BPE units"
        )
    if args.channel and args.source_form != args.channel_form == "bpe" and not args.source_bpe_codes:
        raise NBestError(
            f"sources in '{args.source_form}' form need --source-bpe-codes (the codes of the channel model's "
            "source-side text) to become BPE units"
        )
    source_forms = TextForms(args.source_lang, args.source_bpe_codes) if args.channel else None
    listed = group_by_sentence(read_nbest(args.nbest))  # what makes the outputs impossible, found before the run
    if args.normalize:
        check_normalize(args.nbest, listed)
    if args.ref is None and args.output_1best:
        no_line_for_every_id(args.nbest, list(listed))
    if args.output_nbest:
        no_field_separator(args.nbest, listed)
    sources = read_sources(args.source, listed, args.nbest) if args.channel else None
    loaded = load_models(args.lm, args.lm_data, args.cpu, tool="alm-rescore") if args.lm else []
    check_outputs(outputs, inputs, data=[task_data(task) for _, task in loaded])  # the data saved in each checkpoint
    scorers = [
        LanguageModelScorer(paths, args.lm_data, args.cpu, args.batch_tokens, tool="alm-rescore", loaded=models)
        for paths, models in ([([p], [m]) for p, m in zip(args.lm, loaded)] if len(lms) > 1 else [(args.lm, loaded)])
        if models
    ]
    if scorers:
        print(
            f"alm-rescore: {len(loaded)} language model(s) as {', '.join(lms)}, {len(scorers[0].dictionary)} types; "
            "LM scores are log2-probabilities; TM is the system's own score (log2 with P- lines)"
        )
    if args.length_only:
        print("alm-rescore: no language model and no channel: TM and the length reward Len alone")
    channel = None
    if args.channel:
        from .channel import ChannelScorer

        channel = ChannelScorer(args.channel, args.channel_data, args.cpu, args.batch_tokens)
        channel.check_languages(args.lang, args.source_lang)
        print(f"alm-rescore: channel model {args.channel} ({channel.reads} -> {channel.writes}) as Ch")

    def prepare(path, ref_path, source_lines, groups=None):
        groups = groups or group_by_sentence(read_nbest(path))
        if args.normalize:
            check_normalize(path, groups)
        references = read_references(ref_path, groups, path) if ref_path else None
        unknown = [
            add_lm_features(groups, scorer, forms, args.hyp_form, args.lm_form, n) for n, scorer in zip(lms, scorers)
        ]
        if not scorers:  # the length reward counts what an LM would score: the tokens in --lm-form and </s>
            for h in (h for group in groups.values() for h in group):
                h.features["Len"] = float(len(forms.convert(h.text, args.hyp_form, args.lm_form).split()) + 1)
        if channel is not None:
            given = source_lines or read_sources(args.tune_source, groups, path)
            channel_sources = [source_forms.convert(line, args.source_form, args.channel_form) for line in given]
            add_channel_feature(
                groups, channel, channel_sources, lambda t: forms.convert(t, args.hyp_form, args.channel_form)
            )
        if args.normalize:
            normalize(groups, names)
        n = sum(len(g) for g in groups.values())
        unknown_words = f" ({max(unknown)} with words unknown to the LM)" if unknown else ""
        print(f"{path}: {len(groups)} sentences, {n} hypotheses{unknown_words}")
        for group in groups.values():
            for h in group:
                h.raw = forms.convert(h.text, args.hyp_form, "raw")
        return groups, references

    if args.tune_nbest:
        groups, references = prepare(args.tune_nbest, args.tune_ref, None)
        table = BleuTable(groups, references, names)
        weights, bleu, trials = tune(table, weights, ranges, args.tuner, args.trials, args.seed, args.rounds)
        print(
            f"tuned on {args.tune_nbest} ({args.tuner}, {len(trials)} trials"
            f"{f', seed {args.seed}' if args.tuner == 'random' else ''}): BLEU {table.system():.2f} -> {bleu:.2f}"
        )
        if args.output_trials:
            record = {
                "tune_nbest": args.tune_nbest,
                "tuner": args.tuner,
                "seed": args.seed if args.tuner == "random" else None,
                "normalize": args.normalize,
                "system_bleu": round(table.system(), 4),
                "weights": weights,
                "bleu": round(bleu, 4),
                "trials": [{"weights": w, "bleu": round(b, 4)} for w, b in trials],
            }
            write_whole(args.output_trials, [json.dumps(record, indent=1) + "\n"])
            print(f"wrote {args.output_trials}")
    print("weights: " + ",".join(f"{name}={weights[name]:g}" for name in names))

    groups, references = prepare(args.nbest, args.ref, sources, listed)
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
        write_moses(args.output_nbest, groups, lambda h: combined(h, weights), names)
        print(f"wrote {args.output_nbest}")


if __name__ == "__main__":
    main()
