"""The parameters a row trains, beside the count fairseq prints: the elements that receive a gradient.

A parameter can sit in a model and never move. With ``--zero-context`` the context half of the concat
layer's ``W_c`` multiplies a zero vector, so a row counts weights it never trains; a row matched to that
count (``lstm-matched``) is matched to a nominal figure. This builds a row's model from its arguments on
its corpus's dictionary, scores a probe text in which every word is read, backpropagates a weighted
log-likelihood, and counts the elements whose gradient is not zero (``count``).

    python -m benchmarks.trainable --corpus ptb            # each row's JSON without one gains ``trainable_params``
    python -m benchmarks.trainable --corpus ptb --rows lstm,single-zero-context --dry-run
"""

import argparse
import os
import re
import subprocess
import sys

from benchmarks import ROOT
from benchmarks.result_files import read_result, write_json
from benchmarks.rows import CORPORA

PROBE_LENGTH = 35  # tokens a probe sentence holds (the rows' training block)
CHUNK = 32  # probe sentences a forward pass reads, so that its float64 scores over a large vocabulary stay small


def build(corpus, row):
    """The row's model as fairseq-train builds it (its task, dictionary and arguments), on the CPU."""
    from fairseq import options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    from benchmarks.row_commands import CPU, criterion_args, task_args

    parser = options.get_training_parser()
    args = options.parse_args_and_arch(
        parser, [corpus.data, *task_args(corpus, row, True, CPU), *row.args, *criterion_args(row)]
    )
    cfg = convert_namespace_to_omegaconf(args)  # as fairseq-train does: a named arch's defaults filled in
    task = tasks.setup_task(cfg.task)
    return task, task.build_model(cfg.model)


def probe(dictionary, length=PROBE_LENGTH, seed=0):
    """Sentences that read every word but padding once, in an order shuffled by ``seed``, each ending with
    end-of-sentence."""
    import torch

    words = torch.tensor([i for i in range(len(dictionary)) if i != dictionary.pad()])
    words = words[torch.randperm(len(words), generator=torch.Generator().manual_seed(seed))]
    rows = -(-len(words) // (length - 1))
    padded = torch.full((rows * (length - 1),), dictionary.eos())
    padded[: len(words)] = words
    return torch.cat([padded.view(rows, length - 1), torch.full((rows, 1), dictionary.eos())], dim=1)


def count(corpus, row, probes=1, threads=None):
    """``{"params": nominal, "trainable_params": elements with a gradient}`` for ``row``'s model.

    In float64, on random targets (for the character models, every word once, in a shuffled order: they read the
    targets' spellings) each weighted by a random sign and size, ``probes`` times: no gradient cancels
    to zero by the probe's own symmetry, and a real one is exactly zero in every probe only by a vanishing chance,
    where one cut off by the model's structure (a weight on a zeroed input) is zero in all of them. A gradient
    that is zero only in exact arithmetic (a bias that shifts every score of a softmax alike) is float64's
    rounding noise here, and counted."""
    import torch

    if threads:
        torch.set_num_threads(threads)
    generator = torch.Generator().manual_seed(row.seed)
    torch.manual_seed(row.seed)
    task, model = build(corpus, row)
    model.double().eval()  # no dropout: what the probe reaches, not which units a mask kept
    tokens = probe(task.target_dictionary)
    lengths = torch.full((len(tokens),), tokens.size(1))
    reached = [torch.zeros_like(p) for p in model.parameters()]
    for k in range(probes):
        model.zero_grad()
        if corpus.open_vocabulary:  # the targets' spellings are what the character models read: every word's
            targets = probe(task.target_dictionary, seed=k + 1)
        else:
            targets = torch.randint(len(task.target_dictionary), tokens.shape, generator=generator)
        weights = torch.randn(tokens.shape, generator=generator, dtype=torch.float64)
        for part in torch.arange(len(tokens)).split(CHUNK):  # the loss is a sum: its gradient accumulates by parts
            if corpus.open_vocabulary:  # the character models score the given target words: no softmax over words
                scores = model(tokens[part], target_tokens=targets[part])[0].squeeze(-1)
            else:
                net_output = model(tokens[part], src_lengths=lengths[part])
                # fairseq's adaptive softmax writes into its log-softmax's output: each saved tensor is kept as
                # a copy taken when it is saved, so the backward reads what the forward computed
                with torch.autograd.graph.saved_tensors_hooks(torch.clone, lambda saved: saved):
                    lprobs = model.get_normalized_probs(net_output, log_probs=True)
                scores = lprobs.gather(-1, targets[part].unsqueeze(-1)).squeeze(-1)
            (scores * weights[part]).sum().backward()
        for most, p in zip(reached, model.parameters()):
            if p.grad is not None:
                torch.maximum(most, p.grad.abs(), out=most)
    return {
        "params": sum(p.numel() for p in model.parameters()),
        "trainable_params": sum(int((most > 0).sum()) for most in reached),
    }


def start(corpus, name):
    """``count`` for the row ``name`` in a process of its own, one thread (``table.py`` runs it beside the
    training); ``collect`` reads what it found."""
    return subprocess.Popen(
        [sys.executable, "-m", "benchmarks.trainable", "--corpus", corpus.name, "--rows", name, "--dry-run"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )


def collect(process, name):
    """The count ``start`` found for ``name``; None, said on stderr, where it failed (the row's JSON is written
    without it, and ``python -m benchmarks.trainable`` fills it in later)."""
    output = process.communicate()[0]
    found = re.search(rf"^{re.escape(name)}: ([\d,]+) of [\d,]+ parameters train$", output, re.MULTILINE)
    if process.returncode or not found:
        print(f"{name}: its parameters that train were not counted:\n{output[-2000:]}", file=sys.stderr)
        return None
    return int(found.group(1).replace(",", ""))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", choices=list(CORPORA), default="ptb")
    parser.add_argument("--rows", help="comma-separated (default: every row whose JSON has no count yet)")
    parser.add_argument("--dry-run", action="store_true", help="print the counts, write no JSON")
    args = parser.parse_args()
    corpus = CORPORA[args.corpus]
    if not os.path.exists(os.path.join(corpus.data, "dict.txt")):
        sys.exit(f"no {corpus.data}: prepare it first (python -m benchmarks.table --corpus {corpus.name} does)")
    found = corpus.load()
    # by default the rows whose JSON has no count yet
    names = args.rows.split(",") if args.rows else [n for n in found if "trainable_params" not in found[n]]
    if unknown := [n for n in names if n not in corpus.rows]:
        sys.exit(f"unknown rows {unknown} for --corpus {corpus.name}; choose from {', '.join(corpus.rows)}")
    counted = {}  # by the model's arguments: a second seed or another reading builds the same model
    for name in names:
        row = corpus.rows[name]
        if row.args not in counted:
            counted[row.args] = count(corpus, row)
        params, trainable = counted[row.args]["params"], counted[row.args]["trainable_params"]
        print(f"{name}: {trainable:,} of {params:,} parameters train", flush=True)
        path = os.path.join(corpus.results, f"{name}.json")
        if args.dry_run or not os.path.exists(path):
            continue
        result = read_result(path)
        if result["params"] != params:  # another dictionary or model than the row trained
            sys.exit(f"{name}: the model built here has {params:,} parameters, its JSON {result['params']:,}")
        write_json(path, {**result, "trainable_params": trainable})


if __name__ == "__main__":
    main()
