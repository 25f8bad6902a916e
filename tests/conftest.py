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


DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def pytest_configure(config):
    config.addinivalue_line("markers", "cuda: the test runs on the GPU (pytest -m cuda runs only those)")


def pytest_generate_tests(metafunc):
    """A test that takes ``device`` runs on the CPU and, where torch sees one, on the GPU too
    (marked ``cuda``): the same assertions, no skipped copies on a CPU-only machine."""
    if "device" in metafunc.fixturenames:
        metafunc.parametrize("device", [pytest.param(d, marks=[pytest.mark.cuda] if d == "cuda" else [])
                                        for d in DEVICES])


@pytest.fixture(autouse=True)
def _full_fp32_on_the_gpu():
    """cuDNN's LSTMs may use TF32 (10-bit mantissa) by default: compare in full float32."""
    if torch.cuda.is_available():
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False


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
