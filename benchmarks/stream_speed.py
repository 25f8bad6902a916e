"""Document context: what carrying a memory across chunks and the neural cache cost.

    python -m benchmarks.stream_speed --data data-bin/ptb --threads 1,2 --json benchmarks/results/cpu/stream_speed.json

train: the training step on 20 streams x 35 words of train in stream order, each model carrying its
state and memory as in ``fairseq-train``: ``alm_lstm`` (the baseline), ``attentive_lm`` single and
``amsrn`` tied (M = 100), ``pointer_sentinel_lm`` (L = 100), a bare ``nn.LSTM`` LM (nothing carried).
eval: ``timing.scoring_speed`` on valid as one stream, ``alm_lstm`` alone, with the neural cache and
with dynamic evaluation. Untrained models; ``--device cuda`` times each run to the last kernel.
"""

import os

import torch

from benchmarks import ROOT
from benchmarks.fairseq_runs import plugin_task
from benchmarks.timing import (
    device_name,
    measure_by_threads,
    parse,
    scoring_speed,
    speed_parser,
    timed_training,
    write_figures,
)
from benchmarks.train_speed import BareLSTMLanguageModel

STREAMS, CHUNK, MEMORY = 20, 35, "100"
ARCHS = {
    "alm_lstm": ["--arch", "alm_lstm"],
    "attentive_lm single M=100": ["--arch", "attentive_lm", "--attention-score", "single", "--memory-window", MEMORY],
    "amsrn tied M=100": ["--arch", "amsrn", "--memory-selection", "tied", "--memory-window", MEMORY],
    "pointer_sentinel_lm L=100": ["--arch", "pointer_sentinel_lm", "--pointer-window", MEMORY],
}
EVAL_KINDS = {
    "eval, no cache": (),
    "eval, cache N=2000": ("--neural-cache-window", "2000"),
    "eval, dynamic SGD, segments of 20": ("--dynamic-eval-lr", "0.1", "--dynamic-eval-segment", "20"),
}


def build(data, arch_args, size, batch):
    """The ``document_language_modeling`` task and a model, as ``fairseq-train`` builds them."""
    args, task = plugin_task(
        data,
        "--task",
        "document_language_modeling",
        "--cpu",
        "--batch-size",
        batch,
        "--tokens-per-sample",
        CHUNK,
        *arch_args,
        "--embed-dim",
        size,
        "--hidden-size",
        size,
        "--num-layers",
        "2",
        "--dropout",
        "0.2",
    )
    return task, task.build_model(args)


def chunks(task, split, count, device):
    """The first ``count`` batches of ``split``, in stream order, on ``device``."""
    from fairseq import utils

    task.load_dataset(split)
    dataset = task.dataset(split)
    batches = [task.collate([dataset[i]]) for i in range(min(len(dataset), count))]
    return [utils.move_to_cuda(b) for b in batches] if torch.device(device).type == "cuda" else batches


def carried_run(task, model, batches, device="cpu"):
    """A run timing ``model``'s training step over ``batches``, its stream carried from a fresh start."""
    from alm_plugin.criterions.attention_cross_entropy import AttentionCrossEntropyCriterion

    criterion = AttentionCrossEntropyCriterion(task, sentence_avg=True)

    def run():
        model.decoder.carry.reset()
        return timed_training(
            model,
            lambda sample: criterion(model, sample)[0] / STREAMS,
            batches,
            lambda s: s["ntokens"],
            device=torch.device(device),
        )

    return run


def training_runs(args):
    task, _ = build(args.data, ARCHS["alm_lstm"], args.size, STREAMS)
    batches = chunks(task, "train", args.updates, args.device)
    models = {name: build(args.data, arch, args.size, STREAMS)[1].to(args.device) for name, arch in ARCHS.items()}
    bare = BareLSTMLanguageModel(len(task.dictionary), args.size, 2, 0.2).to(args.device)

    def bare_loss(sample):
        logits = bare(sample["net_input"]["src_tokens"])
        return (
            torch.nn.functional.cross_entropy(
                logits.reshape(-1, logits.size(-1)).float(),
                sample["target"].reshape(-1),
                ignore_index=task.dictionary.pad(),
                reduction="sum",
            )
            / STREAMS
        )

    return {
        "bare nn.LSTM LM (no carry)": lambda: timed_training(
            bare, bare_loss, batches, lambda s: s["ntokens"], device=args.device
        ),
        **{name: carried_run(task, model, batches, args.device) for name, model in models.items()},
    }


def scoring_run(data, model_args, size, batches, device=torch.device("cpu")):
    """A run timing fairseq-eval-lm's work on the first ``batches`` chunks of valid, read as one stream."""
    task, model = build(data, model_args, size, 1)
    samples = chunks(task, "valid", batches, device)
    model.to(device)
    return lambda: scoring_speed(model, samples, device)


def main():
    parser = speed_parser(
        __doc__,
        device="cpu",
        data=os.path.join(ROOT, "data-bin", "ptb"),
        size=(200, "embedding and hidden size (the PTB table's: 200)"),
        updates=40,
        repeats=3,
        threads=f"1,{os.cpu_count()}",
    )
    parser.add_argument("--eval-batches", type=int, default=300, help="35-word chunks scored per eval run")
    parser.add_argument("--kinds", default="train,eval", help="what to time: train, eval or both")
    args = parse(parser)
    args.device = torch.device(args.device)
    if not os.path.exists(os.path.join(args.data, "dict.txt")):
        parser.error(
            f"--data {args.data}: no dict.txt; prepare it with "
            "python examples/language_model/prepare_lm_data.py --corpus ptb"
        )

    def evaluated():
        return {
            name: scoring_run(args.data, [*ARCHS["alm_lstm"], *extra], args.size, args.eval_batches, args.device)
            for name, extra in EVAL_KINDS.items()
        }

    asked = args.kinds.split(",")

    def kinds():
        return ([("train", training_runs(args), "alm_lstm")] if "train" in asked else []) + (
            [("eval", evaluated(), "eval, no cache")] if "eval" in asked else []
        )

    write_figures(
        args.json,
        {
            "by_threads": measure_by_threads(
                args.threads,
                kinds,
                args.repeats,
                lambda kind, threads: (
                    f"{kind} tokens/s, "
                    f"{os.path.basename(os.path.normpath(args.data))}, 2 x {args.size}, "
                    f"{STREAMS if kind == 'train' else 1} x "
                    f"{CHUNK} chunks, {device_name(args.device, threads)}, median of {args.repeats}"
                ),
            )
        },
    )


if __name__ == "__main__":
    main()
