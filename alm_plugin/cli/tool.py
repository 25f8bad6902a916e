"""How every console script of the plugin runs its work: fairseq's logging kept quiet, and a
problem the user can fix reported as one line, ``PROG: error: MESSAGE``, with exit status 1
and no traceback (as argparse reports a bad option)."""
import logging
import sys

from ..errors import UserError
from ..scoring import ScoringError

# Raised for the user's input: our checks (ScoringError, UserError), a bad value (an unknown
# sacremoses language is a ValueError), a missing split (fairseq's FileNotFoundError).
USER_ERRORS = (ScoringError, UserError, ValueError, FileNotFoundError)


def run_tool(prog: str, run, args) -> None:
    """``run(args)`` as the console script ``prog``."""
    # importing fairseq sets the root logger to DEBUG: its loading (and matplotlib) would be chatty
    logging.getLogger().setLevel(logging.WARNING)
    try:
        run(args)
    except USER_ERRORS as error:
        sys.exit(f"{prog}: error: {' '.join(str(error).splitlines())}")
    except BrokenPipeError:  # alm-score ... | head
        sys.stderr.close()
