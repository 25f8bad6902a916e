"""How every file of the project is written, and which outputs a tool may write at all: a file is
written whole to a temporary file beside it, then renamed onto its name (``output_file``), and
``check_outputs`` refuses, before anything is read, an output that would destroy what is read."""

import contextlib
import errno
import glob
import json
import os
import re
import stat
import sys
import tempfile
from typing import Dict, Optional, Sequence

from ..errors import ScoringError

# the names of a descriptor this process already holds: written through it, never replaced
DESCRIPTOR_NAMES = re.compile(
    r"/dev/(?P<std>stdin|stdout|stderr)|/dev/fd/(?P<fd>\d+)|/proc/(?P<pid>self|\d+)/fd/(?P<n>\d+)"
)
STANDARD = {"stdin": 0, "stdout": 1, "stderr": 2}


def _file_mode() -> int:
    """What ``open(path, "w")`` would give a new file: 0o666 less the umask (mkstemp makes 0o600)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _kept_mode(path: str) -> int:
    """The permission bits of the file ``path`` names, kept by the file that replaces it; a new
    file's as ``open(path, "w")`` makes them."""
    try:
        status = os.stat(path)
    except OSError:
        return _file_mode()
    return stat.S_IMODE(status.st_mode) if stat.S_ISREG(status.st_mode) else _file_mode()


def descriptor_of(path: str) -> Optional[int]:
    """The descriptor of this process that ``path`` names, through any chain of symbolic links
    (``/dev/stdout``, ``/dev/fd/N``, ``/proc/self/fd/N``); None for any other path."""
    path = os.path.abspath(path)
    for _ in range(40):
        match = DESCRIPTOR_NAMES.fullmatch(path)
        if match:
            if match["std"]:
                return STANDARD[match["std"]]
            if match["fd"]:
                return int(match["fd"])
            if match["pid"] in ("self", str(os.getpid())):
                return int(match["n"])
            return None
        if not os.path.islink(path):
            return None
        path = os.path.join(os.path.dirname(path), os.readlink(path))
    return None


def is_stream(path: str) -> bool:
    """Whether ``path`` is written as a stream, never replaced: a descriptor of this process, a
    FIFO, a character device or a socket."""
    if descriptor_of(path) is not None:
        return True
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISSOCK(mode)


def write_error(path: str, error: OSError, existed: bool) -> ScoringError:
    """One line: the file, the system's reason, and what became of the file."""
    reason = f"[Errno {error.errno}] {error.strerror}" if error.strerror else str(error)
    after = f"{path} keeps its old content" if existed else "nothing was written"
    full = error.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT)
    fix = "free space (or raise ulimit -f) or give another path" if full else "give another path"
    return ScoringError(f"writing {path} failed ({reason}): {after}; {fix}")


@contextlib.contextmanager
def _stream(path: str, mode: str, encoding):
    descriptor = descriptor_of(path)
    try:
        if descriptor is not None:
            if descriptor in (1, 2):  # what the process printed first comes first
                (sys.stdout if descriptor == 1 else sys.stderr).flush()
            handle = os.fdopen(os.dup(descriptor), mode, encoding=encoding)
        else:
            handle = open(path, mode, encoding=encoding)
        with handle:
            yield handle
    except OSError as error:
        raise write_error(path, error, existed=False) from None


@contextlib.contextmanager
def output_file(path, binary: bool = False):
    """A handle to write ``path``'s new content to (text in UTF-8, or ``binary``); renamed onto
    ``path`` when the block ends without an exception, removed if it raises. A stream (``is_stream``)
    is written to directly."""
    path = os.fspath(path)
    if not path:
        raise ScoringError("an output with an empty name: give the file to write")
    mode, encoding = ("wb", None) if binary else ("w", "utf-8")
    if is_stream(path):  # written through: a rename would replace the stream's name, and its reader get nothing
        with _stream(path, mode, encoding) as handle:
            yield handle
        return
    existed = os.path.lexists(path)
    permissions = _kept_mode(path)
    folder = os.path.dirname(os.path.abspath(path))
    try:  # a new name each time: a fixed one (out.partial) could itself be a planted link
        fd, temporary = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.", suffix=".partial")
    except OSError as error:
        raise write_error(path, error, existed) from None
    try:
        with os.fdopen(fd, mode, encoding=encoding) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, permissions)
        os.replace(temporary, path)  # replaces the name, never writes through a link at it
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(error, OSError):
            raise write_error(path, error, existed) from None
        raise


