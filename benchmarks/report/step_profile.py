"""The ``step-profile`` block: how many operations one training step launches, per model and batch
(``benchmarks/gpu/step_profile.py --json benchmarks/results/cpu/step_profile.json``), and the combined
score's count before it went in one pass in training."""

from .tables import command, header, result_json

JSON = ("cpu", "step_profile.json")


def block():
    result = result_json(*JSON)
    if result is None:
        return (
            "The training step's operations have not been counted yet (`python -m benchmarks.gpu.step_profile "
            f"--device cpu --json benchmarks/results/{'/'.join(JSON)}`)."
        )
    counts = result["counts"]
    batches = sorted({name.rsplit(" B", 1)[1] for name in counts}, key=int)
    models = list(dict.fromkeys(name.rsplit(" B", 1)[0] for name in counts))
    lines = header("model", *(f"aten calls, batch {b} x 35" for b in batches))
    lines += [
        f"| {m} | " + " | ".join(f"{counts[f'{m} B{b}']['aten_calls']:,}" for b in batches) + " |" for m in models
    ]
    before = result.get("before_issue_46")  # the same script's counts at an older commit, kept beside its own
    if before:
        counted = {b: before.get(f"attentive_lm combined B{b}") for b in batches}
        earlier = [f"{n:,} at batch {b}" for b, n in counted.items() if n is not None]
        lines += [
            "",
            f"The combined score computed in chunks in training (at {before['commit']}): {', '.join(earlier)}.",
        ]
    return "\n".join(lines) + f"\n\n({result['title']}; {command('benchmarks.gpu.step_profile', result['argv'])})"
