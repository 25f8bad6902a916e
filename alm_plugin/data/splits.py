"""A data-bin folder as our three tasks read it: its dictionary and its binarised splits checked before
fairseq opens them, so that a broken file is refused in one line that names it and says how to rebuild it.
``loaded_for_training`` tells a task's ``load_dataset`` whether the split is trained on or scored."""

import itertools
import os
import re
import struct

import numpy as np
from fairseq import utils
from fairseq.data import data_utils
from fairseq.data.indexed_dataset import data_file_path, index_file_path

from ..errors import CorruptDataError, MissingDataError

REBUILD = (
    "rebuild the data directory with fairseq-preprocess --only-source (see examples/language_model/prepare_lm_data.py)"
)
MMAP_MAGIC = b"MMIDIDX\x00\x00"  # fairseq's MMapIndexedDataset.Index
LEGACY_MAGIC = b"TNTIDX\x00\x00"  # fairseq's older IndexedDataset (--dataset-impl cached / lazy): its header checked
HEADER = len(MMAP_MAGIC) + 8 + 1 + 8  # magic, version, dtype code, number of lines
DTYPES = {
    1: np.uint8,
    2: np.int8,
    3: np.int16,
    4: np.int32,
    5: np.int64,
    6: np.float64,
    7: np.double,
    8: np.uint16,
    9: np.uint32,
    10: np.uint64,
}


def check_dictionary(path: str) -> None:
    """Refuse a ``dict.txt`` fairseq's ``Dictionary.load`` would fail on, naming its line."""
    if os.path.isdir(path):
        raise CorruptDataError(f"{path} is a directory, not a dictionary: {REBUILD}")
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise CorruptDataError(
            f"{path}:{line}: not UTF-8 (byte 0x{data[error.start]:02x}): the dictionary is corrupt; {REBUILD}"
        ) from None
    seen = {word: None for word in ("<s>", "<pad>", "</s>", "<unk>")}  # fairseq's own, before the file's
    lines = re.split(r"\r\n|\r|\n", text)  # as fairseq's readlines() of a file opened in text mode
    for number, line in enumerate(lines[:-1] if lines[-1] == "" else lines, 1):
        fields = line.rstrip().rsplit(" ", 1)
        overwrite = len(fields) == 2 and fields[1] == "#fairseq:overwrite"
        if overwrite:
            fields = fields[0].rsplit(" ", 1)
        if len(fields) != 2 or not _is_int(fields[1]):
            raise CorruptDataError(
                f"{path}:{number}: {line[:60]!r} is not a dictionary line ('<word> <count>'): "
                f"the dictionary is corrupt; {REBUILD}"
            )
        word = fields[0]
        if word in seen and not overwrite:
            where = "fairseq's own symbol" if seen[word] is None else f"already on line {seen[word]}"
            raise CorruptDataError(
                f"{path}:{number}: the word {word!r} is listed twice ({where}): the dictionary is corrupt; {REBUILD}"
            )
        seen[word] = number


