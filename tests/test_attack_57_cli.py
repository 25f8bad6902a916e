"""Issue 57, item 2, cases a and h (the tools' side): what an attack of the new surfaces found, each
now refused in one line (naming the problem and the fix, a non-zero exit, nothing written) or done.

a. An output that is a symbolic link into the data directory was written through (rc 0, the corpus
   destroyed): the shared output check compared the link's own folder, not its target's.
h. --wheelhouse= (empty) installed from the index; a pipe as alm-score's FILE "did not exist";
   run.sh's GPU steps on a CPU machine failed with the reason only in the logs; --plot without an
   extension printed another name than the file written, an unsupported one failed after the run,
   --top / --plot-words took negative counts; the hub ignored dynamic_eval_segment; alm-cache-grid's
   --eval-tokens-per-sample did nothing on a stream model; --amp --cpu trained in float32 without a
   word; docs/tools.md named benchmarks/results/gpu/ as if it held results.

One tiny pointer_sentinel_lm trained on streams (a few seconds) serves every tool."""
import hashlib
import os
import re
import shutil
import subprocess
import threading

import pytest
import torch

from cli import TRAIN_COMMON, run, run_module
from conftest import ROOT, SAMPLE_DATA
from test_refusals import refused

TINY = ["--embed-dim", "16", "--hidden-size", "16", "--num-layers", "1", "--optimizer", "adam", "--lr", "0.01",
        "--no-epoch-checkpoints", "--disable-validation", "--seed", "1"]


def data_copy(folder):
    """A copy of the shipped sample (a test that failed would destroy its own copy, never the sample)."""
    shutil.copytree(SAMPLE_DATA, folder)
    return folder


def fingerprints(folder):
    return {name: hashlib.sha256((folder / name).read_bytes()).hexdigest() for name in sorted(os.listdir(folder))}


@pytest.fixture(scope="module")
def pointer(tmp_path_factory):
    """(checkpoint, the data directory it was trained on and saved): a pointer model read as one stream."""
    root = tmp_path_factory.mktemp("pointer57")
    data = data_copy(root / "data")
    run("train", data, "--user-dir", "alm_plugin", "--task", "document_language_modeling", "--cpu", "--no-progress-bar",
        "--num-workers", "0", "--arch", "pointer_sentinel_lm", "--pointer-window", "10", *TINY,
        "--criterion", "attention_cross_entropy", "--batch-size", "10", "--tokens-per-sample", "35",
        "--max-update", "2", "--save-dir", root / "save")
    return root / "save" / "checkpoint_last.pt", data


# ---------------------------------------------------------------- a. links into the data directory

LINKED = [  # (module, prog, output option, the data file its link names, extra arguments)
    ("alm_plugin.cli.cache_posterior", "alm-cache-posterior", "--json", "dict.txt", ["--split", "valid"]),
    ("alm_plugin.cli.cache_posterior", "alm-cache-posterior", "--plot", "valid.bin", ["--split", "valid"]),
    ("alm_plugin.cli.cache_grid", "alm-cache-grid", "--json", "valid.idx", ["--windows", "10", "--thetas", "0.3",
                                                                            "--lambdas", "0.1"]),
    ("alm_plugin.cli.plot_attention", "alm-plot-attention", "--out", "test.bin", ["the cat"]),
]


@pytest.mark.parametrize("module, prog, option, target, extra", LINKED)
def test_an_output_linked_into_the_data_directory_is_refused_and_nothing_is_written(pointer, tmp_path, module,
                                                                                     prog, option, target, extra):
    """Before: `ln -s DB/dict.txt out.json; alm-cache-posterior ... --json out.json` wrote the JSON
    through the link, rc 0 (`Incorrect dictionary format` afterwards); the same onto valid.idx."""
    checkpoint, _ = pointer
    data = data_copy(tmp_path / "data")
    before = fingerprints(data)
    link = tmp_path / ("out.png" if option in ("--plot", "--out") else "out.json")
    link.symlink_to(data / target)
    code, stdout, stderr = run_module(module, "--path", checkpoint, "--data", data, option, link, *extra)
    assert code == 1 and refused(stderr, prog, f"{option} {link} is a link to {data / target}, a file of the data "
                                               f"directory {data} (the data the model reads): writing it would "
                                               "destroy the data; give another path")
    assert fingerprints(data) == before and link.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", link.name]


