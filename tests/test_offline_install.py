"""The offline install route: ``scripts/install.sh --wheelhouse DIR`` with no package index.

The full route builds fairseq-fixed into a fresh virtual environment (a few minutes), so it
runs only when a wheelhouse is given: ``ALM_WHEELHOUSE=DIR`` (made by
``scripts/make_wheelhouse.sh --dest DIR``). The environment starts as a GPU node does: a torch
already installed (this interpreter's, made visible to the venv) and cython; no index.

Its last step, this package's editable install, is tested on its own (seconds, no torch) with
the GPU image's build tools, setuptools 84.2.1 and wheel 0.48.0: their wheels are
downloaded once a session where an index is reachable.
"""

import ensurepip
import glob
import os
import re
import shlex
import subprocess
import sys
import sysconfig
import venv

import pip
import pytest
from conftest import ROOT, SAMPLE_DATA

WHEELHOUSE = os.environ.get("ALM_WHEELHOUSE")
# torch and what it imports, lent to the venv from this interpreter (the node's "installed torch")
TORCH_PACKAGES = [
    "torch",
    "torchgen",
    "functorch",
    "typing_extensions.py",
    "sympy",
    "mpmath",
    "networkx",
    "jinja2",
    "markupsafe",
    "filelock",
    "fsspec",
]


def offline_env(**extra):
    """No index can be reached: pip's configuration is dropped and its index points nowhere."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    return {
        **env,
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        **extra,
    }


def venv_site(python):
    return subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def bare_venv(env_dir, *wheels):
    """A new virtual environment holding only this interpreter's pip (lent: ensurepip takes
    ~8 s of CPU) and the given wheel files, installed offline; its python."""
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    site = venv_site(python)
    os.symlink(os.path.dirname(pip.__file__), os.path.join(site, "pip"))
    if wheels:
        subprocess.run(
            [python, "-m", "pip", "install", "-q", "--no-index", "--no-deps", *wheels],
            check=True,
            env=offline_env(),
            capture_output=True,
        )
    return python


# the GPU image's build tools: `setup.py develop` there runs a pip of its own
GPU_IMAGE_BUILD_TOOLS = ["setuptools==84.2.1", "wheel==0.48.0"]


@pytest.fixture(scope="module")
def build_tools_wheelhouse(tmp_path_factory):
    """The wheels of GPU_IMAGE_BUILD_TOOLS and their dependencies, from the index once."""
    dest = tmp_path_factory.mktemp("build_tools")
    try:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--only-binary=:all:",
                "--dest",
                dest,
                *GPU_IMAGE_BUILD_TOOLS,
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
    except subprocess.TimeoutExpired:
        proc = None
    if proc is None or proc.returncode != 0:
        why = "timed out" if proc is None else (proc.stderr.strip().splitlines() or ["failed"])[-1]
        pytest.skip(
            f"needs a package index once, to download {' and '.join(GPU_IMAGE_BUILD_TOOLS)} "
            f"(the GPU image's build tools): pip download {why}"
        )
    return dest


def install_sh_editable_install():
    """install.sh's editable install of this package: the arguments after ``"${PIP[@]}"``."""
    with open(os.path.join(ROOT, "scripts", "install.sh"), encoding="utf-8") as f:
        lines = [line.strip() for line in f if re.match(r'\s*"\$\{PIP\[@\]\}" .*-e \.', line)]
    assert len(lines) == 1, f"install.sh's editable install not found (or found twice): {lines}"
    args = shlex.split(lines[0].split("||")[0])[1:]
    assert args[-2:] == ["-e", "."], args
    return args


