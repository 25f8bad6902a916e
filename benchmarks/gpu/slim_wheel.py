#!/usr/bin/env python
"""Shrink fairseq-fixed's binary wheel to what the plugin imports, in place, for carrying to a GPU machine.

    python -m benchmarks.gpu.slim_wheel .whl/fairseq_fixed-0.12.3.1-cp312-*.whl    # 20 MB -> ~2.5 MB

Left out: fairseq/examples/ (sample audio, notebooks, research code; fairseq imports it only for
speech tasks), and the C++ extensions libnat (Levenshtein / insertion transformers), libbase (BASE
layers) and alignment_train_cpu_binding (alignment training), each imported lazily by the one model
that uses it; none of them by a word or character LM of this plugin. The wheel keeps its name, and
its RECORD drops the lines of what was left out. A wheel already slimmed is left as it is.
"""
import os
import re
import sys
import tempfile
import zipfile

LEAVE_OUT = re.compile(r"^(fairseq/examples/|fairseq/libnat[.\w-]*\.so$|fairseq/libbase[.\w-]*\.so$|"
                       r"alignment_train_cpu_binding[.\w-]*\.so$)")


def slim(path):
    with zipfile.ZipFile(path) as wheel:
        entries = wheel.infolist()
        dropped = [e.filename for e in entries if LEAVE_OUT.match(e.filename)]
        if not dropped:
            return 0
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), suffix=".whl.tmp")
        os.close(fd)
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as out:
            for entry in entries:
                if LEAVE_OUT.match(entry.filename):
                    continue
                data = wheel.read(entry.filename)
                if entry.filename.endswith(".dist-info/RECORD"):
                    gone = set(dropped)
                    data = "".join(line for line in data.decode().splitlines(keepends=True)
                                   if line.split(",", 1)[0] not in gone).encode()
                out.writestr(entry, data)
    before = os.path.getsize(path)
    os.replace(tmp, path)
    print(f"{os.path.basename(path)}: {before / 2**20:.1f} MB -> {os.path.getsize(path) / 2**20:.1f} MB "
          f"({len(dropped)} files left out)")
    return len(dropped)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for wheel_path in sys.argv[1:]:
        slim(wheel_path)
