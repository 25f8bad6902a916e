"""The results' JSON: written whole or not at all (``write_json``), and read for the docs generator
(``benchmarks/report/``) checked, a broken file refused in one line naming the file and the key.

``read_result(path)`` refuses a folder, a file that is empty, not JSON or not a JSON object, any
number that is not finite, and a figure that is not what its key names (``figure_kind``: a
perplexity at least 1.05, so that none is printed as 1.0; bits per character above 0; BLEU from 0 to
100; a speed above 0; a duration not negative; a count a whole number; a parameter count below 10^12; epochs a
whole number up to 1,000, no best epoch past them; a ratio above 0; a curve a list); each object it
returns is a ``CheckedRow``, whose ``[key]`` raises ``ResultError`` where the key is absent or null, and
a string, object or list that a block takes for a number (or a string for an object) raises it too.
A key read with ``.get`` or tested with ``in`` stays optional: the keys whose presence is checked are
exactly those a block reads."""

import copy
import importlib
import importlib.util
import json
import math
import os
import sys
import types


class ResultError(Exception):
    """A results file the docs cannot be generated from: one line, the file and the key."""


ADVICE = "rerun the row (benchmarks/table.py) or its script, or restore the file; the docs were left unchanged"


class NotANumber:
    """A string, object or list read from a results file: where the docs take it for a number (format it
    as one, add, compare or round it), it raises ``ResultError`` naming its file and key."""

    path = where = ""

    def refuse(self, *_, what="a number"):
        shown = json.dumps(self)
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        raise ResultError(f"{self.path}: '{self.where[:-1]}' is {shown}, not {what}: {ADVICE}")

    def __format__(self, spec):
        try:
            return super().__format__(spec)
        except (TypeError, ValueError):  # a number's format (",", ".2f", "%") on a string, object or list
            self.refuse()

    __float__ = __int__ = __round__ = __neg__ = __abs__ = refuse


def number_guard(name):
    """The operator ``name`` of a string, object or list, refused when the other side is a number."""

    def operator(self, other):
        if isinstance(other, (int, float)):
            self.refuse()
        own = getattr(super(NotANumber, self), name, None)
        return NotImplemented if own is None else own(other)

    return operator


for name in ("add", "radd", "sub", "rsub", "truediv", "rtruediv", "lt", "le", "gt", "ge"):
    setattr(NotANumber, f"__{name}__", number_guard(f"__{name}__"))


class Text(NotANumber, str):
    """A string of a results file (see ``NotANumber``); where the docs read it as an object or a list (by a
    key or a position, its ``.get`` or ``.items``, going through it), it raises ``ResultError`` too."""

    def __new__(cls, value, path, where):
        text = super().__new__(cls, value)
        text.path, text.where = path, where
        return text

    def __getnewargs__(self):  # pickled whole
        return str(self), self.path, self.where

    def __deepcopy__(self, memo):  # a string, its file and its key: nothing in it changes
        return self

    def not_an_object(self, *_):
        self.refuse(what="an object or a list of figures")

    get = items = keys = values = not_an_object
    __iter__ = not_an_object  # where the docs go through an object's keys or a list's items

    def __getitem__(self, key):  # a slice is a string's; a position or a key reads a list or an object
        return super().__getitem__(key) if isinstance(key, slice) else self.not_an_object()

    def __float__(self):
        try:
            return float(str(self))  # a number written as a string ("1" among a command's arguments)
        except ValueError:
            self.refuse()

    def __int__(self):
        try:
            return int(str(self))
        except ValueError:
            self.refuse()


class CheckedList(NotANumber, list):
    """A list of a results file (see ``NotANumber``); its items are read at a list's own speed."""

    def __init__(self, items, path, where):
        super().__init__(items)
        self.path, self.where = path, where

    def __deepcopy__(self, memo):  # as a list is copied, not through pickling's slower path
        return CheckedList([copy.deepcopy(item, memo) for item in self], self.path, self.where)

    def read_only(self, *_, **__):  # read_result hands the same object to every reader of its file
        raise TypeError(f"{self.path}: a results file's list is read-only: copy it (list(...)) to change it")

    __setitem__ = __delitem__ = __iadd__ = __imul__ = read_only
    append = extend = insert = pop = remove = sort = reverse = clear = read_only


class CheckedRow(NotANumber, dict):
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

    def __deepcopy__(self, memo):  # built whole: a copy's items are set by __init__, not one by one
        return CheckedRow({k: copy.deepcopy(v, memo) for k, v in dict.items(self)}, self.path, self.where)

    def __reduce__(self):  # pickled whole, for the same reason
        return CheckedRow, (dict(dict.items(self)), self.path, self.where)

    def read_only(self, *_, **__):  # read_result hands the same object to every reader of its file
        raise TypeError(f"{self.path}: a results file's object is read-only: copy it (dict(...)) to change it")

    __setitem__ = __delitem__ = __ior__ = update = setdefault = pop = popitem = clear = read_only


