"""Shrink fairseq-fixed's binary wheel in place to what the plugin imports, for carrying to a GPU machine.

    python -m benchmarks.gpu.slim_wheel .whl/fairseq_fixed-0.12.3.1-cp312-*.whl

Left out: fairseq/examples/ (imported only for speech tasks) and the C++ extensions libnat, libbase
and alignment_train_cpu_binding, each imported lazily by the one model (none a word or character LM)
that uses it. The wheel keeps its name; its RECORD drops their lines. A slimmed wheel is left as it is.
"""

import os
import re
import sys
import zipfile

LEAVE_OUT = re.compile(
    r"^(fairseq/examples/|fairseq/libnat[.\w-]*\.so$|fairseq/libbase[.\w-]*\.so$|"
    r"alignment_train_cpu_binding[.\w-]*\.so$)"
)


def slim(path):
    """Rewrites the wheel at ``path`` without what ``LEAVE_OUT`` matches; returns how many files it left out."""
    with zipfile.ZipFile(path) as wheel:
        entries = wheel.infolist()
        dropped = {e.filename for e in entries if LEAVE_OUT.match(e.filename)}
        if not dropped:
            return 0
        with zipfile.ZipFile(f"{path}.tmp", "w", zipfile.ZIP_DEFLATED) as out:
            for entry in entries:
                if entry.filename in dropped:
                    continue
                data = wheel.read(entry.filename)
                if entry.filename.endswith(".dist-info/RECORD"):
                    data = "".join(
                        line for line in data.decode().splitlines(keepends=True) if line.split(",", 1)[0] not in dropped
                    ).encode()
                out.writestr(entry, data)
    before = os.path.getsize(path)
    os.replace(f"{path}.tmp", path)  # whole or not at all
    print(
        f"{os.path.basename(path)}: {before / 2**20:.1f} MB -> {os.path.getsize(path) / 2**20:.1f} MB "
        f"({len(dropped)} files left out)"
    )
    return len(dropped)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for wheel_path in sys.argv[1:]:
        slim(wheel_path)