def test_a_link_through_a_linked_folder_a_chain_and_a_hard_link_are_refused_too(pointer, tmp_path):
    checkpoint, _ = pointer
    data = data_copy(tmp_path / "data")
    before = fingerprints(data)
    (tmp_path / "folder").symlink_to(data)  # folder/valid.idx is data/valid.idx
    (tmp_path / "first.json").symlink_to(data / "dict.txt")
    (tmp_path / "chain.json").symlink_to(tmp_path / "first.json")
    os.link(data / "valid.bin", tmp_path / "hard.json")  # the same inode: found through --data
    grid = ["--windows", "10", "--thetas", "0.3", "--lambdas", "0.1", "--data", data]
    for output, says in ((tmp_path / "folder" / "valid.idx", "is a file of the data directory"),
                         (tmp_path / "chain.json", f"is a link to {data / 'dict.txt'}, a file of the data directory"),
                         (tmp_path / "hard.json", "is a file of the data directory")):
        code, _, stderr = run_module("alm_plugin.cli.cache_grid", "--path", checkpoint, *grid, "--json", output)
        assert code == 1 and refused(stderr, "alm-cache-grid", f"--json {output} {says}"), output
    assert fingerprints(data) == before


def test_an_output_in_the_checkpoints_saved_data_directory_is_refused_without_data(pointer, tmp_path):
    """No --data: the data directory saved in the checkpoint is the one protected."""
    checkpoint, data = pointer
    before = fingerprints(data)
    link = tmp_path / "out.json"
    link.symlink_to(data / "test.idx")
    code, _, stderr = run_module("alm_plugin.cli.cache_posterior", "--path", checkpoint, "--json", link)
    assert code == 1 and refused(stderr, "alm-cache-posterior", f"--json {link} is a link to {data / 'test.idx'}")
    assert fingerprints(data) == before


# ---------------------------------------------------------------- h. alm-cache-posterior's --plot, --top, --plot-words

def test_plot_without_an_extension_prints_the_file_it_wrote(pointer, tmp_path):
    """Before: `--plot noext` wrote noext.png (matplotlib adds it) and printed `wrote noext`."""
    checkpoint, data = pointer
    code, stdout, stderr = run_module("alm_plugin.cli.cache_posterior", "--path", checkpoint, "--split", "valid",
                                      "--plot", tmp_path / "noext", "--plot-words", "20")
    assert code == 0, stderr
    assert stdout.strip().splitlines()[-1] == f"wrote {tmp_path / 'noext.png'}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["noext.png"]


@pytest.mark.parametrize("options, message", [
    (["--plot", "PLOT.txt"], "--plot PLOT.txt: the picture's format is read from its extension, and '.txt' is none "
                             "matplotlib writes here: end the name in .png (or .avif"),
    (["--plot", "PLOT."], "--plot PLOT.: the picture's format is read from its extension, and '.' is none"),
    (["--plot", "PLOT.pgf"], "and '.pgf' is none matplotlib writes here"),  # it needs LaTeX
    (["--top", "-2"], "--top -2: give how many word types to list per side (e.g. 15; 0: none)"),
    (["--plot-words", "-5", "--plot", "PLOT.png"], "--plot-words -5: give how many of the split's first words to "
                                                   "draw (at least 1, e.g. 60)"),
    (["--plot-words", "0", "--plot", "PLOT.png"], "--plot-words 0: give how many"),
])
def test_cache_posterior_refuses_a_bad_plot_or_count_before_the_run(pointer, tmp_path, options, message):
    """Before: --plot x.txt failed after the whole run; --top -2 and --plot-words -5 were taken."""
    checkpoint, _ = pointer
    options = [str(tmp_path / o) if o.startswith("PLOT") else o for o in options]
    message = message.replace("PLOT", str(tmp_path / "PLOT"))
    code, stdout, stderr = run_module("alm_plugin.cli.cache_posterior", "--path", checkpoint, "--split", "valid",
                                      "--json", tmp_path / "out.json", *options)
    assert code == 1 and refused(stderr, "alm-cache-posterior", message)
    assert stdout == "" and not list(tmp_path.iterdir())


