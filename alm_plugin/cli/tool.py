"""How every console script of the plugin runs its work: fairseq's logging kept quiet, and a
problem the user can fix reported as one line, ``PROG: error: MESSAGE``, with exit status 1
and no traceback (as argparse reports a bad option)."""

import ctypes
import fcntl
import logging
import os
import sys

from ..errors import ScoringError, UserError

# Raised for the user's input: our checks (UserError), a bad value (an unknown sacremoses
# language is a ValueError), a missing split (fairseq's FileNotFoundError).
USER_ERRORS = (UserError, ValueError, FileNotFoundError)


def keep_freed_memory_returnable() -> None:
    """Fix glibc's mmap threshold (``M_MMAP_THRESHOLD``) at its initial value, so that a batch's large
    buffers, once freed, go back to the system. No-op off glibc."""
    try:
        # glibc raises the threshold after the first large free; then each batch's vocabulary-sized
        # buffers come from the heap, where the small results kept between them pin it, and the process grows
        ctypes.CDLL("libc.so.6").mallopt(-3, 128 * 1024)  # M_MMAP_THRESHOLD, mallopt(3)'s initial value
    except (OSError, AttributeError):
        pass


def hold_closed_stderr() -> None:
    """Hold descriptor 2 and ``sys.stderr`` on /dev/null where the tool started with stderr closed
    (``2>&-``), so that what it prints there goes nowhere."""
    try:  # closed, or a file opened for reading that took its number before Python started (a launcher's)
        writable = fcntl.fcntl(2, fcntl.F_GETFL) & os.O_ACCMODE != os.O_RDONLY
    except OSError:
        writable = False
    if writable and sys.stderr is not None:
        return
    if not writable:
        held = os.open(os.devnull, os.O_WRONLY)
        if held != 2:  # a free descriptor 2 would go to the next file opened, and a library's warning into it
            os.dup2(held, 2)
            os.close(held)
    # a closed sys.stderr would fail the run at the summary; a None one (Python's, for a closed
    # descriptor) makes print(file=sys.stderr) write into stdout, among the scores
    sys.stderr = open(os.devnull, "w", encoding="utf-8")


def run_tool(prog: str, run, args) -> None:
    """``run(args)`` as the console script ``prog``."""
    hold_closed_stderr()
    keep_freed_memory_returnable()
    # importing fairseq sets the root logger to DEBUG: its loading (and matplotlib) would be chatty
    logging.getLogger().setLevel(logging.WARNING)
    try:
        run(args)
    except USER_ERRORS as error:
        sys.exit(f"{prog}: error: {' '.join(str(error).splitlines())}")
    except BrokenPipeError:  # alm-score ... | head
        sys.stderr.close()


# what matplotlib's savefig writes without LaTeX (pgf needs xelatex)
NEEDS_LATEX = {"pgf"}


def picture_path(path, option):
    """The file matplotlib's ``savefig(path)`` writes, found before the run: a name without an
    extension gets matplotlib's ``.png``; an extension matplotlib cannot write is refused (it would
    fail after the whole run). ``None`` stays ``None``, and a stream (``output_files.is_stream``) is
    written in PNG under its own name."""
    if path is None:
        return None
    from .output_files import is_stream

    if path and is_stream(path):  # /dev/stdout, a FIFO: written as it is, in PNG
        return path
    from matplotlib.backend_bases import FigureCanvasBase

    formats = sorted(set(FigureCanvasBase.get_supported_filetypes()) - NEEDS_LATEX)
    extension = os.path.splitext(path)[1]
    if not extension:
        return path + ".png"  # as savefig names it
    if extension[1:].lower() not in formats:
        raise ScoringError(
            f"{option} {path}: the picture's format is read from its extension, and "
            f"'{extension}' is none matplotlib writes here: end the name in .png (or "
            f"{', '.join('.' + f for f in formats if f != 'png')})"
        )
    return path
