"""Which words does the cache model copy, and which does it spell? The average cache posterior of
each word type over a split (Kawakami et al. Tables 7-8), for a char_cache_lm or a pointer_sentinel_lm.

    alm-cache-posterior --path checkpoints/char_cache/checkpoint_best.pt \\
        --data data-bin/wikitext-2-sample --gen-subset test [--plot cache.png]
"""

import argparse
import collections
import math
import sys

import torch

from ..errors import ScoringError
from .model_loading import load_models, task_data
from .output_files import check_outputs, save_figure, write_json
from .tool import picture_path, run_tool


def score_split(model, task, split):
    """Per-word (word id, log p, copy posterior), in corpus order, |c| (0 for a word model) and
    the mean pointer gate (``None`` for the character cache model)."""
    task.cfg.batch_size = 1  # one stream: the split read whole, nothing cut
    task.load_dataset(split)
    words, log_probs, posteriors, characters, gates = [], [], [], 0, []
    device = next(model.parameters()).device
    itr = task.get_batch_iterator(task.dataset(split)).next_epoch_itr(shuffle=False)
    pointer = getattr(model.decoder, "copy_posterior", None)
    with torch.no_grad():
        for sample in itr:
            target = sample["target"].to(device)
            real = target.ne(task.target_dictionary.pad()).cpu()
            net_input = {
                k: v.to(device) if torch.is_tensor(v) else v  # stream_chunk: a tuple, on the host
                for k, v in sample["net_input"].items()
                if k != "src_lengths"
            }
            scores, extra = model(**net_input)
            words.append(sample["target"][real])
            if pointer is None:  # the character model scores the target words themselves
                log_probs.append(scores.squeeze(-1).cpu()[real])
                posteriors.append(extra["cache_posterior"].cpu()[real])
                characters += sample["nchars"]
            else:
                at_target = model.decoder.target_log_probs((scores, extra), target)  # log p(w), Eq. 3
                log_probs.append(at_target.cpu()[real])
                posteriors.append(pointer(at_target, extra, target).cpu()[real])
                gates.append(extra["pointer_gate"].cpu()[real])
    gate = torch.cat(gates).mean().item() if gates else None
    return torch.cat(words), torch.cat(log_probs), torch.cat(posteriors), characters, gate


def posterior_by_type(words, posteriors, min_count):
    """Mean posterior per word type over its occurrences after the first."""
    seen, sums, counts = set(), collections.Counter(), collections.Counter()
    for word, posterior in zip(words.tolist(), posteriors.tolist()):
        if word in seen:  # a first occurrence cannot be copied
            sums[word] += posterior
            counts[word] += 1
        seen.add(word)
    return {w: sums[w] / counts[w] for w in counts if counts[w] + 1 >= min_count}, counts


