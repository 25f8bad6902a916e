"""How every console script of the plugin writes a file (a JSON record, a picture, a rescored list):
into a temporary file of a unique name beside it (``tempfile.mkstemp`` in the same folder), then
renamed onto the name asked for.

A rename replaces the name, never writes through it: an output that is a hard link to another
file (a data directory's ``valid.bin``, another model's checkpoint) or a symbolic link to one
becomes a file of its own, and what it pointed at keeps its bytes. The temporary name is new
each time (a fixed one, ``out.partial``, could itself be a planted link), the output never
half-written, and a run that fails leaves no temporary file. Which outputs may be written at
all (not an input, not a file of the data directory) is ``scoring.check_outputs``' to say,
before anything is read."""

import contextlib
import json
import os
import tempfile


def _file_mode() -> int:
    """What ``open(path, "w")`` would give a new file: 0o666 less the umask (mkstemp makes 0o600)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


@contextlib.contextmanager
def output_file(path: str, binary: bool = False):
    """A handle to write ``path``'s new content to (text in UTF-8, or ``binary``); renamed onto
    ``path`` when the block ends without an exception, removed if it raises."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, temporary = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.", suffix=".partial")
    try:
        with os.fdopen(fd, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8"})) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, _file_mode())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def write_text(path: str, text: str) -> None:
    with output_file(path) as handle:
        handle.write(text)


def write_json(path: str, record, indent: int = 1) -> None:
    write_text(path, json.dumps(record, indent=indent))


def save_figure(figure, path: str, **options) -> None:
    """matplotlib's ``figure.savefig(path, ...)`` through ``output_file``: the format read from the
    extension (``cli.tool.picture_path`` has made sure there is one matplotlib writes)."""
    extension = os.path.splitext(path)[1][1:].lower()
    with output_file(path, binary=True) as handle:
        figure.savefig(handle, format=extension or "png", **options)
