"""A binarised split of a data-bin folder, loaded once for both word-level tasks, with the two
ways it can be absent refused by name."""
import os

from fairseq import utils
from fairseq.data import data_utils
from fairseq.data.indexed_dataset import data_file_path, index_file_path

from ..errors import MissingDataError


def load_split(data: str, split: str, dictionary, epoch: int = 1, dataset_impl=None, combine=False):
    """``split`` of the ``epoch``-th folder of ``data`` (fairseq's ``a:b:c`` shards) as fairseq's
    indexed dataset of lines. A split binarised from a text of no line has an empty ``.bin``,
    which fairseq's ``MMapIndexedDataset`` cannot map (``ValueError: cannot mmap an empty file``,
    naming no split, then an ``Exception ignored`` traceback from its ``__del__``): refused by name
    before it is opened."""
    paths = utils.split_paths(data)
    split_path = os.path.join(paths[(epoch - 1) % len(paths)], split)
    folder, bin_file = os.path.dirname(split_path), data_file_path(split_path)
    if os.path.isfile(index_file_path(split_path)) and os.path.isfile(bin_file) and os.path.getsize(bin_file) == 0:
        raise MissingDataError(f"the '{split}' split in {folder} holds no line ({split}.bin is empty): binarise a "
                               "text of at least one line with fairseq-preprocess --only-source, or name another split")
    lines = data_utils.load_indexed_dataset(split_path, dictionary, dataset_impl, combine=combine)
    if lines is None:
        raise MissingDataError(f"no '{split}' data in {folder}: binarise it with fairseq-preprocess --only-source "
                               "(see examples/language_model/prepare_lm_data.py)")
    return lines
