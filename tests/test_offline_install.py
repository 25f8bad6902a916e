"""The offline install route: ``scripts/install.sh --wheelhouse DIR`` with no package index.

The full route builds fairseq-fixed into a fresh virtual environment (a few minutes), so it
runs only when a wheelhouse is given: ``ALM_WHEELHOUSE=DIR`` (made by
``scripts/make_wheelhouse.sh --dest DIR``). The environment starts as a GPU node does: a torch
already installed (this interpreter's, made visible to the venv) and cython; no index.
"""
import os
import re
import subprocess
import sysconfig
import venv

import pytest

from conftest import ROOT, SAMPLE_DATA

WHEELHOUSE = os.environ.get("ALM_WHEELHOUSE")
# torch and what it imports, lent to the venv from this interpreter (the node's "installed torch")
TORCH_PACKAGES = ["torch", "torchgen", "functorch", "typing_extensions.py", "sympy", "mpmath", "networkx",
                  "jinja2", "markupsafe", "filelock", "fsspec"]


def offline_env(**extra):
    """No index can be reached: pip's configuration is dropped and its index points nowhere."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    return {**env, "PIP_CONFIG_FILE": os.devnull, "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1", **extra}


def test_install_refuses_a_folder_that_is_not_a_wheelhouse(tmp_path):
    proc = subprocess.run(["bash", "scripts/install.sh", "--wheelhouse", str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, env=offline_env(PYTHON="false"))
    assert proc.returncode == 2
    assert f"{tmp_path} is not a wheelhouse (no fairseq-fixed in it)" in proc.stderr
    assert "make_wheelhouse.sh --python-version X.Y" in proc.stderr


def test_make_wheelhouse_checks_the_python_version():
    proc = subprocess.run(["bash", "scripts/make_wheelhouse.sh", "--python-version", "3"], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "give X.Y, e.g. 3.12" in proc.stderr


@pytest.mark.skipif(not WHEELHOUSE, reason="set ALM_WHEELHOUSE=DIR (bash scripts/make_wheelhouse.sh --dest DIR) "
                                          "to test the offline install; it takes a few minutes")
def test_offline_install_into_a_fresh_environment_trains(tmp_path):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    lent = tmp_path / "node_torch"
    lent.mkdir()
    here = sysconfig.get_paths()["purelib"]
    for name in TORCH_PACKAGES:
        if os.path.exists(os.path.join(here, name)):
            os.symlink(os.path.join(here, name), lent / name)
    with open(os.path.join(site, "node_torch.pth"), "w") as f:
        f.write(str(lent) + "\n")
    env = offline_env(PYTHON=str(python))
    # the node's cython, from the wheelhouse (the index is unreachable)
    subprocess.run([python, "-m", "pip", "install", "-q", "--no-index", "--find-links", WHEELHOUSE, "cython"],
                   check=True, env=env)

    proc = subprocess.run(["bash", "scripts/install.sh", "--wheelhouse", WHEELHOUSE], cwd=ROOT,
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
    assert "alm_plugin ready: fairseq 0.12.3.1" in proc.stdout
    # numpy 1.x or 2.x, whichever the wheelhouse holds; fairseq imports scikit-learn at start-up
    versions = subprocess.run([python, "-c", "import numpy, sklearn, torch; print(numpy.__version__, torch.__file__)"],
                              capture_output=True, text=True, check=True, env=env).stdout.split()
    assert versions[0][0] in "12" and versions[1].startswith(str(lent))  # the node's torch was kept

    train = subprocess.run(
        [env_dir / "bin" / "fairseq-train", SAMPLE_DATA, "--user-dir", "alm_plugin", "--task",
         "sentence_language_modeling", "--arch", "attentive_lm_small", "--cpu", "--max-update", "3",
         "--batch-size", "8", "--optimizer", "adam", "--lr", "0.001", "--save-dir", tmp_path / "ckpt",
         "--no-save", "--disable-validation", "--no-progress-bar"],
        cwd=ROOT, capture_output=True, text=True, env=env)
    assert train.returncode == 0, train.stderr[-3000:]
    assert re.search(r"num_updates 3\b", train.stdout + train.stderr) and "done training" in train.stdout + train.stderr
