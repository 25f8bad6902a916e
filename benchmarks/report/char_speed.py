"""The ``char-speed`` block: training and scoring characters/s of the character models beside HCLM and
a word-level ``lstm_lm`` of the same size (``char_speed.py --json benchmarks/results/cpu/char_speed.json``);
the goal (``comparisons.GOALS``): the cache's speed against HCLM's above a bound."""

from benchmarks.comparisons import goal

from .tables import command, header, machine, result_json

JSON = ("cpu", "char_speed.json")
CACHE = "char_cache_lm (K=100)"


def block():
    result = result_json(*JSON)
    if result is None:
        return (
            "The character models' speed has not been measured yet (`python -m benchmarks.char_speed --updates 40 "
            f"--repeats 3 --json benchmarks/results/{'/'.join(JSON)}`)."
        )
    train, score = result["train_chars_per_s"], result["eval_chars_per_s"]
    word = next(name for name in train if "word level" in name)
    lines = header(
        "model", "training chars/s | vs `hclm` | vs word `lstm_lm`", "eval-lm chars/s | vs `hclm` | vs word `lstm_lm`"
    )
    for name in train:
        lines.append(
            f"| `{name}` | "
            + " | ".join(
                f"{speeds[name]:,} | {speeds[name] / speeds['hclm']:.2f} | {speeds[name] / speeds[word]:.2f}"
                for speeds in (train, score)
            )
            + " |"
        )
    ratios = result["train_vs_hclm"][CACHE], result["eval_vs_hclm"][CACHE]
    bound = goal("char-speed", CACHE)
    met = "met" if min(ratios) > bound else "**not met**"
    return "\n".join(lines) + (
        f"\n\nThe cache against HCLM: {ratios[0]:.2f}x HCLM's speed in training and {ratios[1]:.2f}x in scoring; "
        f"the goal, a ratio above {bound}, is {met}. ({machine(result['title'])}; "
        f"{command('benchmarks.char_speed', result['argv'])})"
    )