# what a key's name says its figure is (the words of the name, split at "_"; a curve, NAME_per_epoch, is
# a list of NAME's figures, each such a number or null: an epoch not logged); a JSON object under such a
# key holds such figures by name (a speed script's tokens_per_s by model), but under a count's key
PERPLEXITY = "a perplexity (a finite number of at least 1.05, so that none is printed as 1.0)"
BPC = "bits per character (a finite number above 0)"
BLEU = "a BLEU score (a finite number from 0 to 100)"
SPEED = "a speed (a finite number above 0)"
DURATION = "a duration (a finite number, not negative)"
SIZE = "a number of parameters (a whole number above 0, below 10^12)"
EPOCHS = "a number of epochs (a whole number from 0 to 1,000)"
RATIO = "a ratio (a finite number above 0)"
COUNT = "a count (a whole number, not negative)"
NUMBER = "a finite number"
CURVE = "a curve (a list of figures, one an epoch)"
DURATION_WORDS = {"minutes", "seconds", "hours", "ms"}
NUMBER_WORDS = {"entropy", "gate", "use", "lr", "theta", "lambda", "decay"}
COUNT_WORDS = {"threads", "seed", "steps", "updates", "repeats", "sentences", "types", "syncs"}
COUNT_WORDS |= {"window", "chunk", "block", "workers", "calls", "runs", "reused", "records", "streams"}
LEAST_PERPLEXITY = 1.05


def figure_kind(key):
    """What the figure under ``key`` must be (one of the kinds above), or None: anything."""
    key = str(key)
    name = key[: -len("_per_epoch")] if key.endswith("_per_epoch") else key
    words = name.split("_")
    if "ppl" in words:
        return PERPLEXITY
    if "bpc" in words:
        return BPC
    if "bleu" in words:
        return BLEU
    if name.endswith("_per_s"):
        return SPEED
    if DURATION_WORDS.intersection(words):
        return DURATION
    if "params" in words:
        return SIZE
    if name in ("epoch", "epochs", "best_epoch", "cut_at_epoch", "epochs_done"):
        return EPOCHS
    if "ratio" in words:
        return RATIO
    if NUMBER_WORDS.intersection(words):
        return NUMBER
    if COUNT_WORDS.intersection(words):
        return COUNT
    return None


