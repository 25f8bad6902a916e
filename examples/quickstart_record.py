"""What examples/quickstart.sh printed, as a small JSON beside its model (``SAVE_DIR/quickstart.json``): each
epoch's valid perplexity (from its train.log), the test perplexity, the seconds it trained and how it started.

    python3 examples/quickstart_record.py SAVE_DIR STARTED EPOCHS TEST_PPL [SECONDS]

The README's sample output is generated from a committed copy (``benchmarks/results/quickstart/run.json``)."""

import os
import platform
import re
import subprocess
import sys

VALID = re.compile(r"epoch 0*(\d+) \| valid on 'valid' subset .*?\| ppl ([\d.]+) ")


def main(save, started, epochs, test_ppl, seconds=""):
    from alm_plugin.cli.output_files import write_json

    log = os.path.join(save, "train.log")
    valid = {}
    if started != "skipped" and os.path.exists(log):
        with open(log, encoding="utf-8", errors="replace") as f:
            valid = {int(e): float(p) for e, p in VALID.findall(f.read())}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    import torch

    write_json(
        os.path.join(save, "quickstart.json"),
        {
            "started": started,
            "epochs": int(epochs),
            "valid_ppl_per_epoch": [valid[e] for e in sorted(valid)],
            "test_ppl": float(test_ppl),
            **({"train_seconds": int(seconds)} if seconds else {}),
            "commit": commit or None,
            "python": platform.python_version(),
            "torch": torch.__version__,
        },
    )


if __name__ == "__main__":
    if len(sys.argv) not in (5, 6):
        sys.exit(__doc__.split("\n\n")[1].strip())
    main(*sys.argv[1:])
