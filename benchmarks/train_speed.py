"""Training tokens/s of our models, side by side on the same data and machine (runs interleaved,
the median of the repeats).

    python -m benchmarks.train_speed --data data-bin/ptb --updates 80   # fairseq-train runs (prepare PTB first)
    python -m benchmarks.train_speed --mode model --data data-bin/ptb --device cuda --batch-size 128 \
        --precision fp32,bf16,fp16 --json benchmarks/results/gpu/train_speed_model_b128.json

``--mode fairseq`` (default): whole ``fairseq-train`` runs (batch 32 sentences, SGD, no validation,
no checkpoints), fairseq's own ``wps``, beside fairseq's ``lstm_lm``. ``--mode model``: the training
step alone (``timing.training``) on the same B x 35 batches in this process, beside a bare PyTorch
LSTM LM. bf16 / fp16 (GPU): autocast in ``--mode model``, fairseq's ``--fp16`` in ``--mode fairseq``.
"""

import os
import statistics
import sys

import torch

from benchmarks.fairseq_runs import fairseq_lstm_lm, training_words_per_second
from benchmarks.timing import (
    SAMPLE,
    device_name,
    measure,
    parse,
    speed_parser,
    summary,
    thread_counts,
    timed_training,
    write_figures,
)

PRECISION_FLAGS = {"fp32": [], "bf16": ["--bf16"], "fp16": ["--fp16"]}
STEP_MODELS = {
    "bare nn.LSTM LM": None,
    "alm_lstm": ("alm_lstm", {}),  # name -> (arch, options)
    "attentive_lm single": ("attentive_lm", {"attention_score": "single"}),
    "attentive_lm combined": ("attentive_lm", {"attention_score": "combined"}),
    "amsrn tied": ("amsrn", {"memory_selection": "tied"}),
}


def fairseq_models(size, layers, dropout):
    ours = ["--embed-dim", size, "--hidden-size", size, "--num-layers", layers, "--dropout", dropout]
    return {
        "lstm_lm (fairseq)": list(fairseq_lstm_lm(size, layers, dropout, tied=True)),
        "alm_lstm (ours)": ["--arch", "alm_lstm", *ours],
        "attentive_lm single": ["--arch", "attentive_lm", *ours, "--attention-score", "single"],
        "attentive_lm combined": ["--arch", "attentive_lm", *ours, "--attention-score", "combined"],
        "amsrn tied": ["--arch", "amsrn", *ours, "--memory-selection", "tied"],
    }


def train_wps(data, args, updates, threads, device="cpu", precision="fp32"):
    placement = ["--cpu"] if device == "cpu" else PRECISION_FLAGS[precision]
    return training_words_per_second(
        data,
        "--user-dir",
        "alm_plugin",
        "--task",
        "sentence_language_modeling",
        *placement,
        "--optimizer",
        "sgd",
        "--lr",
        "1.0",
        "--clip-norm",
        "5",
        "--batch-size",
        "32",
        "--no-save",
        *args,
        updates=updates,
        threads=threads,
    )


class BareLSTMLanguageModel(torch.nn.Module):
    """PyTorch's word_language_model at the same size: the speed every recurrent LM starts from."""

    def __init__(self, vocab, size, layers, dropout):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, size)
        self.lstm = torch.nn.LSTM(size, size, layers, batch_first=True, dropout=dropout)
        self.drop = torch.nn.Dropout(dropout)
        self.bias = torch.nn.Parameter(torch.zeros(vocab))

    def forward(self, tokens):
        states, _ = self.lstm(self.drop(self.embed(tokens)))
        return torch.nn.functional.linear(self.drop(states), self.embed.weight, self.bias)


def step_model(name, dictionary, size, layers, dropout):
    """``(forward, module)`` of one of ``STEP_MODELS``: tokens -> logits, and what is trained."""
    if STEP_MODELS[name] is None:
        bare = BareLSTMLanguageModel(len(dictionary), size, layers, dropout)
        return bare, bare
    from alm_plugin.models.amsrn import AMSRNConfig, AMSRNDecoder
    from alm_plugin.models.attentive_lm import AttentiveLMConfig, AttentiveLMDecoder
    from alm_plugin.models.lstm_lm import LSTMDecoder
    from alm_plugin.modules.history_lstm_decoder import RecurrentLMConfig

    arch, options = STEP_MODELS[name]
    config, decoder = {
        "alm_lstm": (RecurrentLMConfig, LSTMDecoder),
        "attentive_lm": (AttentiveLMConfig, AttentiveLMDecoder),
        "amsrn": (AMSRNConfig, AMSRNDecoder),
    }[arch]
    model = decoder(config(embed_dim=size, hidden_size=size, num_layers=layers, dropout=dropout, **options), dictionary)
    return lambda tokens: model(tokens)[0], model


def next_word_loss(forward):
    """The step's loss on a B x 36 batch: the cross-entropy of each next token (float32 logits)."""

    def loss_of(batch):
        logits = forward(batch[:, :-1])
        return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), batch[:, 1:].reshape(-1))

    return loss_of


def at_precisions(precisions, models, run):
    """``run(model, precision)`` of each model at each precision, named with it where there are several."""
    return {
        f"{name} {p}" if len(precisions) > 1 else name: (lambda m=m, p=p: run(m, p))
        for p in precisions
        for name, m in models.items()
    }


