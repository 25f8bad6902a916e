#!/usr/bin/env python
"""Training tokens/s of our models, measured side by side on the same data and machine.

    python -m benchmarks.train_speed                                  # shipped sample, 2 x 650
    python -m benchmarks.train_speed --data data-bin/ptb --updates 80 # PTB (prepare it first)
    python -m benchmarks.train_speed --mode model --data data-bin/ptb # against a bare nn.LSTM LM
    python -m benchmarks.train_speed --mode model --data data-bin/ptb --device cuda --batch-size 128 \
        --precision fp32,bf16,fp16 --json benchmarks/results/gpu/train_speed_model_b128.json

``--mode fairseq`` (default): each run is a real `fairseq-train` (sentence_language_modeling,
batch 32, SGD, no validation, no checkpoints); the figure is fairseq's own `wps` of the whole
run, beside fairseq's `lstm_lm` (runs interleaved, median of the repeats).

``--mode model``: the training step alone (forward, NLL, backward, clip, SGD) on the same
B x 35 batches of the data (``--batch-size B``, default 32; the title and the JSON say B), in
this process, one model after another and repeated, with a bare PyTorch LSTM LM (embedding,
``nn.LSTM``, dropout, tied softmax: PyTorch's word_language_model) as the baseline. What our
models add over it is what they cost.

On a GPU (``--device cuda``, the default where one is present) ``--precision`` adds mixed
precision: ``bf16`` / ``fp16`` run the step under ``torch.autocast`` (fp16 with a gradient
scaler), and in ``--mode fairseq`` pass fairseq's own ``--fp16`` (bf16 is skipped there, with a note:
fairseq 0.12 reads ``--bf16`` as ``--tpu``, which the plugin refuses). ``--json`` writes
every figure and ratio to a file (the GPU results under ``benchmarks/results/gpu/``).
"""
import argparse
import os
import statistics
import sys

import torch

from benchmarks.fairseq_runs import ROOT, fairseq, records
from benchmarks.timing import device_name, measure, print_ratios, timed_training, write_json


def model_args(size, layers, dropout):
    return {
        "lstm_lm (fairseq)": ["--arch", "lstm_lm", "--decoder-embed-dim", size, "--decoder-hidden-size", size,
                              "--decoder-out-embed-dim", size, "--decoder-layers", layers,
                              "--share-decoder-input-output-embed", "--decoder-dropout-in", dropout,
                              "--decoder-dropout-out", dropout],
        "alm_lstm (ours)": ["--arch", "alm_lstm", "--embed-dim", size, "--hidden-size", size,
                            "--num-layers", layers, "--dropout", dropout],
        "attentive_lm single": ["--arch", "attentive_lm", "--embed-dim", size, "--hidden-size", size,
                                "--num-layers", layers, "--dropout", dropout, "--attention-score", "single"],
        "attentive_lm combined": ["--arch", "attentive_lm", "--embed-dim", size, "--hidden-size", size,
                                  "--num-layers", layers, "--dropout", dropout, "--attention-score", "combined"],
        "amsrn tied": ["--arch", "amsrn", "--embed-dim", size, "--hidden-size", size,
                       "--num-layers", layers, "--dropout", dropout, "--memory-selection", "tied"],
    }


PRECISION_FLAGS = {"fp32": [], "bf16": ["--bf16"], "fp16": ["--fp16"]}


def train_wps(data, args, updates, threads, device="cpu", precision="fp32"):
    placement = ["--cpu"] if device == "cpu" else PRECISION_FLAGS[precision]
    output = fairseq("train", data, "--user-dir", "alm_plugin", "--task", "sentence_language_modeling", *placement,
                     "--optimizer", "sgd", "--lr", "1.0", "--clip-norm", "5", "--batch-size", "32",
                     "--max-update", str(updates), "--disable-validation", "--no-save",
                     "--log-format", "json", "--log-interval", "1000", "--seed", "1", "--num-workers", "0",
                     *args, threads=threads)
    train = records(output, "train")
    if not train:
        sys.exit(f"fairseq-train logged no training record:\n{output[-3000:]}")
    return float(train[-1]["train_wps"])


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