def test_plot_attention_refuses_an_unsupported_extension_before_loading(tmp_path):
    code, _, stderr = run_module("alm_plugin.cli.plot_attention", "--path", tmp_path / "never-loaded.pt",
                                 "--out", tmp_path / "attention.txt", "the cat")
    assert code == 1 and refused(stderr, "alm-plot-attention", f"--out {tmp_path / 'attention.txt'}: the picture's "
                                                               "format is read from its extension")


# ---------------------------------------------------------------- h. a pipe as alm-score's FILE

def test_alm_score_reads_a_pipe_as_a_file(pointer, tmp_path):
    """Before: `alm-score ... <(head valid.txt)` (a /dev/fd path) said "input file ... does not exist"."""
    checkpoint, _ = pointer
    text = "The game was released in Japan .\nIt met with positive sales .\n"
    plain = tmp_path / "text.txt"
    plain.write_text(text)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)

    def feed():
        with open(fifo, "w") as pipe:  # blocks until the tool opens the pipe
            pipe.write(text)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    try:
        code, piped, stderr = run_module("alm_plugin.cli.score", "--path", checkpoint, fifo)
    finally:
        if writer.is_alive():  # the tool never opened the pipe: let the writer go
            os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
        writer.join(5)
    assert code == 0, stderr
    code, from_file, _ = run_module("alm_plugin.cli.score", "--path", checkpoint, plain)
    assert code == 0 and piped == from_file and len(piped.splitlines()) == 3  # the header and two rows


# ---------------------------------------------------------------- h. alm-cache-grid --eval-tokens-per-sample on streams

def test_cache_grid_refuses_eval_tokens_per_sample_on_a_stream_model(pointer, tmp_path):
    """Before: taken and ignored (a stream model reads the split as one stream, nothing is cut)."""
    checkpoint, _ = pointer
    code, stdout, stderr = run_module("alm_plugin.cli.cache_grid", "--path", checkpoint, "--windows", "10",
                                      "--thetas", "0.3", "--lambdas", "0.1", "--eval-tokens-per-sample", "7",
                                      "--json", tmp_path / "grid.json")
    assert code == 1 and refused(stderr, "alm-cache-grid", f"--eval-tokens-per-sample 7 cuts the sentences of "
                                                           f"sentence_language_modeling; {checkpoint} was trained on "
                                                           "document_language_modeling, which reads the split as one "
                                                           "stream")
    assert "drop the option" in stderr and stdout == "" and not list(tmp_path.iterdir())


# ---------------------------------------------------------------- h. the hub's dynamic_eval_segment

def test_the_hub_refuses_dynamic_eval_segment_which_it_cannot_honour(pointer):
    """Before: accepted and ignored: the hub reads each sentence alone (one segment), so 5, 20 and
    200 gave the same scores."""
    from alm_plugin.errors import OptionError
    from alm_plugin.models.pointer_sentinel_lm import PointerSentinelLanguageModel

    checkpoint, data = pointer
    common = dict(data_name_or_path=str(data), user_dir="alm_plugin", dynamic_eval_lr=0.3)
    with pytest.raises(OptionError, match=r"^dynamic_eval_segment=5: the hub's score\(\) reads each sentence alone "
                                          r"and takes one step after it .*: drop the keyword; to adapt every N tokens "
                                          r"of a text read as one stream, use alm-score --dynamic-eval-lr LR "
                                          r"--dynamic-eval-segment N$"):
        PointerSentinelLanguageModel.from_pretrained(str(checkpoint.parent), checkpoint.name, dynamic_eval_segment=5,
                                                     **common)
    lm = PointerSentinelLanguageModel.from_pretrained(str(checkpoint.parent), checkpoint.name, **common)
    assert torch.isfinite(lm.score("The game was released in Japan .")["positional_scores"]).all()