def ranked(means, counts, top):
    """The ``top`` types most and least often copied, no type on both sides; means equal at the
    printed precision (many types sit at 1.000 or 0.000) go to the more frequent type."""
    rows = max(0, min(top, len(means) // 2))
    shown = {w: round(m, 3) for w, m in means.items()}
    copied = sorted(shown, key=lambda w: (-shown[w], -counts[w], w))[:rows]
    rest = set(shown) - set(copied)
    return copied, sorted(rest, key=lambda w: (shown[w], -counts[w], w))[:rows]


def training_counts(task):
    """How often each dictionary word occurs in the training split (the dictionary's own counts
    cover every split when it is built with ``--open-vocabulary``)."""
    if not hasattr(task, "load_words"):
        raise ScoringError(
            f"--rare-in-train counts the training split as a stream, which the checkpoint's task "
            f"({task.__class__.__name__}) does not read: drop --rare-in-train, or use a model "
            "trained with --task open_vocabulary_language_modeling / document_language_modeling"
        )
    return torch.bincount(task.load_words("train"), minlength=len(task.target_dictionary))


def plot(path, dictionary, words, posteriors, n):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [dictionary[w] if w != dictionary.eos() else "</s>" for w in words[:n].tolist()]
    values = posteriors[:n].numpy()
    fig, ax = plt.subplots(figsize=(max(8, 0.28 * len(labels)), 3.2))
    ax.bar(range(len(labels)), values, color=plt.cm.viridis(values))
    ax.set_xticks(range(len(labels)), labels, rotation=90)
    ax.set_ylim(0, 1)
    ax.set_ylabel("p(cache | word)")
    ax.set_title("cache posterior per word: copied (high) or spelled (low)")
    save_figure(fig, path, dpi=110, bbox_inches="tight")


class RenamedOption(argparse.Action):
    """``--split``: read as ``--gen-subset``, with a note."""

    def __call__(self, parser, namespace, value, option_string=None):
        print(
            f"{parser.prog}: note: --split is read as --gen-subset (as in alm-cache-grid and fairseq-eval-lm)",
            file=sys.stderr,
        )
        setattr(namespace, self.dest, value)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="alm-cache-posterior", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--path", required=True, help="checkpoint of a char_cache_lm model")
    parser.add_argument("--data", help="data-bin directory (default: the one saved in the checkpoint)")
    parser.add_argument("--gen-subset", default="test", help="split to analyse (default: test), as alm-cache-grid's")
    parser.add_argument("--split", action=RenamedOption, dest="gen_subset", help=argparse.SUPPRESS)
    parser.add_argument("--min-count", type=int, default=2, help="only word types seen this often")
    parser.add_argument("--top", type=int, default=15, help="how many types to list per side")
    parser.add_argument(
        "--rare-in-train",
        type=int,
        default=0,
        metavar="N",
        help="also list the types seen fewer than N times in the training split (the paper's Table 8: 5)",
    )
    parser.add_argument("--json", help="also write the figures and the lists to this file")
    parser.add_argument(
        "--plot",
        metavar="PNG",
        help="also draw the posterior of the first words (the format from the extension; none: .png is added)",
    )
    parser.add_argument("--plot-words", type=int, default=60, help="how many words to draw (with --plot)")
    parser.add_argument("--cpu", action="store_true", help="stay on the CPU even with a GPU")
    args = parser.parse_args(argv)
    run_tool("alm-cache-posterior", run, args)


def run(args):
    if args.rare_in_train < 0:
        raise ScoringError(
            f"--rare-in-train {args.rare_in_train}: give a count of training occurrences "
            "(the paper's Table 8: 5), or 0 for no such list"
        )
    if args.top < 0:
        raise ScoringError(f"--top {args.top}: give how many word types to list per side (e.g. 15; 0: none)")
    if args.plot_words < 1:
        raise ScoringError(
            f"--plot-words {args.plot_words}: give how many of the split's first words to draw (at least 1, e.g. 60)"
        )
    inputs = {"--path": [args.path]}
    check_outputs({"--plot": args.plot, "--json": args.json}, inputs, data=[args.data])  # the names as given
    args.plot = picture_path(args.plot, "--plot")  # the file savefig writes: no extension, .png added
    outputs = {"--plot": args.plot, "--json": args.json}
    check_outputs(outputs, inputs, data=[args.data])
    ((model, task),) = load_models([args.path], args.data, args.cpu, tool="alm-cache-posterior")
    check_outputs(outputs, inputs, data=[task_data(task)])  # the data directory saved in the checkpoint
    if getattr(model.decoder, "cache", None) is None and not hasattr(model.decoder, "copy_posterior"):
        raise ScoringError(
            f"{args.path} has no word cache ({model.__class__.__name__}, "
            "e.g. --arch hclm or char_lstm_lm): the cache posterior needs a char_cache_lm "
            "or a pointer_sentinel_lm"
        )
    dictionary = task.target_dictionary
    in_train = training_counts(task) if args.rare_in_train else None  # before scoring: a missing split fails fast
    words, log_probs, posteriors, characters, gate = score_split(model, task, args.gen_subset)

    nll = -log_probs.double().sum().item()
    per_character = f"{characters} characters | bpc {nll / characters / math.log(2):.4f} | " if characters else ""
    print(
        f"{args.gen_subset}: {words.numel()} words, {per_character}word ppl {math.exp(nll / words.numel()):.2f} | "
        f"mean cache posterior {posteriors.mean().item():.3f}"
        + (f" | mean sentinel gate {gate:.3f}" if gate is not None else "")
    )
    means, counts = posterior_by_type(words, posteriors, args.min_count)
    # the character model copies from its word cache or spells; the pointer copies or uses its softmax
    sources = (
        ("copied from the cache", "spelled by the LM")
        if gate is None
        else ("copied by the pointer", "from the softmax")
    )
    seen = f"seen at least {max(args.min_count, 2)} times in {args.gen_subset}"
    tables = {seen: means}
    if args.rare_in_train:
        tables[f"{seen} and fewer than {args.rare_in_train} times in train"] = {
            w: m for w, m in means.items() if in_train[w] < args.rare_in_train
        }
    record = {
        "path": str(args.path),
        "split": args.gen_subset,
        "words": words.numel(),
        "characters": characters,
        "bpc": nll / characters / math.log(2) if characters else None,
        "word_ppl": math.exp(nll / words.numel()),
        "mean_posterior": posteriors.mean().item(),
        "mean_sentinel_gate": gate,
        "min_count": args.min_count,
        "rare_in_train": args.rare_in_train,
        "tables": [],
    }
    for title, table in tables.items():
        copied, spelled = ranked(table, counts, args.top)
        # n: the type's occurrences in the split (the posterior averages all but the first)
        print(f"\nword types {title} ({len(table)}):\n{sources[0]:<32}{sources[1]:<32}")
        print(f"{'word':<16}{'p(z|w)':>8}{'n':>6}  {'':<2}{'word':<16}{'p(z|w)':>8}{'n':>6}")
        for high, low in zip(copied, spelled):
            print(
                f"{dictionary[high]:<16}{means[high]:>8.3f}{counts[high] + 1:>6}  {'':<2}"
                f"{dictionary[low]:<16}{means[low]:>8.3f}{counts[low] + 1:>6}"
            )
        record["tables"].append(
            {
                "title": title,
                "types": len(table),
                **{
                    side: [[dictionary[w], round(means[w], 4), counts[w] + 1] for w in chosen]
                    for side, chosen in (("copied", copied), ("spelled", spelled))
                },
            }
        )
    if args.json:
        write_json(args.json, record)
        print(f"\nwrote {args.json}")
    if args.plot:
        plot(args.plot, dictionary, words, posteriors, args.plot_words)
        print(f"\nwrote {args.plot}")


if __name__ == "__main__":
    main()