def is_figure(value, kind):
    """Whether ``value`` is a figure of ``kind`` (a JSON true is no number, nor is "100")."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return False
    if kind in (SIZE, COUNT, EPOCHS) and value != int(value):
        return False
    return {
        PERPLEXITY: value >= LEAST_PERPLEXITY,
        BPC: value > 0,
        BLEU: 0 <= value <= 100,
        SPEED: value > 0,
        DURATION: value >= 0,
        SIZE: 0 < value < 10**12,
        COUNT: value >= 0,
        EPOCHS: 0 <= value <= 1000,
        RATIO: value > 0,
    }.get(kind, True)


def checked(value, path, where="", kind=None):
    """``value`` with its objects made ``CheckedRow``; a number that is not finite refused, a figure that
    is not what its key names (``figure_kind``), and a curve (``NAME_per_epoch``) that is no list."""
    if where.endswith("_per_epoch.") and not isinstance(value, list) and value is not None:
        raise ResultError(f"{path}: '{where[:-1]}' is {json.dumps(value)[:40]}, not {CURVE}: {ADVICE}")
    if isinstance(value, dict):
        inherited = None if kind in (COUNT, SIZE, EPOCHS) else kind  # a count names itself; "by_threads" holds figures
        row = CheckedRow(
            {k: checked(v, path, f"{where}{k}.", figure_kind(k) or inherited) for k, v in value.items()}, path, where
        )
        best, epochs = value.get("best_epoch"), value.get("epochs")
        if isinstance(best, (int, float)) and isinstance(epochs, (int, float)) and best > epochs:
            raise ResultError(f"{path}: '{where}best_epoch' is {best}, past its {epochs} epochs: {ADVICE}")
        return row
    if isinstance(value, list):
        return CheckedList([checked(v, path, f"{where[:-1]}[{i}].", kind) for i, v in enumerate(value)], path, where)
    if isinstance(value, float) and not math.isfinite(value):
        raise ResultError(f"{path}: '{where[:-1]}' is {value}, not a finite number: {ADVICE}")
    if kind is not None and value is not None and not is_figure(value, kind):  # null: CheckedRow's to refuse
        raise ResultError(f"{path}: '{where[:-1]}' is {json.dumps(value)}, not {kind}: {ADVICE}")
    return Text(value, path, where) if isinstance(value, str) else value


READ = {}  # (path, text) -> its checked object: a report reads each row many times


def read_result(path):
    """The JSON object of ``path``, checked (see the module's docstring); read-only, and parsed and checked
    again only where the file's text has changed."""
    if os.path.isdir(path):
        raise ResultError(f"{path} is a directory, not a results file: {ADVICE}")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as error:
        raise ResultError(f"{path} cannot be read ({getattr(error, 'strerror', None) or error}): {ADVICE}") from None
    if (path, text) not in READ:
        READ[path, text] = parsed(text, path)
    return READ[path, text]


def parsed(text, path):
    """``text``, the content of ``path``, as a checked JSON object."""
    if not text.strip():
        raise ResultError(f"{path} is empty: {ADVICE}")
    try:
        record = json.loads(text)
    except json.JSONDecodeError as error:
        raise ResultError(
            f"{path} is not valid JSON ({error.msg} at line {error.lineno} column {error.colno}): {ADVICE}"
        ) from None
    except RecursionError:
        raise ResultError(f"{path} nests its JSON too deep to be a results file: {ADVICE}") from None
    if not isinstance(record, dict):
        raise ResultError(f"{path} holds a JSON {type(record).__name__}, not an object of figures: {ADVICE}")
    return checked(record, path)


def plugin_files():
    """``alm_plugin.errors.UserError`` and ``alm_plugin.cli.output_files``. Importing ``alm_plugin`` registers the
    plugin with fairseq (it imports torch and fairseq); a script that only reads and writes JSON
    (``table.py --progress``, ``gpu/paper_record.py``) and has not imported it loads these two modules alone,
    as a package of their own (``_alm_plugin_files``): the same code, the plugin left unimported."""
    if "alm_plugin" in sys.modules:
        from alm_plugin import errors
        from alm_plugin.cli import output_files
    else:
        package = sys.modules.get("_alm_plugin_files")
        if package is None:
            folder = os.path.dirname(importlib.util.find_spec("alm_plugin").origin)
            package = types.ModuleType("_alm_plugin_files")
            package.__path__ = [folder]
            sys.modules["_alm_plugin_files"] = package
        errors = importlib.import_module("_alm_plugin_files.errors")
        output_files = importlib.import_module("_alm_plugin_files.cli.output_files")
    return errors.UserError, output_files


RESULTS = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))


def of_another_kind(path, own):
    """Whether ``path`` (through links) is a file of benchmarks/results whose JSON is not of the writer's kind
    (``own(record)`` false, or no JSON object at all): a committed result another script or the docs read."""
    target = os.path.realpath(path)
    if not (target.startswith(RESULTS + os.sep) and os.path.isfile(target)):
        return False
    try:
        with open(target, encoding="utf-8") as f:
            record = json.load(f)
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return True
    return not (isinstance(record, dict) and own(record))


def check_json(parser, path, data=(), option="--json", inputs=None, own=None):
    """Before the run: a script's ``--json`` checked as every tool's output is
    (``alm_plugin.cli.output_files.check_outputs``: a name, not a folder, none of ``inputs`` (``{what:
    paths}``, the files the script reads) by identity, no checkpoint nor table row's results, no file
    of a data directory, ``data`` among them, a folder that takes a new file; a stream is written to as
    it is), and, with ``own`` (whether a record is of the script's kind), no file of benchmarks/results of
    another kind; refused in one line, exit status 2."""
    if path is None:
        return
    if own is not None and of_another_kind(path, own):
        parser.exit(
            2,
            f"{parser.prog}: error: {option} {path} is a committed result of another kind, which the docs or "
            "another script read: writing it would replace it; give another path\n",
        )
    UserError, output_files = plugin_files()
    try:
        output_files.check_outputs(
            {option: path}, inputs or {}, data=[folder for folder in data if folder], results=True
        )
    except UserError as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")


def write_json(path, value, announce=True):
    """``value`` to ``path`` (if any) through the project's one writer (``alm_plugin.cli.output_files``):
    a temporary file of a unique name beside it, renamed onto it, the old file's mode kept; a run
    killed while writing keeps the old file. A failed write ends the process in one line;
    ``announce``: say ``wrote PATH``."""
    if path is None:
        return
    UserError, output_files = plugin_files()
    try:
        output_files.write_json(path, value)
    except UserError as error:
        sys.exit(f"{os.path.basename(sys.argv[0]) or 'benchmarks'}: error: {error}")
    if announce:
        print(f"wrote {path}")
