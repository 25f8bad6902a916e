"""Evaluation-side benchmarks of untrained models (speed and memory do not depend on the weights):

1. fairseq-eval-lm scoring tokens/s of our models against fairseq's lstm_lm of the same size
   (fairseq's own ``eval_lm`` on its batches; the models' passes interleaved, so a drift of the
   machine hits all alike, the median of ``--repeats``);
2. incremental generation (history kept in incremental_state) against the full prefix recomputed;
3. the peak memory of scoring 8 blocks of 35 / 512 / 2048 tokens, each in a fresh process.

    python -m benchmarks.eval_speed --data data-bin/ptb --json benchmarks/results/cpu/eval_speed.json
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

import torch

from benchmarks import ROOT
from benchmarks.fairseq_runs import plugin_task
from benchmarks.result_files import check_json
from benchmarks.timing import SAMPLE, is_speed, measure, tokens_per_second, write_figures

MODELS = ["lstm_lm", "attentive_lm single", "attentive_lm combined", "amsrn tied"]
BLOCKS = (35, 512, 2048)  # tokens a block, for the peak memory


def setup_task(data, block):
    """The sentence task as fairseq-eval-lm sets it up: blocks of ``block`` tokens, batches of 8."""
    _, task = plugin_task(
        data,
        "--task",
        "sentence_language_modeling",
        "--sample-break-mode",
        "none",
        "--tokens-per-sample",
        block,
        "--batch-size",
        "8",
        parser="eval_lm",
    )
    return task


def build(name, task, size):
    """One of ``MODELS``, 2 x ``size``, without dropout, its weights drawn from seed 0."""
    from fairseq.models.lstm_lm import LSTMLanguageModel, base_architecture

    from alm_plugin.models.amsrn import AMSRNConfig, AMSRNLanguageModel
    from alm_plugin.models.attentive_lm import AttentiveLanguageModel, AttentiveLMConfig

    torch.manual_seed(0)
    sized = dict(embed_dim=size, hidden_size=size, dropout=0.0)  # our models' configs
    if name == "lstm_lm":
        args = argparse.Namespace(
            decoder_embed_dim=size,
            decoder_hidden_size=size,
            decoder_out_embed_dim=size,
            decoder_layers=2,
            share_decoder_input_output_embed=True,
            dropout=0.0,
            decoder_dropout_in=0.0,
            decoder_dropout_out=0.0,
            tokens_per_sample=100000,
            criterion="cross_entropy",
        )
        base_architecture(args)
        model = LSTMLanguageModel.build_model(args, task)
    elif name.startswith("attentive_lm"):
        model = AttentiveLanguageModel.build_model(AttentiveLMConfig(**sized, attention_score=name.split()[1]), task)
    else:
        model = AMSRNLanguageModel.build_model(AMSRNConfig(**sized, memory_selection="tied"), task)
    return model.eval()


def eval_lm_speed(task, model, split):
    """Tokens/s of fairseq-eval-lm's ``eval_lm`` over ``split``, batches of 8 blocks."""
    from fairseq_cli.eval_lm import eval_lm

    task.load_dataset(split)
    dataset = task.dataset(split)
    itr = task.eval_lm_dataloader(dataset=dataset, batch_size=8, max_positions=100000, context_window=0, num_workers=0)

    def score(batches):
        return eval_lm(models=[model], source_dictionary=task.source_dictionary, batch_iterator=batches)

    return tokens_per_second(score, [itr], lambda _: int(dataset.sizes.sum()))


def generation_speed(model, steps, bsz=8):
    """Greedy decoding of `steps` tokens: incremental state vs full prefix recomputed."""
    tokens, timings = torch.full((bsz, 1), model.decoder.dictionary.eos()), {}
    with torch.no_grad():
        for mode in ("incremental", "full prefix"):
            seq, state = tokens.clone(), {}

            def step(_):  # generation is sequential by nature
                nonlocal seq
                logits = (model(seq, incremental_state=state) if mode == "incremental" else model(seq))[0][:, -1]
                seq = torch.cat([seq, logits.argmax(-1, keepdim=True)], 1)

            timings[mode] = tokens_per_second(step, range(steps), lambda _: bsz)
    return timings


def rss_kib(field):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field))


