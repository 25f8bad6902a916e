"""The benchmarks: the tables' rows (``rows``, trained and scored by ``table``), the speed scripts and
the generator of docs/benchmarks.md (``report``). Each runs as a module from the repository root,
the one way documented (docs/benchmarks.md):

    python -m benchmarks.table --corpus ptb --rows lstm,single
    python -m benchmarks.report --update-docs
"""

import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the repository
