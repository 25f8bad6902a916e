"""How every console script of the plugin writes a file (a JSON record, a picture, a rescored list):
into a temporary file of a unique name beside it (``tempfile.mkstemp`` in the same folder), then
renamed onto the name asked for.

A rename replaces the name, never writes through it: an output that is a hard link to another
file (a data directory's ``valid.bin``, another model's checkpoint) or a symbolic link to one
becomes a file of its own, and what it pointed at keeps its bytes. The temporary name is new
each time (a fixed one, ``out.partial``, could itself be a planted link), the output never
half-written, and a run that fails leaves no temporary file. Which outputs may be written at
all (not an input, not a file of the data directory, a folder that exists) is ``check_outputs``'
to say, before anything is read."""

import contextlib
import glob
import json
import os
import tempfile
from typing import Dict, Optional, Sequence

from .errors import ScoringError


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


def check_writable(path: Optional[str], option: str) -> None:
    """Before any model loads: an output that cannot be written is found now, not after the run."""
    if path is None:
        return
    # written beside it and renamed onto it (output_files): a link is replaced, in its own folder
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise ScoringError(f"{option} {path} is a directory: give a file name")
    if not os.path.isdir(folder):
        raise ScoringError(f"{option} {path}: the folder {folder} does not exist; create it or give another path")
    if not os.access(folder, os.W_OK) or (
        os.path.isfile(path) and not os.path.islink(path) and not os.access(path, os.W_OK)
    ):
        raise ScoringError(f"{option} {path} cannot be written (permissions); give another path")


def check_outputs(
    outputs: Dict[str, Optional[str]], inputs: Dict[str, Sequence[Optional[str]]], data: Sequence[Optional[str]] = ()
) -> None:
    """Every tool's outputs, before anything is read or written: each output (``{option: path}``,
    None for one not asked for) is no input (``{option: paths}``: the checkpoint, an input text;
    it would be overwritten with what was read from it), no file of a data directory (a folder
    holding a fairseq ``dict*.txt``, or one of ``data``, the tool's ``--data``: the data the model
    reads), no other output (the first written would be lost), and can be written. A path is
    judged by the file it names: a symbolic link (or a chain of them) by its target; a hard link by
    its inode. The tools then write every output through ``output_files`` (a temporary file renamed
    onto it), so a link to any other file is replaced, never written through."""
    taken = [(option, path) for option, paths in inputs.items() for path in paths or () if path]
    data_folders = [os.path.realpath(folder) for entry in data if entry for folder in entry.split(os.pathsep) if folder]
    for option, path in outputs.items():
        if path is None:
            continue
        for other, other_path in taken:
            if same_file(path, other_path):
                raise ScoringError(
                    f"{option} {path} is also {other}"
                    + link_target(path)
                    + ": "
                    + (
                        "the second output written would replace the first"
                        if other in outputs
                        else "writing it would destroy the input"
                    )
                    + "; give another path"
                )
        data_file = data_directory_file(path, data_folders)
        if data_file is not None:
            target, folder = data_file
            raise ScoringError(
                f"{option} {path}"
                + (f" is a link to {target}, a file" if os.path.islink(path) else " is a file")
                + f" of the data directory {folder} (the data the model reads): writing it would "
                "destroy the data; give another path"
            )
        check_writable(path, option)
        taken.append((option, path))


def data_directory_file(path: str, data_folders: Sequence[str] = ()):
    """``(target, folder)`` where the existing file ``path`` names (through any links) lies in a data
    directory: a folder holding a fairseq dictionary, or one of ``data_folders`` (resolved), also
    where ``path`` is a hard link to one of their files; else None."""
    target = os.path.realpath(path)
    if not os.path.isfile(target):
        return None
    folder = os.path.dirname(target)
    if folder in data_folders or glob.glob(os.path.join(glob.escape(folder), "dict*.txt")):
        return target, folder
    if os.stat(target).st_nlink > 1:  # a hard link: the same inode under a data directory's name
        for data_folder in data_folders:
            for name in os.listdir(data_folder) if os.path.isdir(data_folder) else ():
                if os.path.isfile(os.path.join(data_folder, name)) and same_file(
                    target, os.path.join(data_folder, name)
                ):
                    return os.path.join(data_folder, name), data_folder
    return None


def link_target(path: str) -> str:
    """`` (a link to X)`` where ``path`` is a symbolic link (the user may not know where it leads)."""
    return f" (a link to {os.path.realpath(path)})" if os.path.islink(path) else ""


def same_file(a: str, b: str) -> bool:
    """One file under two names (a link, ./x and x): by inode where both exist."""
    if os.path.exists(a) and os.path.exists(b):
        return os.path.samefile(a, b)
    return os.path.realpath(a) == os.path.realpath(b)