def peak_memory_child(name, data, size, block):
    """Run in a fresh process: peak RSS growth (MiB) while scoring 8 blocks of `block` tokens.
    Linux: the peak (VmHWM) is reset after the model is built, so import-time peaks do not hide it."""
    task = setup_task(data, block)
    model = build(name, task, size)
    tokens = torch.randint(4, len(task.source_dictionary), (8, block))
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset VmHWM to the current RSS
    before = rss_kib("VmRSS:")
    with torch.no_grad():
        model.get_normalized_probs(model(tokens), log_probs=True)
    print(json.dumps({"peak_mib": (rss_kib("VmHWM:") - before) / 1024}))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=SAMPLE)
    parser.add_argument("--split", default="test")
    parser.add_argument("--size", type=int, default=650)
    parser.add_argument("--block", type=int, default=512, help="tokens per eval-lm block")
    parser.add_argument("--steps", type=int, default=100, help="generated tokens per sequence")
    parser.add_argument("--memory-child", nargs=3, metavar=("MODEL", "SIZE", "BLOCK"), help=argparse.SUPPRESS)
    parser.add_argument("--repeats", type=int, default=3, help="scoring passes of each model, interleaved")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args()
    if args.memory_child:
        name, size, block = args.memory_child
        return peak_memory_child(name, args.data, int(size), int(block))
    if args.repeats < 1:
        parser.error(f"--repeats {args.repeats}: at least 1 scoring pass of each model")
    check_json(parser, args.json, [args.data], own=is_speed)

    task = setup_task(args.data, args.block)
    print(
        f"1. eval-lm scoring, {os.path.basename(os.path.normpath(args.data))} {args.split}, "
        f"blocks of {args.block}, batch 8, 2 x {args.size}"
    )
    models = {name: build(name, task, args.size) for name in MODELS}  # lstm_lm first: the others' reference
    runs = {name: (lambda model=model: eval_lm_speed(task, model, args.split)) for name, model in models.items()}
    speeds = {name: statistics.median(values) for name, values in measure(runs, args.repeats).items()}
    for name, speed in speeds.items():
        print(f"   {name:24s} {speed:9.0f} tokens/s  {speed / speeds['lstm_lm']:5.2f} x lstm_lm")

    print(f"\n2. greedy generation, batch 8, {args.steps} tokens")
    faster = {}
    for name in MODELS[1:]:
        t = generation_speed(build(name, task, args.size), args.steps)
        faster[name] = t["incremental"] / t["full prefix"]
        print(
            f"   {name:24s} incremental {t['incremental']:7.0f} tok/s, full prefix {t['full prefix']:7.0f} tok/s:"
            f" {t['incremental'] / t['full prefix']:5.2f} x faster"
        )

    print("\n3. peak memory growth scoring 8 blocks (MiB, fresh process each)")
    print(f"   {'model':24s} " + " ".join(f"{b:>7d}" for b in BLOCKS))
    peak_mib = {}
    for name in MODELS:
        peaks = []
        for block in BLOCKS:  # each in a fresh process: peak_memory_child
            out = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "benchmarks.eval_speed",
                    "--data",
                    args.data,
                    "--memory-child",
                    name,
                    str(args.size),
                    str(block),
                ],
                capture_output=True,
                text=True,
                cwd=ROOT,
            )
            lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
            if not lines:
                sys.exit(f"eval_speed: measuring {name} on blocks of {block} failed:\n{out.stderr[-2000:]}")
            peaks.append(json.loads(lines[-1])["peak_mib"])
        print(f"   {name:24s} " + " ".join(f"{m:7.0f}" for m in peaks))
        peak_mib[name] = {str(block): round(m) for block, m in zip(BLOCKS, peaks)}
    write_figures(
        args.json,
        {
            "title": f"{os.path.basename(os.path.normpath(args.data))} {args.split}, 2 x {args.size}, untrained, "
            f"CPU, {torch.get_num_threads()} thread{'s' if torch.get_num_threads() != 1 else ''}, "
            f"scoring the median of {args.repeats} passes interleaved",
            "block": args.block,
            "steps": args.steps,
            "baseline": MODELS[0],
            "tokens_per_s": {name: round(v) for name, v in speeds.items()},
            "ratio": {name: round(v / speeds[MODELS[0]], 3) for name, v in speeds.items()},
            "incremental_vs_full_prefix_ratio": {name: round(v, 2) for name, v in faster.items()},
            "peak_mib": peak_mib,
        },
    )


if __name__ == "__main__":
    main()
