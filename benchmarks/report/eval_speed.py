"""The ``eval-speed`` block: scoring with fairseq-eval-lm, incremental generation and the peak memory
of untrained models at 2 x 650 beside fairseq's ``lstm_lm``
(``eval_speed.py --json benchmarks/results/cpu/eval_speed.json``)."""

from .tables import command, header, machine, result_json

JSON = ("cpu", "eval_speed.json")
COMMAND = "python -m benchmarks.eval_speed --data data-bin/ptb --json benchmarks/results/cpu/eval_speed.json"


def block():
    result = result_json(*JSON)
    if result is None:
        return f"Scoring and generation have not been measured yet (`{COMMAND}`)."
    baseline, blocks = result["baseline"], list(next(iter(result["peak_mib"].values())))
    lines = header(
        "model",
        f"eval-lm tokens/s, {result['block']}-token blocks",
        f"vs `{baseline}`",
        f"greedy generation: incremental vs full prefix ({result['steps']} tokens)",
        f"peak MiB scoring 8 blocks of {' / '.join(blocks)}",
    )
    for name, speed in result["tokens_per_s"].items():
        faster = result["incremental_vs_full_prefix_ratio"].get(name)
        peaks = " / ".join(f"{result['peak_mib'][name][b]:,}" for b in blocks)
        lines.append(
            f"| `{name}` | {speed:,} | {result['ratio'][name]:.2f} | "
            + (f"{faster:.1f}x" if faster else "–")
            + f" | {peaks} |"
        )
    slower = [f"`{name}`" for name, ratio in result["ratio"].items() if ratio < 1]
    return "\n".join(lines) + (
        f"\n\n({machine(result['title'])}; {command('benchmarks.eval_speed', result['argv'])}.) "
        + (
            f"Slower than `{baseline}` on {result['block']}-token blocks: {', '.join(slower)}."
            if slower
            else f"Every model scores at least as fast as `{baseline}` on {result['block']}-token blocks."
        )
    )