def our_model(arch, dictionary, size, layers, dropout, **options):
    from alm_plugin.models.amsrn import AMSRNConfig, AMSRNDecoder
    from alm_plugin.models.attentive_lm import AttentiveLMConfig, AttentiveLMDecoder
    from alm_plugin.models.lstm_lm import LSTMDecoder
    from alm_plugin.modules.history_lstm_decoder import RecurrentLMConfig
    config, decoder = {"alm_lstm": (RecurrentLMConfig, LSTMDecoder), "attentive_lm": (AttentiveLMConfig, AttentiveLMDecoder),
                       "amsrn": (AMSRNConfig, AMSRNDecoder)}[arch]
    model = decoder(config(embed_dim=size, hidden_size=size, num_layers=layers, dropout=dropout, **options), dictionary)
    return lambda tokens: model(tokens)[0], model


def model_speeds(args, threads):
    """tokens/s of one training step per model, on the same batches, interleaved, with
    ``threads`` CPU threads; returns the figures (``speed_result``)."""
    import alm_plugin  # noqa: F401
    from fairseq.data import Dictionary, data_utils

    torch.set_num_threads(threads)
    device = torch.device(args.device)
    dictionary = Dictionary.load(os.path.join(args.data, "dict.txt"))
    sentences = data_utils.load_indexed_dataset(os.path.join(args.data, "train"), dictionary)
    stream = torch.cat([sentences[i] for i in range(min(len(sentences), 4000))])
    size, layers, dropout = int(args.size), int(args.layers), float(args.dropout)
    bsz = args.batch_size
    if stream.numel() < bsz * 36 * args.updates:  # a large batch: more of the split, read again if need be
        stream = torch.cat([sentences[i] for i in range(len(sentences))])
        stream = stream.repeat(bsz * 36 * args.updates // stream.numel() + 1)
    batches = [stream[i * bsz * 36:(i + 1) * bsz * 36].view(bsz, 36).to(device) for i in range(args.updates)]
    bare = BareLSTMLanguageModel(len(dictionary), size, layers, dropout)
    models = {"bare nn.LSTM LM": (bare, bare),
              "alm_lstm": our_model("alm_lstm", dictionary, size, layers, dropout),
              "attentive_lm single": our_model("attentive_lm", dictionary, size, layers, dropout, attention_score="single"),
              "attentive_lm combined": our_model("attentive_lm", dictionary, size, layers, dropout,
                                                 attention_score="combined"),
              "amsrn tied": our_model("amsrn", dictionary, size, layers, dropout, memory_selection="tied")}
    for _, module in models.values():
        module.to(device)

    batch_tokens = lambda batch: batch.size(0) * (batch.size(1) - 1)

    def run(forward, module, precision):
        def loss_of(batch):
            logits = forward(batch[:, :-1])
            return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)).float(),
                                                     batch[:, 1:].reshape(-1))
        return timed_training(module, loss_of, batches, batch_tokens, lr=0.1, precision=precision, device=device)

    runs = {f"{name} {precision}" if len(args.precisions) > 1 else name: (lambda m=m, p=precision: run(*m, p))
            for precision in args.precisions for name, m in models.items()}
    for measure_once in runs.values():  # warm-up (cuDNN plans, the allocator, autocast caches)
        measure_once()
    baseline = "bare nn.LSTM LM" + (f" {args.precisions[0]}" if len(args.precisions) > 1 else "")
    title = (f"training step tokens/s, {os.path.basename(os.path.normpath(args.data))}, {layers} x {size}, "
             f"batch {bsz} x 35, {args.updates} steps, {device_name(device, threads)}, median of {args.repeats}")
    speeds = measure(runs, args.repeats)
    print_ratios(speeds, baseline, title)
    return {**speed_result(args, speeds, baseline, title, device, threads), "batch_size": bsz}


def same_precision(baseline, name):
    """The baseline's row at ``name``'s precision (``"bare nn.LSTM LM bf16"``), or the baseline."""
    model, _, precision = baseline.rpartition(" ")
    suffix = name.rpartition(" ")[2]
    return f"{model} {suffix}" if precision in PRECISION_FLAGS and suffix in PRECISION_FLAGS else baseline


