"""The command line of the package ``benchmarks/report/`` (every generated block of
docs/benchmarks.md; ``--help`` says what it writes). A package shadows a module of its name, so
``import report`` is always the package and this file is only ever run:

    python benchmarks/report.py --update-docs
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import main  # noqa: E402

if __name__ == "__main__":
    main()