def write_text(path, text: str) -> None:
    with output_file(path) as handle:
        handle.write(text)


def write_json(path, record, indent: int = 1) -> None:
    write_text(path, json.dumps(record, indent=indent))


def save_figure(figure, path, **options) -> None:
    """matplotlib's ``figure.savefig(path, ...)`` through ``output_file``: the format read from the
    extension (``cli.tool.picture_path`` has made sure there is one matplotlib writes)."""
    extension = os.path.splitext(os.fspath(path))[1][1:].lower()
    with output_file(path, binary=True) as handle:
        figure.savefig(handle, format=extension or "png", **options)


def check_writable(path, option: str) -> None:
    """Before any model loads: an output that cannot be written is found before the run, not after it."""
    if path is None:
        return
    path = os.fspath(path)
    if not path:
        raise ScoringError(f"{option} '': an empty file name; give the file to write")
    if is_stream(path):
        descriptor = descriptor_of(path)
        if descriptor is not None:
            try:
                os.fstat(descriptor)
            except OSError:
                raise ScoringError(
                    f"{option} {path}: descriptor {descriptor} is not open in this process; give a file name"
                ) from None
        elif not os.access(path, os.W_OK):
            raise ScoringError(f"{option} {path} cannot be written (permissions); give another path")
        return
    if os.path.isdir(path):
        raise ScoringError(f"{option} {path} is a directory: give a file name")
    if path.endswith(os.sep) or path.endswith("/"):
        raise ScoringError(f"{option} {path} ends in '/', a folder's name: give a file name")
    # written beside it and renamed onto it (output_file): a link is replaced, in its own folder
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise ScoringError(f"{option} {path}: the folder {folder} does not exist; create it or give another path")
    try:  # the one sure test (os.access says yes to root on a read-only mount)
        fd, trial = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.", suffix=".partial")
        os.close(fd)
        os.unlink(trial)
    except OSError as error:
        raise ScoringError(
            f"{option} {path} cannot be written: a new file in {folder} fails ({error.strerror}); give another path"
        ) from None
    if os.path.isfile(path) and not os.path.islink(path) and not os.access(path, os.W_OK):
        raise ScoringError(f"{option} {path} cannot be written (permissions); give another path")


def check_outputs(
    outputs: Dict[str, Optional[str]],
    inputs: Dict[str, Sequence[Optional[str]]],
    data: Sequence[Optional[str]] = (),
    results: bool = False,
) -> None:
    """Refuse, before anything is read or written, an output (``{option: path}``, None for one not
    asked for) that is an input (``{option: paths}``) or a checkpoint beside one, a file of a data
    directory (``data``: the tool's ``--data``), a checkpoint or a table row's results whatever its
    name, another output, or that cannot be written; ``results``: a benchmark writes its own record."""
    taken = [(option, path) for option, paths in inputs.items() for path in paths or () if path]
    data_folders = [os.path.realpath(folder) for entry in data if entry for folder in entry.split(os.pathsep) if folder]
    for option, path in outputs.items():
        if path is None:
            continue
        path = os.fspath(path)
        if not path or is_stream(path):
            check_writable(path, option)
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
        # a resume reads checkpoint_last.pt, a comparison another checkpoint of the folder
        for other, checkpoint, read in checkpoints_beside(inputs, path):
            if same_file(path, checkpoint) and not os.path.lexists(path):
                raise ScoringError(
                    f"{option} {path} is a checkpoint's name beside {other} {read} (a resume would read "
                    "it): give another path"
                )
            if same_file(path, checkpoint):
                raise ScoringError(
                    f"{option} {path} is {checkpoint}"
                    + link_target(path)
                    + f", a checkpoint beside {other} {read} (a resume or another run reads it): writing it "
                    "would destroy it; give another path"
                )
        kind = read_elsewhere(path, results)
        if kind is not None:
            raise ScoringError(f"{option} {path}{link_target(path)} is {kind}: give another path")
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
        taken.append((option, path))  # a later output naming the same file would replace this one


