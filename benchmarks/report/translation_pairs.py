"""The ``translation-pairs`` block: Multi30k German -> English with fewer parallel pairs than target
text, the language models on all 29,000 English sentences (``lm-<arch>.json``) and every reranking
method at N pairs (``pairs-<N>.json``), against beam 5 with sacrebleu's paired bootstrap; and the
picture of each method's gain over beam 5 against N."""

import os

from benchmarks.rows import ROOT

from .tables import RESULTS, command, figure, result_json

PICTURE = os.path.join(ROOT, "docs", "multi30k_pairs_gain.png")
SIGNIFICANT = 0.05  # sacrebleu's paired bootstrap: p below this, and a gain, beats beam 5
FALLING = 0.02  # a language model whose last epoch took valid perplexity down by more than this share
METHODS = {
    "length": "rescored, TM and the length reward alone",
    "rescore:alm_lstm_small": "rescored, `alm_lstm_small`",
    "rescore:attentive_lm_small": "rescored, `attentive_lm_small` (single)",
    "rescore:amsrn_small": "rescored, `amsrn_small`",
    "channel": "rescored, channel model alone",
    "noisy_channel": "rescored, channel + the best LM on valid",
    "fusion:alm_lstm_small": "shallow fusion, `alm_lstm_small`",
    "fusion:attentive_lm_small": "shallow fusion, `attentive_lm_small`",
    "fusion:amsrn_small": "shallow fusion, `amsrn_small`",
}


def records(prefix):
    folder = os.path.join(RESULTS, "multi30k")
    names = sorted(n for n in os.listdir(folder) if n.startswith(prefix) and n.endswith(".json"))
    return [result_json("multi30k", name) for name in names]


def still_falling(lm):
    """Whether the language model's last epoch still took valid perplexity down by more than ``FALLING``."""
    curve = lm["valid_ppl_by_epoch"]
    return len(curve) > 1 and curve[-1] < (1 - FALLING) * curve[-2]


def language_models(lms):
    lines = [
        "| language model | English sentences | epochs | valid ppl | test ppl | last two epochs' valid ppl "
        "| trained at |",
        "|---|---|---|---|---|---|---|",
    ]
    for lm in lms:
        curve = lm["valid_ppl_by_epoch"]
        trend = "still falling" if still_falling(lm) else "flat"
        lines.append(
            f"| `{lm['lm_arch']}` | {lm['train_sentences']:,} | {lm['epochs']} | {lm['valid_ppl']:.1f} | "
            f"{lm['test_ppl']:.1f} | "
            f"{curve[-2]:.1f} -> {curve[-1]:.1f}, {trend} | {lm['commit']} |"
        )
    return "\n".join(lines)


def beam5_itself(method):
    """Shallow fusion whose weight valid chose 0: beam 5's own output, whose bootstrap p means nothing."""
    return method.get("weight") == 0


def cell(method, beam5):
    """Test BLEU with the half-width of sacrebleu's bootstrap interval, then ``gain``; bold where it beats beam 5."""
    test = method["test"]
    if beam5_itself(method):
        return f"{test['bleu']:.2f} ({gain(method, beam5)}: beam 5 itself)"
    beats = test["bleu"] > beam5["bleu"] and test.get("p_value", 1) < SIGNIFICANT
    mark = "**" if beats else ""
    return f"{mark}{test['bleu']:.2f}{mark} ± {test['ci95']:.2f} ({gain(method, beam5)})"


def winners(row):
    beam5 = row["test_bleu_beam5"]
    return [
        METHODS[name]
        for name, method in row["methods"].items()
        if method["test"]["bleu"] > beam5["bleu"] and method["test"].get("p_value", 1) < SIGNIFICANT
    ]


def pairs_table(rows):
    columns = " | ".join(f"{row['parallel_pairs']:,} pairs" for row in rows)
    lines = [
        f"| test_2016_flickr BLEU ± the bootstrap's 95% half-interval | {columns} |",
        "|---" * (len(rows) + 1) + "|",
    ]
    beam5 = [f"{r['test_bleu_beam5']['bleu']:.2f} ± {r['test_bleu_beam5']['ci95']:.2f}" for r in rows]
    lines.append("| beam 5 | " + " | ".join(beam5) + " |")
    lines.append(
        f"| {rows[0]['nbest']}-best oracle (the ceiling) | "
        + " | ".join(f"{r['test_oracle_bleu']:.2f}" for r in rows)
        + " |"
    )
    for name, label in METHODS.items():
        cells = [cell(r["methods"][name], r["test_bleu_beam5"]) if name in r["methods"] else "not run" for r in rows]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def statement(rows, lms):
    said = []
    for row in rows:
        beat = winners(row)
        said.append(
            f"At {row['parallel_pairs']:,} pairs "
            + (
                f"{len(beat)} method{'s' * (len(beat) > 1)} beat beam 5 beyond the bootstrap (p < {SIGNIFICANT}): "
                + "; ".join(beat)
                if beat
                else f"no method beats beam 5 beyond the bootstrap (p < {SIGNIFICANT})"
            )
            + "."
        )
    said.append(length_share(rows))
    falling = [f"`{lm['lm_arch']}`" for lm in lms if still_falling(lm)]
    if falling:
        said.append(
            f"{', '.join(falling)} {'was' if len(falling) == 1 else 'were'} still improving at the last epoch: "
            "what it gives downstream is no verdict on its architecture."
        )
    return " ".join(said)


