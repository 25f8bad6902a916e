"""The paper step's own record, so that the next command's plan uses measured figures: how many rows this
command trained side by side, each row's seconds an epoch (from ``paper_progress.json``) and the GPU's busy
share over the step (``nvidia-smi``'s utilization samples, one a second; none on a dry run).

    python -m benchmarks.gpu.paper_record --progress paper_progress.json --busy gpu_busy.txt \\
        --rows lstm,single --json paper_step.json
"""

import argparse
import json
import os

from benchmarks.result_files import check_json, write_json


def busy_share(lines):
    """The mean of ``nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits`` samples, or None."""
    samples = [float(line) for line in lines if line.strip().replace(".", "", 1).isdigit()]
    return round(sum(samples) / len(samples), 1) if samples else None


def record(progress, rows, busy_lines):
    """``progress``: table.py's ``--progress`` JSON for ``rows``; ``busy_lines``: the samples' lines."""
    return {
        "rows_side_by_side": len(rows),
        "rows": {
            name: {key: progress.get(name, {}).get(key) for key in ("state", "epochs_done", "seconds_per_epoch")}
            for name in rows
        },
        "gpu_busy_percent": busy_share(busy_lines),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--progress", required=True, help="table.py's --progress JSON of this command's rows")
    parser.add_argument("--busy", help="the GPU utilization samples, one a line (absent on a dry run)")
    parser.add_argument("--rows", required=True, help="this command's rows, comma-separated")
    parser.add_argument("--json", required=True, help="where the record goes")
    args = parser.parse_args(argv)
    check_json(
        parser,
        args.json,
        inputs={"--progress": [args.progress], "--busy": [args.busy]},
        own=lambda record: "rows_side_by_side" in record,
    )
    progress = read_progress(parser, args.progress)
    write_json(args.json, record(progress, args.rows.split(","), read_busy(parser, args.busy)))


def read_progress(parser, path):
    """table.py's ``--progress`` JSON: an object of one object a row; anything else refused in one line."""

    def refuse(message):
        parser.exit(2, f"{parser.prog}: error: --progress {path} {message}: give table.py's --progress file\n")

    try:
        with open(path, encoding="utf-8") as f:
            progress = json.load(f)
    except OSError as error:
        refuse(f"cannot be read ({error.strerror})")
    except ValueError as error:
        refuse(f"is not JSON ({error})")
    if not isinstance(progress, dict) or not all(isinstance(entry, dict) for entry in progress.values()):
        refuse("is not an object of one object a row")
    return progress


def read_busy(parser, path):
    """The samples file's lines; none when it is absent (a dry run), one line when it is not UTF-8 text."""
    if not path or not os.path.lexists(path):
        return []
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().splitlines()
    except (OSError, UnicodeDecodeError) as error:
        why = error.strerror if isinstance(error, OSError) else "not UTF-8 text"
        parser.exit(2, f"{parser.prog}: error: --busy {path} cannot be read ({why}): give nvidia-smi's samples\n")


if __name__ == "__main__":
    main()
