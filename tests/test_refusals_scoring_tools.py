"""alm-score, alm-cache-grid, alm-cache-posterior, alm-plot-attention and the hub refuse, in one line
naming the problem and the fix (no traceback, a non-zero exit, nothing written), what they cannot do:
options out of range or without effect, a model the tool does not apply to, a line too long for the
memory, a full disk, an empty sentence."""

import os
import subprocess
import sys

import pytest
import torch
from cli import last_line, refused, run_module
from conftest import ROOT, SAMPLE_DATA, short_split

GRID = ["--windows", "50", "--thetas", "0.3", "--lambdas", "0.2", "--cpu"]


# ---------------------------------------------------------------- alm-score


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_alm_score_on_a_full_disk_is_one_line(attentive):
    """A real process: the failed write and the interpreter's last flush (before: a traceback)."""
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "alm_plugin.cli.score", "--path", attentive],
            cwd=ROOT,
            input="the game\n" * 3000,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
        )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr
    assert last_line(proc.stderr) == (
        "alm-score: error: cannot write the scores to stdout (No space left on device): "
        "free space on its disk, or send the output elsewhere; the output is incomplete"
    )


def test_alm_score_names_a_directory_and_an_empty_checkpoint_path(attentive, tmp_path):
    code, stdout, stderr = run_module("alm_plugin.cli.score", "--path", attentive, tmp_path)
    assert (
        code != 0
        and last_line(stderr) == f"alm-score: error: input {tmp_path} is a directory: give the text file(s) to score"
    )
    for path in (f"{attentive}:", f":{attentive}", f"{attentive}::{attentive}"):
        code, stdout, stderr = run_module("alm_plugin.cli.score", "--path", path, stdin="the game\n")
        assert code != 0 and stdout == ""
        assert last_line(stderr) == (
            f"alm-score: error: --path {path!r} has an empty checkpoint path (a ':' at an "
            "end or doubled): give CHECKPOINT, or CK1:CK2 for an ensemble"
        )


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux's /proc to cap the memory")
def test_a_line_too_long_for_the_memory_is_named_with_the_way_out(tmp_path, tiny_lm):
    """A line too long for the memory is named with the way out, not torch's allocator traceback. A
    sentence-level model scores a line whole, so the message says why and to split it."""
    (tmp_path / "long.txt").write_text(" ".join(["the"] * 30000) + "\n")
    # the cap: what the process holds once everything is imported, plus 512 MB; the line's
    # 30,001 x 6,208 output probabilities alone are 745 MB
    launch = (
        "import resource, sys, torch, fairseq, alm_plugin.cli.score as score; "
        "held = int(next(l for l in open('/proc/self/status') if l.startswith('VmSize')).split()[1]) * 1024; "
        "resource.setrlimit(resource.RLIMIT_AS, (held + 2 ** 29, held + 2 ** 29)); "
        "sys.argv[0] = 'alm-score'; sys.exit(score.main(sys.argv[1:]))"
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            launch,
            "--path",
            str(tiny_lm),
            "--data",
            SAMPLE_DATA,
            "--cpu",
            str(tmp_path / "long.txt"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr and proc.stdout == "", proc.stderr[-3000:]
    assert last_line(proc.stderr).startswith(
        "alm-score: error: out of memory scoring sentence 1 (30,001 tokens, </s> included"
    ), proc.stderr[-3000:]
    assert last_line(proc.stderr).endswith("split the line into sentences")
    # several sentences in the batch: the way out is a smaller batch
    from alm_plugin.cli.scoring import out_of_memory

    message = str(
        out_of_memory(
            RuntimeError("can't allocate memory: you tried to allocate 2000000000 bytes"),
            [torch.zeros(5), torch.zeros(9)],
            [0, 1],
            100,
            8000,
        )
    )
    assert "a batch of 2 sentences (the longest, sentence 2, has 9 tokens, 2.0 GB in one piece)" in message
    assert message.endswith("lower --batch-tokens (now 8000), or split the long line")


# ---------------------------------------------------------------- alm-cache-grid


@pytest.mark.parametrize(
    "options, message",
    [
        (["--dynamic-decays", "0.5", "--dynamic-rule", "rms"], "--dynamic-decays does nothing without --dynamic-lrs"),
        (["--dynamic-rule", "rms"], "--dynamic-rule does nothing without --dynamic-lrs"),
        (["--dynamic-lrs", "0", "--dynamic-decays", "0.5"], "--dynamic-decays does nothing without --dynamic-lrs"),
        (["--dynamic-lrs", "-0.3"], "--dynamic-lrs -0.3 is out of range: it must be at least 0"),
        (["--dynamic-lrs", "0.3", "--dynamic-decays", "1.5"], "--dynamic-decays 1.5 is out of range"),
        (["--dynamic-lrs", "0.3", "--dynamic-segment", "10"], "--dynamic-segment: "),
    ],
)
def test_the_grids_dynamic_options_are_refused_under_their_own_names(adaptive_sentence, options, message):
    """Decays and a rule without step sizes are refused, each under the grid's own option name."""
    code, out, err = run_module("alm_plugin.cli.cache_grid", "--path", adaptive_sentence, *GRID, *options)
    assert code == 1 and refused(err, "alm-cache-grid", message)
    assert "--dynamic-eval" not in err and not out


def test_cache_grid_on_a_character_model_names_the_checkpoint_not_eval_lms_options(tiny_char, tmp_path):
    """A model without a cache is refused in the grid's own words, with --dynamic-lrs too; nothing is written."""
    checkpoint, _ = tiny_char
    for extra in ([], ["--dynamic-lrs", "0.1"]):
        out = tmp_path / "grid.json"
        code, stdout, stderr = run_module(
            "alm_plugin.cli.cache_grid", "--path", checkpoint, *GRID, "--json", out, *extra
        )
        assert code == 1 and refused(stderr, "alm-cache-grid", "CharLSTMLanguageModel has no neural cache")
        assert "--neural-cache" not in stderr and not out.exists()


def test_cache_grid_refuses_eval_tokens_per_sample_on_a_stream_model(tiny_pointer, tmp_path):
    """A stream model reads the split as one stream and cuts nothing: the option is refused, not ignored."""
    checkpoint, _ = tiny_pointer
    code, stdout, stderr = run_module(
        "alm_plugin.cli.cache_grid",
        "--path",
        checkpoint,
        "--windows",
        "10",
        "--thetas",
        "0.3",
        "--lambdas",
        "0.1",
        "--eval-tokens-per-sample",
        "7",
        "--json",
        tmp_path / "grid.json",
    )
    assert code == 1 and refused(
        stderr,
        "alm-cache-grid",
        f"--eval-tokens-per-sample 7 cuts the sentences of "
        f"sentence_language_modeling; {checkpoint} was trained on "
        "document_language_modeling, which reads the split as one "
        "stream",
    )
    assert "drop the option" in stderr and stdout == "" and not list(tmp_path.iterdir())


# ---------------------------------------------------------------- alm-cache-posterior


@pytest.mark.parametrize(
    "options, message",
    [
        (
            ["--plot", "PLOT.txt"],
            "--plot PLOT.txt: the picture's format is read from its extension, and '.txt' is none "
            "matplotlib writes here: end the name in .png (or .avif",
        ),
        (["--plot", "PLOT."], "--plot PLOT.: the picture's format is read from its extension, and '.' is none"),
        (["--plot", "PLOT.pgf"], "and '.pgf' is none matplotlib writes here"),  # it needs LaTeX
        (["--top", "-2"], "--top -2: give how many word types to list per side (e.g. 15; 0: none)"),
        (
            ["--plot-words", "-5", "--plot", "PLOT.png"],
            "--plot-words -5: give how many of the split's first words to draw (at least 1, e.g. 60)",
        ),
        (["--plot-words", "0", "--plot", "PLOT.png"], "--plot-words 0: give how many"),
    ],
)
def test_cache_posterior_refuses_a_bad_plot_or_count_before_the_run(tiny_pointer, tmp_path, options, message):
    """A plot name of another format and negative counts are refused before the run."""
    checkpoint, _ = tiny_pointer
    options = [str(tmp_path / o) if o.startswith("PLOT") else o for o in options]
    message = message.replace("PLOT", str(tmp_path / "PLOT"))
    code, stdout, stderr = run_module(
        "alm_plugin.cli.cache_posterior",
        "--path",
        checkpoint,
        "--gen-subset",
        "valid",
        "--json",
        tmp_path / "out.json",
        *options,
    )
    assert code == 1 and refused(stderr, "alm-cache-posterior", message)
    assert stdout == "" and not list(tmp_path.iterdir())


def test_cache_posterior_reads_the_old_split_option_as_gen_subset_with_a_note(tiny_pointer, tmp_path):
    """--split, its name before alm-cache-grid's --gen-subset was taken: the same figures, and one note
    (on the valid split's first 20 lines)."""
    checkpoint, _ = tiny_pointer
    data = short_split(tmp_path / "data", 20)
    runs = {
        option: run_module(
            "alm_plugin.cli.cache_posterior",
            "--path",
            checkpoint,
            "--data",
            data,
            option,
            "valid",
            "--json",
            tmp_path / f"{option[2:]}.json",
        )
        for option in ("--gen-subset", "--split")
    }
    assert [code for code, _, _ in runs.values()] == [0, 0]
    assert runs["--split"][1].replace("split.json", "gen-subset.json") == runs["--gen-subset"][1]
    notes = [line for line in runs["--split"][2].splitlines() if "note:" in line]
    assert notes == [
        "alm-cache-posterior: note: --split is read as --gen-subset (as in alm-cache-grid and fairseq-eval-lm)"
    ]
    assert "note:" not in runs["--gen-subset"][2]
    assert (tmp_path / "split.json").read_text() == (tmp_path / "gen-subset.json").read_text()


def test_cache_posterior_on_a_word_model_is_one_line(tiny_lm):
    code, stdout, stderr = run_module("alm_plugin.cli.cache_posterior", "--path", tiny_lm, "--data", SAMPLE_DATA)
    assert code == 1 and "Traceback" not in stderr and stdout == ""
    assert last_line(stderr).startswith(f"alm-cache-posterior: error: {tiny_lm} has no word cache"), stderr
    code, stdout, stderr = run_module("alm_plugin.cli.cache_posterior", "--path", tiny_lm, "--rare-in-train", "-1")
    assert code == 1 and last_line(stderr).startswith("alm-cache-posterior: error: --rare-in-train -1: give a count")


# ---------------------------------------------------------------- alm-plot-attention


def test_plot_attention_refuses_an_unsupported_extension_before_loading(tmp_path):
    code, _, stderr = run_module(
        "alm_plugin.cli.plot_attention",
        "--path",
        tmp_path / "never-loaded.pt",
        "--out",
        tmp_path / "attention.txt",
        "the cat",
    )
    assert code == 1 and refused(
        stderr,
        "alm-plot-attention",
        f"--out {tmp_path / 'attention.txt'}: the picture's format is read from its extension",
    )


def test_plot_attention_on_a_model_without_history_attention(tmp_path, tiny_lm):
    code, stdout, stderr = run_module(
        "alm_plugin.cli.plot_attention", "--path", tiny_lm, "--out", tmp_path / "a.png", "the cat"
    )
    assert code != 0 and "draws the history attention of an attentive_lm or amsrn" in last_line(stdout + stderr)
    assert not (tmp_path / "a.png").exists()


# ---------------------------------------------------------------- the hub


def test_the_hub_refuses_dynamic_eval_segment_which_it_cannot_honour(tiny_pointer):
    """The hub reads each sentence alone (one segment), so a segment length would change nothing: refused."""
    from alm_plugin.errors import OptionError
    from alm_plugin.models.pointer_sentinel_lm import PointerSentinelLanguageModel

    checkpoint, data = tiny_pointer
    common = dict(data_name_or_path=str(data), user_dir="alm_plugin", dynamic_eval_lr=0.3)
    with pytest.raises(
        OptionError,
        match=r"^--dynamic-eval-segment: here a segment is one sentence, read whole from a fresh state "
        r"\(sentence_language_modeling, the hub's score\(\)\): drop the option",
    ):
        PointerSentinelLanguageModel.from_pretrained(
            str(checkpoint.parent), checkpoint.name, dynamic_eval_segment=5, **common
        )


def test_the_hub_refuses_what_alm_score_and_eval_lm_refuse(tiny_pointer, tmp_path):
    """The same refusals as the command-line tools: a stream-trained model scored a sentence at a time from a fresh
    state (fairseq-eval-lm --task sentence_language_modeling refuses it), and dynamic evaluation of an ensemble
    (alm-score refuses it); loading for sampling still works."""
    import shutil

    from alm_plugin.errors import CheckpointError, OptionError
    from alm_plugin.models.pointer_sentinel_lm import PointerSentinelLanguageModel

    checkpoint, data = tiny_pointer
    common = dict(data_name_or_path=str(data), user_dir="alm_plugin")
    lm = PointerSentinelLanguageModel.from_pretrained(str(checkpoint.parent), checkpoint.name, **common)
    with pytest.raises(CheckpointError, match=r"was trained on document streams .* and the hub's score\(\) scores"):
        lm.score("The game was released in Japan .")
    for name in ("a.pt", "b.pt"):
        shutil.copy(checkpoint, tmp_path / name)
    with pytest.raises(OptionError, match="^--dynamic-eval-lr adapts one model to the text: score an ensemble"):
        PointerSentinelLanguageModel.from_pretrained(str(tmp_path), "a.pt:b.pt", dynamic_eval_lr=0.3, **common)


def test_hub_refuses_an_empty_sentence(tiny_lm):
    from alm_plugin.models.lstm_lm import LSTMLanguageModel

    lm = LSTMLanguageModel.from_pretrained(str(tiny_lm.parent), tiny_lm.name, SAMPLE_DATA)
    assert torch.isfinite(lm.score("the cat")["positional_scores"]).all()
    with pytest.raises(ValueError, match="cannot score an empty sentence"):
        lm.score(" ")
