import os
import sys

import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import alm_plugin  # noqa: E402,F401  (registers the plugin with fairseq)
from fairseq.data import Dictionary  # noqa: E402

SAMPLE_DATA = os.path.join(ROOT, "data-bin", "wikitext-2-sample")
SHARED_DATA = os.path.join(ROOT, "..", "shared", "data")


@pytest.fixture
def dictionary():
    d = Dictionary()
    for word in "the cat sat on a mat and dog ran far away".split():
        d.add_symbol(word)
    return d


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def random_tokens(dictionary, bsz, length, generator=None):
    return torch.randint(dictionary.nspecial, len(dictionary), (bsz, length), generator=generator)


def needs_shared_data(*parts):
    path = os.path.join(SHARED_DATA, *parts)
    return pytest.mark.skipif(not os.path.exists(path),
                              reason=f"needs the real corpora in ../shared/data ({path} is absent)")