def length_share(rows):
    """What the length reward, which every reranking tunes, gives alone, and the LM's gain beyond it."""
    said = []
    for row in (r for r in rows if "length" in r["methods"] and best_on_valid(r["methods"], "rescore:")):
        beam5, methods = row["test_bleu_beam5"], row["methods"]
        lm = best_on_valid(methods, "rescore:")
        share = methods[lm]["test"]["bleu"] - methods["length"]["test"]["bleu"]
        said.append(
            f"At {row['parallel_pairs']:,} pairs TM and Len alone give {gain(methods['length'], beam5)}, and the "
            f"LM best on valid (`{lm[len('rescore:') :]}`) {share:+.2f} beyond them, "
            "a difference no bootstrap here tests."
        )
    unseparated = [f"{r['parallel_pairs']:,}" for r in rows if "length" not in r["methods"]]
    if unseparated:
        said.append(
            f"Every reranking tunes the length reward (Len) beside its scores; the row{'s' * (len(unseparated) > 1)} "
            f"at {', '.join(unseparated)} pairs did not rerank with Len alone, so there the LM's own share of a gain "
            "is not separated."
        )
    return " ".join(said)


def best_on_valid(methods, prefix):
    """The method of that kind (``rescore:``, ``fusion:``) whose valid BLEU is highest, as the LM is chosen."""
    return max((n for n in methods if n.startswith(prefix)), key=lambda n: methods[n]["valid_bleu"], default=None)


def draw(rows, path=PICTURE):
    """Each method's test BLEU gain over beam 5 against the parallel pairs."""
    import matplotlib.ticker

    fig, ax = figure((7, 4))
    sizes = [row["parallel_pairs"] for row in rows]
    for name, label in METHODS.items():
        ran = [row for row in rows if name in row["methods"]]
        if not ran:
            continue
        gains = [row["methods"][name]["test"]["bleu"] - row["test_bleu_beam5"]["bleu"] for row in ran]
        style = ":" if name == "length" else "--" if "fusion" in name else "-"
        ax.plot(
            [row["parallel_pairs"] for row in ran], gains, marker="o", label=label.replace("`", ""), linestyle=style
        )
    ax.axhline(0, color="grey", linewidth=0.8)
    ax.set(xscale="log", xlabel="parallel pairs the translation models saw", ylabel="test BLEU - beam 5")
    ax.set_xticks(sizes, [f"{n:,}" for n in sizes])
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def gain(method, beam5):
    """A method's test BLEU over beam 5, with the p-value of sacrebleu's paired bootstrap."""
    test = method["test"]
    if beam5_itself(method):
        return "weight 0 on valid"
    p = f", p {test['p_value']:.3f}" if "p_value" in test else ""
    return f"{test['bleu'] - beam5['bleu']:+.2f}{p}"


def answer():
    """The README's and tools.md's line on when rescoring pays: at each N, test BLEU over beam 5 of the
    noisy channel, of the LM alone, of the length reward alone and of shallow fusion, each with the LM
    best on valid."""
    rows = pair_rows()
    if not rows:
        return "Not measured yet (`python -m benchmarks.translation --parallel-pairs N`)."
    lines = [
        "| parallel pairs | beam 5 | channel + LM | the LM, no channel | TM and Len alone | shallow fusion |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        beam5, methods = row["test_bleu_beam5"], row["methods"]
        cells = [gain(methods["noisy_channel"], beam5) if "noisy_channel" in methods else "not run"]
        for prefix in ("rescore:", "length", "fusion:"):
            best = best_on_valid(methods, prefix)
            named = f" (`{best[len(prefix) :]}`)" if best and prefix.endswith(":") else ""
            cells.append(f"{gain(methods[best], beam5)}{named}" if best else "not run")
        lines.append(f"| {row['parallel_pairs']:,} | {beam5['bleu']:.2f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def pair_rows():
    """The rows of N parallel pairs, by N."""
    if not os.path.isdir(os.path.join(RESULTS, "multi30k")):
        return []
    return sorted(records("pairs-"), key=lambda r: r["parallel_pairs"])


def draw_rows(path=PICTURE):
    """The picture of the gain against N, once a row of N pairs exists."""
    if rows := pair_rows():
        draw(rows, path)


def block(draw_picture=True):
    if not os.path.isdir(os.path.join(RESULTS, "multi30k")):
        return "Not measured yet (`python -m benchmarks.translation --language-model ARCH`)."
    lms, rows = records("lm-"), pair_rows()
    parts = [language_models(lms)] if lms else ["The language models have not been trained yet."]
    if rows:
        if draw_picture:
            draw(rows)
        parts += [pairs_table(rows), statement(rows, lms), "![gain over beam 5](multi30k_pairs_gain.png)"]
    else:
        parts.append(
            "No row of N parallel pairs has been run yet (`python -m benchmarks.translation --parallel-pairs N`)."
        )
    commands = sorted({command("benchmarks.translation", r.get("argv", [])) for r in lms + rows})
    return "\n\n".join(parts) + (f"\n\n({', '.join(commands)})" if commands else "")