# ---------------------------------------------------------------- h. --amp on the CPU

def test_amp_on_the_cpu_is_refused_instead_of_training_in_float32(tmp_path):
    """Before: rc 0, trained in float32 (torch.cuda.amp's autocast casts CUDA operations only, its
    scaler turns itself off: `loss_scale 1`), without a word."""
    code, output = run("train", SAMPLE_DATA, *TRAIN_COMMON, "--arch", "alm_lstm", *TINY, "--batch-size", "64",
                       "--max-update", "1", "--amp", "--save-dir", tmp_path, check=False)
    assert code == 1 and refused(output, "fairseq-train", "--amp: fairseq's automatic mixed precision casts CUDA "
                                                          "operations only, and this run trains on the CPU (--cpu, or "
                                                          "no GPU torch can use): it would train in float32 as without "
                                                          "the flag; drop --amp, or train on a GPU without --cpu")
    assert not list(tmp_path.iterdir())


# ---------------------------------------------------------------- h. install.sh --wheelhouse=

@pytest.mark.parametrize("args", [["--wheelhouse="], ["--wheelhouse", ""], ["--wheelhouse"]])
def test_install_refuses_an_empty_wheelhouse_in_one_line(tmp_path, args):
    """Before: --wheelhouse= installed from the package index, rc 0; --wheelhouse '' ended in bash's
    own `line 30: 2: --wheelhouse needs a directory`, rc 1."""
    calls = tmp_path / "calls"
    python = tmp_path / "python"  # records every call: none may happen
    python.write_text(f"#!/bin/sh\necho \"$@\" >> {calls}\n")
    python.chmod(0o755)
    proc = subprocess.run(["bash", "scripts/install.sh", *args], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHON": str(python), "PIP_INDEX_URL": "http://127.0.0.1:9/simple"})
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == ["install.sh: --wheelhouse needs a directory (one made by "
                                        "scripts/make_wheelhouse.sh); to install from the package index, leave the "
                                        "option out"]
    assert not calls.exists()


# ---------------------------------------------------------------- h. run.sh's GPU steps on a CPU machine

def has_gpu():
    if torch.cuda.is_available():
        return True
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.startswith("GPU")
    except OSError:
        return False


@pytest.mark.skipif(has_gpu(), reason="the refusal is for a machine without a GPU")
def test_run_sh_refuses_its_gpu_steps_on_a_machine_without_one_before_anything(tmp_path):
    """Before: each step ran and failed (`cli: rc=2`), the reason in the logs only."""
    steps = ["install", "tests", "cli", "speed"]  # install alone runs anywhere: named nowhere, not run either
    env = {**os.environ, "ALM_GPU_RESULTS": str(tmp_path / "results"), "ALM_GPU_WORK": str(tmp_path / "work"),
           "GPU_RUN_BUDGET": "30"}
    proc = subprocess.run(["bash", "benchmarks/gpu/run.sh", *steps], cwd=ROOT, capture_output=True, text=True,
                          env=env, timeout=300)
    asked = " ".join(s for s in steps if s != "install")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        f"run.sh: {asked} run on a GPU and this machine has none (nvidia-smi lists no GPU, torch sees no CUDA): run "
        f"them on the lent GPU machine, or here with --dry-run (bash benchmarks/gpu/run.sh --dry-run {asked})"]
    assert not list(tmp_path.iterdir())


# ---------------------------------------------------------------- h. docs/tools.md names no missing folder as holding results

def test_tools_md_names_only_paths_that_exist_or_says_they_do_not_yet():
    """Before: "What was measured on one ... is in benchmarks.md and `benchmarks/results/gpu/`", a
    folder the repository does not have (run.sh writes it on the machine it runs on)."""
    text = open(os.path.join(ROOT, "docs", "tools.md"), encoding="utf-8").read()
    for paragraph in text.split("\n\n"):
        for path in re.findall(r"`((?:alm_plugin|benchmarks|scripts|tests|docs)/[\w./-]*)`", paragraph):
            if not os.path.exists(os.path.join(ROOT, path)):
                assert "not in the repository" in " ".join(paragraph.split()), (path, paragraph)
