"""Options checked as a whole, in one place: a number that must be finite and in a range, and
an option that does nothing without another. Each refusal is one ``OptionError`` naming the flag
and the fix (the CLIs print it as ``PROG: error: ...``). Used by the neural cache's options and the
adaptive softmax's; test-time options yet to come go through the same two checks."""
import math
from typing import Optional

from .errors import OptionError


def number(flag: str, value, least: Optional[float] = None, below: Optional[float] = None,
           at_most: Optional[float] = None, above: Optional[float] = None, why: str = "") -> None:
    """``value`` is finite, ``>= least``, ``> above``, ``< below`` and ``<= at_most`` (each bound if given);
    ``None`` (not given) passes. ``why`` says what the bound protects, after a colon."""
    if value is None:
        return
    reason = f": {why}" if why else ""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise OptionError(f"{flag} {value}: give a finite number{reason}")
    if least is not None and value < least:
        raise OptionError(f"{flag} {value} is out of range: it must be at least {least:g}{reason}")
    if above is not None and value <= above:
        raise OptionError(f"{flag} {value} is out of range: it must be above {above:g}{reason}")
    if below is not None and value >= below:
        raise OptionError(f"{flag} {value} is out of range: it must be below {below:g}{reason}")
    if at_most is not None and value > at_most:
        raise OptionError(f"{flag} {value} is out of range: it must be at most {at_most:g}{reason}")


def needs(flag: str, given: bool, other: str, other_on: bool, example: str = "") -> None:
    """Refuse ``flag`` given while ``other``, without which it does nothing, is off."""
    if given and not other_on:
        raise OptionError(f"{flag} does nothing without {other}{example}: add {other} or drop {flag}")