def test_editable_install_offline_with_the_gpu_images_setuptools_and_wheel(tmp_path, build_tools_wheelhouse):
    """install.sh's last step, offline, with setuptools 84.2.1 and wheel 0.48.0 installed (the GPU
    image's): without pyproject.toml pip ran `setup.py develop`, which this setuptools hands to a
    `pip install -e . --use-pep517` of its own without --no-build-isolation, so that pip looked for
    setuptools on an index (`No matching distribution found for setuptools>=40.8.0`)."""
    python = bare_venv(tmp_path / "venv", *sorted(build_tools_wheelhouse.glob("*.whl")))
    env = offline_env()
    offline = ["--no-index", "--find-links", str(build_tools_wheelhouse)]
    # install.sh's "${PIP[@]}" offline: pip install -q --no-index --find-links DIR --no-build-isolation
    proc = subprocess.run(
        [python, "-m", "pip", "install", "-q", *offline, "--no-build-isolation", *install_sh_editable_install()],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    # the console scripts are installed, and alm_plugin is imported from this checkout
    scripts = sorted(os.listdir(tmp_path / "venv" / "bin"))
    for script in ["alm-score", "alm-rescore", "alm-cache-grid", "alm-cache-posterior", "alm-plot-attention"]:
        assert script in scripts, f"{script} not installed: {scripts}"
    origin = subprocess.run(
        [python, "-c", "import importlib.util; print(importlib.util.find_spec('alm_plugin').origin)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        env=env,
    ).stdout.strip()
    assert origin == os.path.join(ROOT, "alm_plugin", "__init__.py")


def test_make_wheelhouse_says_in_one_line_that_this_python_cannot_build_wheels(tmp_path):
    """A Python without `wheel` (a venv as ensurepip makes it: on Python <= 3.11 with setuptools
    65, which builds no wheel without it; on 3.12 with no setuptools) is refused before anything
    is downloaded, not after minutes of downloads when preparing antlr4's sdist fails with
    `invalid command 'bdist_wheel'`."""
    python = bare_venv(
        tmp_path / "venv", *glob.glob(os.path.join(os.path.dirname(ensurepip.__file__), "_bundled", "setuptools-*.whl"))
    )
    env = offline_env(PYTHON=str(python))
    can_build = (
        subprocess.run(
            [python, "-c", "from setuptools.dist import Distribution; Distribution().get_command_class('bdist_wheel')"],
            capture_output=True,
            env=env,
        ).returncode
        == 0
    )
    if can_build:
        pytest.skip("this Python's venv has a setuptools that builds wheels itself: no Python without one to test")
    proc = subprocess.run(
        ["bash", "scripts/make_wheelhouse.sh", "--dest", tmp_path / "wheelhouse"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr[-3000:]
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith(f"make_wheelhouse.sh: {python} cannot build wheels from sdists")
    assert re.search(rf"run {re.escape(str(python))} -m pip install (setuptools )?wheel, then again$", proc.stderr)
    assert not (tmp_path / "wheelhouse").exists()


def test_install_refuses_a_folder_that_is_not_a_wheelhouse(tmp_path):
    proc = subprocess.run(
        ["bash", "scripts/install.sh", "--wheelhouse", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=offline_env(PYTHON="false"),
    )
    assert proc.returncode == 2
    assert f"{tmp_path} is not a wheelhouse (no fairseq-fixed in it)" in proc.stderr
    assert "make_wheelhouse.sh --python-version X.Y" in proc.stderr


def test_make_wheelhouse_checks_the_python_version():
    proc = subprocess.run(
        ["bash", "scripts/make_wheelhouse.sh", "--python-version", "3"], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 2 and "give X.Y, e.g. 3.12" in proc.stderr


@pytest.mark.skipif(
    not WHEELHOUSE,
    reason="set ALM_WHEELHOUSE=DIR (bash scripts/make_wheelhouse.sh --dest DIR) "
    "to test the offline install; it takes a few minutes",
)
def test_offline_install_into_a_fresh_environment_trains(tmp_path):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    site = venv_site(python)
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
    subprocess.run(
        [python, "-m", "pip", "install", "-q", "--no-index", "--find-links", WHEELHOUSE, "cython"], check=True, env=env
    )

    proc = subprocess.run(
        ["bash", "scripts/install.sh", "--wheelhouse", WHEELHOUSE], cwd=ROOT, capture_output=True, text=True, env=env
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
    assert "alm_plugin ready: fairseq 0.12.3.1" in proc.stdout
    # numpy 1.x or 2.x, whichever the wheelhouse holds; fairseq imports scikit-learn at start-up
    versions = subprocess.run(
        [python, "-c", "import numpy, sklearn, torch; print(numpy.__version__, torch.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    ).stdout.split()
    assert versions[0][0] in "12" and versions[1].startswith(str(lent))  # the node's torch was kept

    train = subprocess.run(
        [
            env_dir / "bin" / "fairseq-train",
            SAMPLE_DATA,
            "--user-dir",
            "alm_plugin",
            "--task",
            "sentence_language_modeling",
            "--arch",
            "attentive_lm_small",
            "--cpu",
            "--max-update",
            "3",
            "--batch-size",
            "8",
            "--optimizer",
            "adam",
            "--lr",
            "0.001",
            "--save-dir",
            tmp_path / "ckpt",
            "--no-save",
            "--disable-validation",
            "--no-progress-bar",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
    )
    assert train.returncode == 0, train.stderr[-3000:]
    assert re.search(r"num_updates 3\b", train.stdout + train.stderr) and "done training" in train.stdout + train.stderr