def checkpoints_beside(inputs: Dict[str, Sequence[Optional[str]]], output: str):
    """``(option, checkpoint, read)`` for every ``*.pt`` file in the folder of each input ``read``
    (``:``-separated ensembles split; the folder of its name and, through links, of its file), and for
    ``output`` itself where it is a ``checkpoint*.pt`` not yet there (fairseq-train's names: a resume
    would read it)."""
    for option, paths in inputs.items():
        for entry in paths or ():
            for read in os.fspath(entry).split(os.pathsep) if entry else ():
                folders = dict.fromkeys(
                    (os.path.dirname(os.path.abspath(read)), os.path.dirname(os.path.realpath(read)))
                )
                for folder in folders:
                    for checkpoint in sorted(glob.glob(os.path.join(glob.escape(folder), "*.pt"))):
                        yield option, checkpoint, read
                    if (
                        not os.path.lexists(output)
                        and os.path.realpath(os.path.dirname(os.path.abspath(output))) == os.path.realpath(folder)
                        and CHECKPOINT_NAME.fullmatch(os.path.basename(output))
                    ):
                        yield option, output, read


CHECKPOINT_NAME = re.compile(r"checkpoint.*\.pt")
CHECKPOINT_CONTENT = "a checkpoint (a file torch saved): writing it would destroy it"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))  # the repository
RESULTS = os.path.join(ROOT, "benchmarks", "results")


# torch.save's legacy format opens with this number, pickled as a 10-byte long (after a protocol 4 frame header)
TORCH_MAGIC = (0x1950A86A20F9469CFC6C).to_bytes(10, "little")


def read_elsewhere(path: str, results: bool = False) -> Optional[str]:
    """What ``path`` is, judged by its name, its target's name and its content, where a resume, a tool
    or the docs read it: a checkpoint, a table row's results, or (unless ``results``) a file of
    benchmarks/results; None for any other file."""
    target = os.path.realpath(path)
    if CHECKPOINT_NAME.fullmatch(os.path.basename(path)) or CHECKPOINT_NAME.fullmatch(os.path.basename(target)):
        return "a checkpoint's name (fairseq-train resumes from checkpoint_last.pt, the tools read checkpoint_best.pt)"
    if not results and (target == RESULTS or target.startswith(RESULTS + os.sep)):
        return f"in {RESULTS}, the results the docs are generated from: writing there would replace them"
    if not os.path.isfile(target):
        return None
    try:
        with open(target, "rb") as handle:
            head = handle.read(1024)
            if head.startswith(b"PK\x03\x04"):  # torch.save's zip format: its first entry ends in data.pkl
                name = head[30 : 30 + int.from_bytes(head[26:28], "little")]
                return CHECKPOINT_CONTENT if name.endswith(b"data.pkl") else None
            if head[:1] == b"\x80" and b"\x8a\n" + TORCH_MAGIC in head[:32]:  # any pickle protocol's framing
                return CHECKPOINT_CONTENT
            # a table row's results: a JSON object with "row" and "recipe"
            if head.lstrip()[:1] != b"{" or os.fstat(handle.fileno()).st_size > 1 << 24:
                return None
            record = json.loads(head + handle.read())
    except (OSError, ValueError):
        return None
    if isinstance(record, dict) and "row" in record and "recipe" in record:
        return "a table row's results (benchmarks/table.py and the docs read it): writing it would destroy it"
    return None


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
