#!/usr/bin/env python
"""Document context: what carrying a memory across chunks and the neural cache cost.

    python -m benchmarks.stream_speed --data data-bin/ptb --threads 1,2 \
        --json benchmarks/results/cpu/stream_speed.json

**Training step** on ``document_language_modeling`` batches (20 streams x 35 words of the
train split, in stream order, so every model carries its state and memory from chunk to
chunk as in ``fairseq-train``): forward, NLL (``attention_cross_entropy``, what fairseq-train
runs: the target's log probability alone), backward, clip, SGD, for ``alm_lstm`` (the
baseline), ``attentive_lm`` single and ``amsrn`` tied with M = 100, ``pointer_sentinel_lm``
with L = 100, and a bare ``nn.LSTM`` LM (nothing carried). Goal: attention >= 0.85x ``alm_lstm``.

**Evaluation**, what ``fairseq-eval-lm --batch-size 1`` does per batch (the task's loader,
the forward, ``get_normalized_probs`` with the batch, the targets' log probs) on the valid
split read as one stream, ``alm_lstm`` with and without ``--neural-cache-window 2000``.
Goal: >= 0.8x (per token the cache is an N x d product, the softmax V x d). With dynamic evaluation
(SGD, segments of 20 tokens: a forward with its graph, a backward and a step per segment):
goal >= 0.35x.

Runs are interleaved and repeated (median); every thread count is measured in the same run.
The models are untrained: speed does not depend on the weights. ``--device cuda`` times the same on
a GPU (``benchmarks/gpu/run.sh speed`` runs ``--kinds eval`` there), each run to the last kernel.
"""
import argparse
import os
import sys

import torch

from benchmarks.fairseq_runs import ROOT
from benchmarks.timing import device_name, measure_by_threads, scoring_speed, timed_training, write_json
from benchmarks.train_speed import BareLSTMLanguageModel

STREAMS, CHUNK, MEMORY = 20, 35, "100"
ARCHS = {
    "alm_lstm": ["--arch", "alm_lstm"],
    "attentive_lm single M=100": ["--arch", "attentive_lm", "--attention-score", "single", "--memory-window", MEMORY],
    "amsrn tied M=100": ["--arch", "amsrn", "--memory-selection", "tied", "--memory-window", MEMORY],
    "pointer_sentinel_lm L=100": ["--arch", "pointer_sentinel_lm", "--pointer-window", MEMORY],
}
EVAL_KINDS = {"eval, no cache": (), "eval, cache N=2000": ("--neural-cache-window", "2000"),
              "eval, dynamic SGD, segments of 20": ("--dynamic-eval-lr", "0.1", "--dynamic-eval-segment", "20")}


def on(device, batch):
    from fairseq import utils
    return utils.move_to_cuda(batch) if device.type == "cuda" else batch


def build(data, arch_args, size, batch):
    from fairseq import options, tasks
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser, [
        data, "--user-dir", os.path.join(ROOT, "alm_plugin"), "--task", "document_language_modeling", "--cpu",
        "--batch-size", str(batch), "--tokens-per-sample", str(CHUNK), *arch_args, "--embed-dim", size,
        "--hidden-size", size, "--num-layers", "2", "--dropout", "0.2"])
    task = tasks.setup_task(args)
    return task, task.build_model(args)


def training_runs(args, size):
    from alm_plugin.criterions.attention_cross_entropy import AttentionCrossEntropyCriterion

    task, _ = build(args.data, ARCHS["alm_lstm"], size, STREAMS)
    task.load_dataset("train")
    dataset = task.dataset("train")
    batches = [on(args.device, task.collate([dataset[i]])) for i in range(args.updates)]
    models = {name: build(args.data, arch, size, STREAMS)[1].to(args.device) for name, arch in ARCHS.items()}
    bare = BareLSTMLanguageModel(len(task.dictionary), int(size), 2, 0.2).to(args.device)

    def step_all(loss_of, module):
        return timed_training(module, lambda sample: loss_of(sample) / STREAMS, batches, lambda s: s["ntokens"],
                              device=args.device)

    criterion = AttentionCrossEntropyCriterion(task, sentence_avg=True)

    def ours(model):
        return lambda: (model.decoder.carry.reset(), step_all(lambda sample: criterion(model, sample)[0], model))[1]

    def bare_loss(sample):
        logits = bare(sample["net_input"]["src_tokens"])
        return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)).float(),
                                                 sample["target"].reshape(-1), ignore_index=task.dictionary.pad(),
                                                 reduction="sum")

    runs = {"bare nn.LSTM LM (no carry)": lambda: step_all(bare_loss, bare)}
    runs.update({name: ours(model) for name, model in models.items()})
    return runs


def eval_runs(args, size):
    return {name: scoring_run(args.data, [*ARCHS["alm_lstm"], *extra], size, args.eval_batches, args.device)
            for name, extra in EVAL_KINDS.items()}


def scoring_run(data, model_args, size, batches, device=torch.device("cpu")):
    """A run timing fairseq-eval-lm's work on the first ``batches`` chunks of valid, read as one stream."""
    task, model = build(data, model_args, size, 1)
    model.to(device)
    task.load_dataset("valid")
    dataset = task.dataset("valid")
    samples = [on(device, task.collate([dataset[i]])) for i in range(min(len(dataset), batches))]
    return lambda: scoring_speed(model, samples, torch.cuda.synchronize if device.type == "cuda" else None)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=os.path.join(ROOT, "data-bin", "ptb"))
    parser.add_argument("--size", default="200", help="embedding and hidden size (the PTB table's: 200)")
    parser.add_argument("--updates", type=int, default=40, help="training steps per run")
    parser.add_argument("--eval-batches", type=int, default=300, help="35-word chunks scored per eval run")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", default=f"1,{os.cpu_count()}", help="comma-separated thread counts")
    parser.add_argument("--kinds", default="train,eval", help="what to time: train, eval or both")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="where the models run")
    parser.add_argument("--json")
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():  # one line, not torch's CUDA traceback
        parser.exit(2, f"{parser.prog}: error: --device cuda: torch sees no GPU here: run it on a GPU machine, "
                       "or leave --device out (the CPU)\n")
    args.device = torch.device(args.device)
    if not os.path.exists(os.path.join(args.data, "dict.txt")):
        parser.error(f"--data {args.data}: no dict.txt; prepare it with "
                     "python examples/language_model/prepare_lm_data.py --corpus ptb")
    kinds = args.kinds.split(",")
    result = {"argv": sys.argv[1:], "torch": torch.__version__, "by_threads": measure_by_threads(
        args.threads, lambda: ([("train", training_runs(args, args.size), "alm_lstm")] if "train" in kinds else [])
        + ([("eval", eval_runs(args, args.size), "eval, no cache")] if "eval" in kinds else []), args.repeats,
        lambda kind, threads: f"{kind} tokens/s, {os.path.basename(os.path.normpath(args.data))}, 2 x {args.size}, "
                              f"{STREAMS if kind == 'train' else 1} x {CHUNK} chunks, {device_name(args.device, threads)}, "
                              f"median of {args.repeats}")}
    write_json(args.json, result)


if __name__ == "__main__":
    main()
