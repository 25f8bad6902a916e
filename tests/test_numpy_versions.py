"""fairseq's data code under numpy 2, and installs that keep an installed numpy 2.

numpy 2.0 removed ``numpy.compat``, which fairseq 0.12 reads in TokenBlockDataset
(``--sample-break-mode eos``) and in LanguagePairDataset's bucketing; numpy 2.4 removed
``percentile(interpolation=)``, which that bucketing reads first. alm_plugin.mends.numpy_compat gives
both back. numpy 2 is simulated on whatever numpy is installed: ``numpy.compat`` removed (the
attribute, and ``import numpy.compat``) and, for 2.4, a ``numpy.percentile`` without the keyword.
"""

import os
import re
import subprocess
import sys

import numpy
import pytest
import torch
from conftest import ROOT
from fairseq.data import LanguagePairDataset, TokenBlockDataset, bucket_pad_length_dataset, data_utils

from alm_plugin.errors import OptionError
from alm_plugin.mends import numpy_compat

SENTENCES = [[4, 5, 2], [6, 2], [7, 8, 9, 10, 2], [11, 2]]
REAL_PERCENTILE = numpy.percentile
FAIRSEQ_GET_BUCKETS = getattr(data_utils.get_buckets, "fairseq_original", data_utils.get_buckets)


def percentile_of_numpy_2_4(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False):
    return REAL_PERCENTILE(a, q, axis=axis, out=out, overwrite_input=overwrite_input, method=method, keepdims=keepdims)


@pytest.fixture(params=["2.0", "2.4"])
def numpy2(request, monkeypatch):
    """numpy as numpy 2.0 (no numpy.compat) or 2.4 (nor percentile's interpolation=) has it, and
    fairseq as it is without the shim (all restored after the test); yields the version."""
    monkeypatch.delattr(numpy, "compat", raising=False)
    monkeypatch.setitem(sys.modules, "numpy.compat", None)  # `import numpy.compat` fails too
    if request.param == "2.4":
        monkeypatch.setattr(numpy, "percentile", percentile_of_numpy_2_4)
        for module in (data_utils, bucket_pad_length_dataset):
            monkeypatch.setattr(module, "get_buckets", FAIRSEQ_GET_BUCKETS)
    assert not hasattr(numpy, "compat")
    return request.param


def token_blocks():
    """fairseq's language_modeling data with --sample-break-mode eos: one block per sentence."""
    dataset = [torch.tensor(s) for s in SENTENCES]
    blocks = TokenBlockDataset(dataset, [len(s) for s in SENTENCES], block_size=None, pad=1, eos=2, break_mode="eos")
    return blocks


def language_pair_batches(dictionary):
    """fairseq's translation data with --num-batch-buckets: batched and collated."""
    src = [torch.tensor(s) for s in SENTENCES]
    tgt = [torch.tensor(s[::-1][1:] + [2]) for s in SENTENCES]
    pairs = LanguagePairDataset(
        src, [len(s) for s in src], dictionary, tgt, [len(t) for t in tgt], dictionary, shuffle=False, num_buckets=2
    )
    batches = pairs.batch_by_size(pairs.ordered_indices(), max_tokens=16)
    return pairs, [pairs.collater([pairs[i] for i in batch]) for batch in batches]


def test_without_the_shim_fairseq_fails_on_numpy_2(numpy2, dictionary):
    with pytest.raises(AttributeError, match="has no attribute 'compat'"):
        token_blocks()
    if numpy2 == "2.0":
        with pytest.raises(AttributeError, match="has no attribute 'compat'"):
            language_pair_batches(dictionary)
    else:
        with pytest.raises(TypeError, match="unexpected keyword argument 'interpolation'"):
            language_pair_batches(dictionary)


def test_the_shim_mends_fairseq_on_numpy_2(numpy2, dictionary):
    mended = numpy_compat.install()  # what `import alm_plugin` runs
    assert mended[0] == "numpy.compat.long" and numpy.compat.long is numpy.int64
    assert ("fairseq.data.data_utils.get_buckets" in mended) == (numpy2 == "2.4")

    blocks = token_blocks()
    assert [blocks[i].tolist() for i in range(len(blocks))] == SENTENCES
    assert blocks.block_to_dataset_index.tolist() == [[i, 0, i] for i in range(len(SENTENCES))]

    pairs, batches = language_pair_batches(dictionary)
    assert pairs.bucketed_num_tokens.dtype == numpy.int64
    assert pairs.src.buckets.tolist() == [2, 5]  # the lower percentile, as numpy 1's interpolation="lower"
    assert sorted(i for batch in batches for i in batch["id"].tolist()) == list(range(len(SENTENCES)))
    assert sum(batch["ntokens"] for batch in batches) == sum(len(s) for s in SENTENCES)


def test_the_shim_leaves_a_numpy_that_has_them_alone():
    before = numpy.compat, data_utils.get_buckets  # numpy's own, or the shim's where it set them
    assert numpy_compat.install() == []
    assert (numpy.compat, data_utils.get_buckets) == before


def test_the_hubs_batches_of_several_sentences_are_measured(sample_task):
    """The hub scores through build_dataset_for_inference, whose sizes are a list of one array:
    int(max(sizes)) took that array for a number (numpy 2: a TypeError for one sentence too)."""
    tokens = [torch.tensor([4, 5, 2]), torch.tensor([6, 7, 8, 9, 2]), torch.tensor([10, 2])]
    dataset = sample_task.build_dataset_for_inference(tokens, [len(t) for t in tokens])
    batches = sample_task.get_batch_iterator(dataset, max_tokens=100, max_sentences=8)
    assert sorted(i for batch in batches.next_epoch_itr(shuffle=False) for i in batch["id"].tolist()) == [0, 1, 2]
    with pytest.raises(OptionError, match=r"longest sample of this split \(5 tokens"):
        sample_task.get_batch_iterator(dataset, max_tokens=4, max_sentences=8)


def test_with_user_dir_alm_plugin_fairseq_runs_on_numpy_2():
    """A fresh process (from the repository root, as a user runs fairseq there): fairseq fails while numpy
    has no compat, then works once alm_plugin is imported."""
    script = """
import sys, numpy
numpy.__dict__.pop("compat", None); sys.modules["numpy.compat"] = None  # numpy 2
from fairseq.data import TokenBlockDataset
import torch
def blocks():
    return TokenBlockDataset([torch.tensor([4, 2]), torch.tensor([5, 6, 2])], [2, 3], block_size=None, pad=1,
                             eos=2, break_mode="eos")
try:
    blocks()
    print("without: ran")
except AttributeError as error:
    print("without:", error)
import alm_plugin
b = blocks()
print("with:", [b[i].tolist() for i in range(len(b))])
"""
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "without: module 'numpy' has no attribute 'compat'" in proc.stdout
    assert "with: [[4, 2], [5, 6, 2]]" in proc.stdout


@pytest.mark.parametrize("path", ["scripts/install.sh", "scripts/requirements.txt", "setup.py"])
def test_installs_pin_no_numpy_1(path):
    """An installed numpy 2 (and the scipy/scikit-learn built on it) is kept: no numpy<2 pin."""
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        lines = f.read().splitlines()
    pins = [
        line
        for line in lines
        if not line.lstrip().startswith("#") and re.search(r"numpy\s*(<\s*2|<=\s*1|~=\s*1|==\s*1)", line)
    ]
    assert not pins, f"{path} pins numpy below 2: {pins}"