def _is_int(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


def check_split_files(prefix: str, dictionary=None) -> None:
    """Refuse ``prefix``.idx / .bin (fairseq's mmap format) that do not hold what the index says;
    an index in another format, or a split absent, is left to fairseq (and ``load_split``)."""
    index, data = index_file_path(prefix), data_file_path(prefix)
    folder, split = os.path.dirname(index), os.path.basename(prefix)
    if not os.path.isfile(index):
        return
    if not os.path.isfile(data):
        raise CorruptDataError(f"{index} has no {split}.bin beside it: the split is incomplete; {REBUILD}")
    with open(index, "rb") as f:
        raw = f.read()
    corrupt = f"the split is corrupt; {REBUILD}"
    if raw.startswith(LEGACY_MAGIC):
        check_legacy_index(index, raw, corrupt)
        return
    if not raw.startswith(MMAP_MAGIC):
        raise CorruptDataError(
            f"{index} is not a fairseq index (it does not begin with MMIDIDX, as fairseq-preprocess "
            f"writes them): {corrupt}"
        )
    if len(raw) < HEADER:
        raise CorruptDataError(f"{index} is truncated ({len(raw)} bytes, shorter than an index's header): {corrupt}")
    (version,) = struct.unpack("<Q", raw[9:17])
    code, count = raw[17], struct.unpack("<Q", raw[18:26])[0]
    if version != 1 or code not in DTYPES:
        raise CorruptDataError(
            f"{index}: an index header of version {version}, type code {code} (fairseq writes "
            f"version 1, codes 1-10): {corrupt}"
        )
    itemsize = np.dtype(DTYPES[code]).itemsize
    expected = HEADER + 12 * count
    if len(raw) != expected:
        raise CorruptDataError(
            f"{index} declares {count:,} lines, whose sizes and offsets take {expected:,} bytes, "
            f"but holds {len(raw):,}: it is {'truncated' if len(raw) < expected else 'corrupt'}; "
            f"{REBUILD}"
        )
    sizes = np.frombuffer(raw, dtype=np.int32, count=count, offset=HEADER).astype(np.int64)
    pointers = np.frombuffer(raw, dtype=np.int64, count=count, offset=HEADER + 4 * count)
    data_bytes = os.path.getsize(data)
    ends = pointers + sizes * itemsize
    negative = np.flatnonzero((sizes < 0) | (pointers < 0))
    if len(negative):
        line = int(negative[0])
        raise CorruptDataError(
            f"{index} says line {line + 1:,} holds {int(sizes[line]):,} tokens at byte "
            f"{int(pointers[line]):,}: a negative size or offset; {corrupt}"
        )
    wrong = np.flatnonzero(ends > data_bytes)
    if len(wrong):
        line = int(wrong[0])
        raise CorruptDataError(
            f"{index} says line {line + 1:,} holds {int(sizes[line]):,} tokens at byte "
            f"{int(pointers[line]):,}, beyond the {data_bytes:,} bytes of {split}.bin: the index "
            f"does not match the data (truncated, or from another binarisation); {REBUILD}"
        )
    starts = np.concatenate([[0], np.cumsum(sizes[:-1]) * itemsize]) if count else pointers
    if not np.array_equal(pointers, starts):
        line = int(np.flatnonzero(pointers != starts)[0])
        raise CorruptDataError(
            f"{index}: line {line + 1:,} starts at byte {int(pointers[line]):,}, not where the "
            f"lines before it end ({int(starts[line]):,}): {corrupt}"
        )
    total = int(sizes.sum()) * itemsize
    if data_bytes != total:
        raise CorruptDataError(
            f"{data} holds {data_bytes:,} bytes and {index} lists {total // itemsize:,} tokens "
            f"({total:,} bytes): the two files do not match ({split}.bin "
            f"{'truncated' if data_bytes < total else 'longer than its index'}, or the files come "
            f"from different binarisations); {REBUILD}"
        )
    if dictionary is not None and total:
        ids = np.memmap(data, dtype=DTYPES[code], mode="r")
        largest = int(ids.max())
        if largest >= len(dictionary):
            raise CorruptDataError(
                f"{data} holds the word id {largest:,}, beyond the {len(dictionary):,} entries of "
                f"{os.path.join(folder, 'dict.txt')}: the split was binarised with another "
                f"dictionary; {REBUILD}"
            )
        never = [i for i in (dictionary.bos(), dictionary.pad()) if 0 <= i < len(dictionary)]
        if never and int(ids.min()) <= max(never):
            found = np.flatnonzero(np.isin(ids, never))
            if len(found):  # fairseq-preprocess never writes <s> or <pad> into a split: scored, they skew it
                at = int(found[0])
                line = int(np.searchsorted(np.cumsum(sizes), at, side="right")) + 1
                raise CorruptDataError(
                    f"{data}: line {line:,} holds the id {int(ids[at])} ({dictionary[int(ids[at])]}), which "
                    f"fairseq-preprocess never writes into a split: {corrupt}"
                )


def check_legacy_index(index: str, raw: bytes, corrupt: str) -> None:
    """An index of fairseq's older format (``TNTIDX``: version, type code, element size, number of
    lines, of sizes, then the offsets and sizes) whose header and length agree, as fairseq's
    ``IndexedDataset.read_index`` asserts them (a bare ``AssertionError``); its data is left to fairseq."""
    header = len(LEGACY_MAGIC) + 8 + 16 + 16
    if len(raw) < header:
        raise CorruptDataError(f"{index} is truncated ({len(raw)} bytes, shorter than an index's header): {corrupt}")
    version, code, element_size, count, sizes = struct.unpack("<QQQQQ", raw[len(LEGACY_MAGIC) : header])
    if version != 1 or code not in DTYPES or element_size != np.dtype(DTYPES[code]).itemsize:
        raise CorruptDataError(
            f"{index}: an index header (TNTIDX) of version {version}, type code {code}, element size "
            f"{element_size} (fairseq writes version 1, codes 1-10 and their sizes): {corrupt}"
        )
    expected = header + 8 * (2 * (count + 1) + sizes)
    if len(raw) != expected:
        raise CorruptDataError(
            f"{index} declares {count:,} lines and {sizes:,} sizes, which take {expected:,} bytes, but holds "
            f"{len(raw):,}: {corrupt}"
        )


def load_split(data: str, split: str, dictionary, epoch: int = 1, dataset_impl=None, combine=False):
    """``split`` of the ``epoch``-th folder of ``data`` (fairseq's ``a:b:c`` shards) as fairseq's
    indexed dataset of lines, its files checked first (``check_split_files``); a missing split, or an
    empty ``.bin`` (a text of no line), refused by name."""
    paths = utils.split_paths(data)
    split_path = os.path.join(paths[(epoch - 1) % len(paths)], split)
    folder, bin_file = os.path.dirname(split_path), data_file_path(split_path)
    for k in itertools.count():  # the files fairseq reads: split, and with combine split1, split2, ...
        prefix = split_path + (str(k) if k else "")
        if k and not os.path.isfile(index_file_path(prefix)):
            break
        check_split_files(prefix, dictionary)
        if not combine:
            break
    # fairseq's MMapIndexedDataset cannot map an empty file, and its error names no split
    if os.path.isfile(index_file_path(split_path)) and os.path.isfile(bin_file) and os.path.getsize(bin_file) == 0:
        raise MissingDataError(
            f"the '{split}' split in {folder} holds no line ({split}.bin is empty): binarise a "
            "text of at least one line with fairseq-preprocess --only-source, or name another split"
        )
    lines = data_utils.load_indexed_dataset(split_path, dictionary, dataset_impl, combine=combine)
    if lines is None:
        raise MissingDataError(
            f"no '{split}' data in {folder}: binarise it with fairseq-preprocess --only-source "
            "(see examples/language_model/prepare_lm_data.py)"
        )
    return lines


def loaded_for_training(load_dataset_kwargs) -> bool:
    """Whether fairseq's trainer loads a split to train on it: it alone passes ``data_selector`` and
    ``tpu`` to ``load_dataset`` (fairseq-eval-lm --gen-subset train or fairseq-validate --valid-subset
    train load the same split to score it, and must read it as any split scored)."""
    return (
        bool(load_dataset_kwargs.get("as_training"))
        or "tpu" in load_dataset_kwargs
        or "data_selector" in load_dataset_kwargs
    )
