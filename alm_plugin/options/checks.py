"""Options checked as a whole: a number that must be finite and in a range, and an option that does
nothing without another, each refused in one ``OptionError`` naming the flag and the fix. Also fairseq-train's
``--amp`` on the CPU and a ``--save-dir`` that is no folder, refused where fairseq meets them."""

import math
import os
from typing import Optional

from ..errors import OptionError


def whole_batch(output, target, reader: str) -> None:
    """A model output that is not its batch's whole, as ``fairseq-eval-lm --softmax-batch`` slices it, refused
    where ``reader`` reads the batch whole (``evaluation.options.refuse_softmax_batch`` refuses the option
    before the first batch where it can tell)."""
    if output.shape[:2] != target.shape[:2]:
        raise OptionError(
            f"--softmax-batch: fairseq handed the model a slice of a batch's output, and {reader} needs the batch "
            "whole: drop --softmax-batch"
        )


def number(
    flag: str,
    value,
    least: Optional[float] = None,
    below: Optional[float] = None,
    at_most: Optional[float] = None,
    above: Optional[float] = None,
    why: str = "",
) -> None:
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


def refuse_amp_on_the_cpu(params) -> None:
    """Refuse ``fairseq-train --amp`` with the parameters ``params`` on the CPU (``--cpu``, or no GPU torch
    can use), where it would train in float32 as without the flag."""
    if any(getattr(p, "is_cuda", False) for p in params):
        return
    raise OptionError(
        "--amp: fairseq's automatic mixed precision casts CUDA operations only, and this run trains on "
        "the CPU (--cpu, or no GPU torch can use): it would train in float32 as without the flag; drop "
        "--amp, or train on a GPU without --cpu"
    )


def _install_amp_check() -> None:
    """Put the check in front of fairseq's ``AMPOptimizer.build_optimizer`` (once): the trainer builds
    it, and it alone, for ``--amp``, with the parameters on the device they train on."""
    try:
        from fairseq.optim.amp_optimizer import AMPOptimizer
    except ImportError:  # fairseq not importable: nothing to guard
        return
    build = AMPOptimizer.__dict__["build_optimizer"].__func__
    if getattr(build, "checks_the_device", False):
        return

    def build_optimizer(cls, cfg, params, **kwargs):
        params = list(params)
        refuse_amp_on_the_cpu(params)
        return build(cls, cfg, params, **kwargs)

    build_optimizer.checks_the_device = True
    build_optimizer.__doc__ = build.__doc__
    AMPOptimizer.build_optimizer = classmethod(build_optimizer)


def refuse_a_file_as_save_dir(save_dir) -> None:
    """``fairseq-train --save-dir`` naming a file, or a path through one: fairseq's
    ``verify_checkpoint_directory`` ends in a ``NotADirectoryError`` / ``FileExistsError`` traceback."""
    path = os.path.abspath(save_dir)
    while path and not os.path.exists(path):
        path = os.path.dirname(path) if os.path.dirname(path) != path else ""
    if path and not os.path.isdir(path):
        where = "is a file" if path == os.path.abspath(save_dir) else f"runs through {path}, a file"
        raise OptionError(
            f"--save-dir {save_dir} {where}, not a folder: give the folder the checkpoints go to "
            "(made if missing), e.g. checkpoints/NAME"
        )


def refuse_linked_checkpoints(save_dir) -> None:
    """A checkpoint name in ``--save-dir`` that is a symbolic link or a hard link: fairseq writes
    ``checkpoint_best.pt`` and copies it onto the others through such a name, onto another run's file."""
    if not os.path.isdir(save_dir):
        return
    for name in sorted(os.listdir(save_dir)):
        path = os.path.join(save_dir, name)
        if not name.startswith("checkpoint"):
            continue
        if os.path.islink(path):
            what, kept = f"is a symbolic link (to {os.readlink(path)})", "the file it points at is kept"
        elif os.path.isfile(path) and os.stat(path).st_nlink > 1:
            what, kept = "is a hard link, its data shared with another file", "the other name keeps the data"
        else:
            continue
        raise OptionError(
            f"--save-dir {save_dir}: {name} {what}, and fairseq would write this run's checkpoint through it: "
            f"remove it (rm {path}; {kept}) or give another --save-dir"
        )


def _install_save_dir_check() -> None:
    """Put the check in front of fairseq's ``checkpoint_utils.verify_checkpoint_directory`` (once):
    fairseq-train calls it through the module before it makes the folder."""
    try:
        from fairseq import checkpoint_utils
    except ImportError:
        return
    verify = checkpoint_utils.verify_checkpoint_directory
    if getattr(verify, "checks_for_a_file", False):
        return

    def verify_checkpoint_directory(save_dir: str) -> None:
        refuse_a_file_as_save_dir(save_dir)
        refuse_linked_checkpoints(save_dir)
        return verify(save_dir)

    verify_checkpoint_directory.checks_for_a_file = True
    verify_checkpoint_directory.__doc__ = verify.__doc__
    checkpoint_utils.verify_checkpoint_directory = verify_checkpoint_directory


_install_amp_check()
_install_save_dir_check()