def model_speeds(args, threads):
    """Tokens/s of the training step per model on the same batches, interleaved, with ``threads``
    CPU threads: the figures of ``speed_result``."""
    from fairseq.data import Dictionary, data_utils

    import alm_plugin  # noqa: F401

    torch.set_num_threads(threads)
    device, bsz, length = torch.device(args.device), args.batch_size, args.batch_size * 36
    dictionary = Dictionary.load(os.path.join(args.data, "dict.txt"))
    sentences = data_utils.load_indexed_dataset(os.path.join(args.data, "train"), dictionary)
    stream = torch.cat([sentences[i] for i in range(min(len(sentences), 4000))])
    if stream.numel() < length * args.updates:  # a large batch: more of the split, read again if need be
        stream = torch.cat([sentences[i] for i in range(len(sentences))])
        stream = stream.repeat(length * args.updates // stream.numel() + 1)
    batches = [stream[i * length : (i + 1) * length].view(bsz, 36).to(device) for i in range(args.updates)]
    models = {name: step_model(name, dictionary, args.size, args.layers, args.dropout) for name in STEP_MODELS}
    for _, module in models.values():
        module.to(device)
    runs = at_precisions(
        args.precisions,
        models,
        lambda model, precision: timed_training(
            model[1],
            next_word_loss(model[0]),
            batches,
            lambda b: b.size(0) * (b.size(1) - 1),
            lr=0.1,
            precision=precision,
            device=device,
        ),
    )
    title = (
        f"training step tokens/s, {os.path.basename(os.path.normpath(args.data))}, {args.layers} x {args.size}, "
        f"batch {bsz} x 35, {args.updates} steps, {device_name(device, threads)}, median of {args.repeats}"
    )
    return speed_result(args, measure(runs, args.repeats, warm_up=True), title, device, threads)


def speed_result(args, speeds, title, device, threads):
    """Every run, the medians and the ratios to the baseline (the first run), with what produced them."""
    baseline = next(iter(speeds))
    medians = {name: statistics.median(values) for name, values in speeds.items()}
    model, _, precision = baseline.rpartition(" ")  # with several precisions: against the baseline at each

    def same(name):
        return f"{model} {name.rpartition(' ')[2]}" if precision in PRECISION_FLAGS else baseline

    return {
        **summary(speeds, baseline, title),
        "mode": args.mode,
        "device": device_name(device, threads),
        "torch": torch.__version__,
        "argv": sys.argv[1:],
        "ratio_same_precision": {name: round(v / medians[same(name)], 3) for name, v in medians.items()},
        "runs": {name: [round(v) for v in values] for name, values in speeds.items()},
        **({"batch_size": args.batch_size} if args.mode == "model" else {}),
    }


def main():
    parser = speed_parser(__doc__, data=SAMPLE, size=650, updates=60, repeats=2, threads=str(os.cpu_count()))
    parser.add_argument(
        "--mode", choices=["fairseq", "model"], default="fairseq", help="fairseq-train runs or the step"
    )
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--dropout", type=float, default=0.5)
    parser.add_argument("--batch-size", type=int, default=32, help="--mode model: sequences of 35 tokens a step")
    parser.add_argument("--precision", default="fp32", help="comma-separated: fp32, bf16, fp16 (these two on a GPU)")
    args = parse(parser)
    args.precisions = args.precision.split(",")
    if not set(args.precisions) <= set(PRECISION_FLAGS) or (args.device == "cpu" and args.precisions != ["fp32"]):
        parser.error(f"--precision {args.precision}: fp32, bf16 or fp16, and only fp32 on the CPU")
    if args.batch_size < 1 or (args.mode == "fairseq" and args.batch_size != 32):
        parser.error(f"--batch-size {args.batch_size}: a positive number, with --mode model only")
    threads = thread_counts(args.threads)
    if args.mode == "model":
        results = {str(t): model_speeds(args, t) for t in threads}
        write_figures(
            args.json,
            results[str(threads[0])]
            if len(threads) == 1
            else {"title": "training step, every thread count in one run", "by_threads": results},
        )
        return
    if len(threads) > 1:
        parser.error("--mode fairseq runs one thread count (--threads N)")
    if "bf16" in args.precisions:  # fairseq 0.12 reads --bf16 as --tpu: the plugin refuses it
        args.precisions = [p for p in args.precisions if p != "bf16"]
        if not args.precisions:
            parser.error(
                "--precision bf16: fairseq 0.12 reads --bf16 as --tpu, so --mode fairseq cannot train "
                "in bf16; use --mode model (bf16 autocast) or --precision fp16"
            )
        print(
            "note: --mode fairseq skips bf16 (fairseq 0.12 reads --bf16 as --tpu); --mode model measures bf16 autocast",
            file=sys.stderr,
        )
    runs = at_precisions(
        args.precisions,
        fairseq_models(args.size, args.layers, args.dropout),
        lambda model, p: train_wps(args.data, model, args.updates, threads[0], args.device, p),
    )
    title = (
        f"training tokens/s, {os.path.basename(os.path.normpath(args.data))}, {args.layers} x {args.size}, "
        f"batch 32 sentences, {args.updates} updates, {device_name(args.device, threads[0])}, "
        f"median of {args.repeats}"
    )
    write_figures(args.json, speed_result(args, measure(runs, args.repeats), title, args.device, threads[0]))


if __name__ == "__main__":
    main()
