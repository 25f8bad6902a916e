"""The plugin's refusals: a ``UserError`` raised inside one of fairseq's command-line tools ends the
process with ``PROG: error: MESSAGE`` and status 1, without a traceback (``ALM_TRACEBACK=1`` shows it)."""

import os
import sys


class UserError(Exception):
    """Marker of an error the user causes and can fix; the message says what and how, in one line."""


class OptionError(UserError, ValueError):
    """An option (command line, config, ``--model-overrides``) that cannot work."""


class CheckpointError(UserError, RuntimeError):
    """A checkpoint that cannot be read."""


class MissingDataError(UserError, FileNotFoundError):
    """A data directory without the dictionary or split asked for."""


class CorruptDataError(UserError, ValueError):
    """A data directory's file that cannot be what fairseq-preprocess wrote: a truncated or mismatched
    ``.bin`` / ``.idx``, a malformed or duplicated dictionary line."""


class ScoringError(UserError, ValueError):
    """A tool's input, output or checkpoint that cannot be used (alm-score, alm-rescore, ...)."""


class UnsupportedError(UserError, NotImplementedError):
    """A tool asked of a model that does not do it (generating from a character model)."""


def user_error_in(error):
    """The first ``UserError`` in ``error`` and the exceptions it is raised from or during."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, UserError):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


def _program():
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return name if name and name not in ("-c", "__main__.py") else "python"


def one_line_excepthook(exc_type, exc, tb, previous=None):
    """Print the first ``UserError`` of ``exc``'s chain on one line; hand any other exception to ``previous``."""
    error = user_error_in(exc)
    if error is None or os.environ.get("ALM_TRACEBACK", "0") not in ("", "0"):
        return (previous or sys.__excepthook__)(exc_type, exc, tb)
    message = " ".join(str(error).split("\n"))
    sys.stderr.write(f"{_program()}: error: {message}\n")
    sys.stderr.flush()


def install():
    """Put the hook in front of whatever ``sys.excepthook`` is (once)."""
    if getattr(sys.excepthook, "alm_one_line", False):
        return
    previous = sys.excepthook

    def hook(exc_type, exc, tb):
        return one_line_excepthook(exc_type, exc, tb, previous)

    hook.alm_one_line = True
    sys.excepthook = hook
