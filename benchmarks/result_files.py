"""The results' JSON: written whole or not at all (``write_json``), and read for the docs generator
(``benchmarks/report/``) checked, a broken file refused in one line naming the file and the key.

``read_result(path)`` refuses a file that is empty, not JSON or not a JSON object, and any number
that is not finite; each object it returns is a ``CheckedRow``, whose ``[key]`` raises
``ResultError`` where the key is absent or null. A key read with ``.get`` or tested with ``in``
stays optional: the keys checked are exactly those a block reads."""

import json
import math
import os


class ResultError(Exception):
    """A results file the docs cannot be generated from: one line, the file and the key."""


ADVICE = "rerun the row (benchmarks/table.py) or its script, or restore the file; the docs were left unchanged"


class CheckedRow(dict):
    """A JSON object whose ``[key]`` names its file and the key when the key is absent or null."""

    def __init__(self, items, path, where=""):
        super().__init__(items)
        self.path, self.where = path, where

    def __getitem__(self, key):
        if not dict.__contains__(self, key):
            raise ResultError(f"{self.path}: no '{self.where}{key}', which the docs read: {ADVICE}")
        value = dict.__getitem__(self, key)
        if value is None:
            raise ResultError(f"{self.path}: '{self.where}{key}' is null, and the docs read it: {ADVICE}")
        return value


def checked(value, path, where=""):
    """``value`` with its objects made ``CheckedRow``; a number that is not finite refused."""
    if isinstance(value, dict):
        return CheckedRow({k: checked(v, path, f"{where}{k}.") for k, v in value.items()}, path, where)
    if isinstance(value, list):
        return [checked(v, path, f"{where[:-1]}[{i}].") for i, v in enumerate(value)]
    if isinstance(value, float) and not math.isfinite(value):
        raise ResultError(f"{path}: '{where[:-1]}' is {value}, not a finite number: {ADVICE}")
    return value


def read_result(path):
    """The JSON object of ``path``, checked (see the module's docstring)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if not text.strip():
        raise ResultError(f"{path} is empty: {ADVICE}")
    try:
        record = json.loads(text)
    except json.JSONDecodeError as error:
        raise ResultError(
            f"{path} is not valid JSON ({error.msg} at line {error.lineno} column {error.colno}): {ADVICE}"
        ) from None
    if not isinstance(record, dict):
        raise ResultError(f"{path} holds a JSON {type(record).__name__}, not an object of figures: {ADVICE}")
    return checked(record, path)


def write_json(path, value):
    """``value`` to ``path`` (if any), whole or not at all: a run killed while writing keeps the old file."""
    if not path:
        return
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(f"{path}.tmp", "w") as f:
        json.dump(value, f, indent=1)
    os.replace(f"{path}.tmp", path)
    print(f"wrote {path}")
