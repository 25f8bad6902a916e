"""Form is the formatter's and the linter's: ruff, at the version scripts/requirements.txt pins,
with the settings in pyproject.toml (``ruff format --check`` and ``ruff check`` over the tree)."""

import re
import subprocess
import sys

import pytest

from tests.conftest import ROOT


def ruff(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "ruff", *args], cwd=cwd, capture_output=True, text=True)


def pinned_version():
    with open(f"{ROOT}/scripts/requirements.txt", encoding="utf-8") as f:
        return re.search(r"^ruff==(\S+)$", f.read(), re.M).group(1)


@pytest.fixture(scope="module")
def installed():
    """Another ruff formats some lines otherwise: the pinned one, or the form checks fail here."""
    found = ruff("--version")
    assert found.returncode == 0, "ruff is not installed: bash scripts/install.sh installs the pinned one"
    assert found.stdout.split()[-1] == pinned_version(), (
        f"{found.stdout.strip()} is installed, the tree is formatted by ruff=={pinned_version()}: "
        f"pip install ruff=={pinned_version()}"
    )


def test_the_tree_is_formatted(installed):
    result = ruff("format", "--check", ".")
    assert result.returncode == 0, f"{result.stdout}{result.stderr}run: ruff format ."


def test_the_tree_passes_the_linter(installed):
    result = ruff("check", ".")
    assert result.returncode == 0, f"{result.stdout}{result.stderr}"


def test_an_unformatted_or_unsorted_file_is_caught(installed, tmp_path):
    """The checks read the project's settings: a long line, two statements on one line and
    imports out of order all fail them."""
    (tmp_path / "pyproject.toml").write_text(open(f"{ROOT}/pyproject.toml", encoding="utf-8").read())
    sample = tmp_path / "sample.py"
    sample.write_text("import sys\nimport os\n\nx = [os.sep, sys.argv]; y = x\n")
    assert ruff("format", "--check", "sample.py", cwd=tmp_path).returncode == 1
    linted = ruff("check", "sample.py", cwd=tmp_path)
    assert linted.returncode == 1 and "I001" in linted.stdout and "E702" in linted.stdout
    sample.write_text("import os\nimport sys\n\nx = [os.sep, sys.argv]\ny = x\n")
    assert ruff("format", "--check", "sample.py", cwd=tmp_path).returncode == 0
    assert ruff("check", "sample.py", cwd=tmp_path).returncode == 0


def test_shell_scripts_keep_the_width():
    """No formatter reads bash here: its lines are wrapped by hand to the Python width."""
    width = int(re.search(r"^line-length = (\d+)$", open(f"{ROOT}/pyproject.toml", encoding="utf-8").read(), re.M)[1])
    scripts = subprocess.run(["git", "ls-files", "*.sh"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    assert scripts, "no shell script found: git ls-files *.sh lists none"
    long = [
        f"{path}:{number}"
        for path in scripts
        for number, line in enumerate(open(f"{ROOT}/{path}", encoding="utf-8").read().splitlines(), 1)
        if len(line) > width
    ]
    assert not long, f"lines over {width} characters: {', '.join(long)}"