def speed_result(args, speeds, baseline, title, device, threads):
    """Every run, the medians and the ratios to the baseline, with what produced them."""
    medians = {name: statistics.median(values) for name, values in speeds.items()}
    return {"title": title, "mode": args.mode, "device": device_name(device, threads),
            "torch": torch.__version__, "argv": sys.argv[1:], "baseline": baseline,
            "tokens_per_s": {name: round(v) for name, v in medians.items()},
            "ratio": {name: round(v / medians[baseline], 3) for name, v in medians.items()},
            # with several precisions: each row against the baseline model at its own precision
            "ratio_same_precision": {name: round(v / medians[same_precision(baseline, name)], 3)
                                     for name, v in medians.items()},
            "runs": {name: [round(v) for v in values] for name, values in speeds.items()}}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", choices=["fairseq", "model"], default="fairseq",
                        help="fairseq: whole fairseq-train runs vs lstm_lm; model: the step alone vs a bare nn.LSTM LM")
    parser.add_argument("--data", default=os.path.join(ROOT, "data-bin", "wikitext-2-sample"))
    parser.add_argument("--size", default="650", help="embedding and hidden size of every model")
    parser.add_argument("--layers", default="2")
    parser.add_argument("--dropout", default="0.5")
    parser.add_argument("--updates", type=int, default=60, help="training updates per run")
    parser.add_argument("--batch-size", type=int, default=32,
                        help="--mode model: sequences of 35 tokens per step (--mode fairseq: 32 sentences)")
    parser.add_argument("--repeats", type=int, default=2, help="interleaved runs per model")
    parser.add_argument("--threads", default=str(os.cpu_count()),
                        help="CPU threads; --mode model takes several, comma-separated, measured in one run")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", choices=["cpu", "cuda"],
                        help="where to train (default: the GPU when there is one)")
    parser.add_argument("--precision", default="fp32",
                        help="comma-separated, from fp32, bf16, fp16 (bf16/fp16 need --device cuda)")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args()
    args.precisions = args.precision.split(",")
    unknown = [p for p in args.precisions if p not in PRECISION_FLAGS]
    if unknown or (args.device == "cpu" and args.precisions != ["fp32"]):
        parser.error(f"--precision {args.precision}: fp32, bf16 or fp16, and only fp32 on the CPU")
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: this machine has no GPU that torch can see")
    if args.batch_size < 1 or (args.mode == "fairseq" and args.batch_size != 32):
        parser.error(f"--batch-size {args.batch_size}: a positive number, with --mode model only")
    threads = [int(t) for t in args.threads.split(",")]
    if args.mode == "model":
        results = {str(t): model_speeds(args, t) for t in threads}
        result = results[str(threads[0])] if len(threads) == 1 else {
            "title": "training step, every thread count in one run", "argv": sys.argv[1:], "by_threads": results}
        write_json(args.json, result)  # docs/benchmarks.md's table: python -m benchmarks.report --update-docs
        return
    if len(threads) > 1:
        parser.error("--mode fairseq runs one thread count (--threads N)")
    args.threads = threads[0]
    if "bf16" in args.precisions:  # fairseq 0.12 reads --bf16 as --tpu: the plugin refuses it (issue 46)
        args.precisions = [p for p in args.precisions if p != "bf16"]
        if not args.precisions:
            parser.error("--precision bf16: fairseq 0.12 reads --bf16 as --tpu, so --mode fairseq cannot train "
                         "in bf16; use --mode model (bf16 autocast) or --precision fp16")
        print("note: --mode fairseq skips bf16 (fairseq 0.12 reads --bf16 as --tpu); --mode model measures "
              "bf16 autocast", file=sys.stderr)

    models = model_args(args.size, args.layers, args.dropout)
    runs = {f"{name} {precision}" if len(args.precisions) > 1 else name:
            (lambda m=m, p=precision: train_wps(args.data, m, args.updates, args.threads, args.device, p))
            for precision in args.precisions for name, m in models.items()}
    baseline = "lstm_lm (fairseq)" + (f" {args.precisions[0]}" if len(args.precisions) > 1 else "")
    title = (f"training tokens/s, {os.path.basename(os.path.normpath(args.data))}, {args.layers} x {args.size}, "
             f"batch 32 sentences, {args.updates} updates, {device_name(torch.device(args.device), args.threads)}, "
             f"median of {args.repeats}")
    speeds = measure(runs, args.repeats)
    print_ratios(speeds, baseline, title)
    write_json(args.json, speed_result(args, speeds, baseline, title, torch.device(args.device), args.threads))


if __name__ == "__main__":
    main()
