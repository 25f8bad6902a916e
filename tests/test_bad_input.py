"""Bad input fed to the real commands: each gets one clear line (what is wrong, what to do),
a non-zero exit code, and no half-written output."""
import os
import subprocess
import sys

import pytest
import torch
from fairseq.data import Dictionary

from conftest import ROOT

PREPARE = os.path.join(ROOT, "examples", "language_model", "prepare_lm_data.py")
GOOD = "The cat sat on the mat .\nA dog ran far away .\n"


def prepare(tmp_path, texts, *extra):
    raw = tmp_path / "raw"
    raw.mkdir(exist_ok=True)
    for split in ("train", "valid", "test"):
        data = texts.get(split, GOOD)
        (raw / f"{split}.txt").write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    proc = subprocess.run([sys.executable, PREPARE, "--raw-dir", raw, "--name", "bad", "--destdir",
                           tmp_path / "bin", "--text-dir", tmp_path / "text", *extra],
                          capture_output=True, text=True, cwd=tmp_path)
    return proc.returncode, proc.stdout + proc.stderr


def last_line(output):
    return output.strip().splitlines()[-1]


@pytest.mark.parametrize("text", ["", "   \n\n \t\n"])
def test_prepare_refuses_an_empty_split(tmp_path, text):
    code, output = prepare(tmp_path, {"valid": text})
    assert code != 0 and "valid.txt has no sentences" in last_line(output), output
    assert not (tmp_path / "bin" / "bad").exists()


def test_prepare_names_the_file_and_line_of_latin1_text(tmp_path):
    code, output = prepare(tmp_path, {"test": GOOD.encode() + "Café au lait .\n".encode("latin-1")})
    assert code != 0 and "Traceback" not in output
    assert "test.txt:3: not UTF-8" in last_line(output) and "iconv" in last_line(output)


def test_prepare_refuses_a_literal_end_of_sentence_symbol(tmp_path):
    code, output = prepare(tmp_path, {"train": GOOD + "one </s> two\n"})
    assert code != 0 and "train.txt:3: the text contains </s>" in last_line(output), output


def test_prepare_refuses_an_unknown_tokenizer_language(tmp_path):
    code, output = prepare(tmp_path, {}, "--tokenize", "xx")
    assert code != 0 and "no tokenisation rules for language 'xx'" in last_line(output), output


def test_prepare_drops_a_byte_order_mark(tmp_path):
    code, output = prepare(tmp_path, {"train": "\ufeff" + GOOD})
    assert code == 0, output
    symbols = Dictionary.load(str(tmp_path / "bin" / "bad" / "dict.txt")).symbols
    assert "The" in symbols and not any("\ufeff" in s for s in symbols)


# ----------------------------------------------------------------------------- alm-rescore

from cli import TRAIN_COMMON, run, run_module  # noqa: E402
from conftest import SAMPLE_DATA  # noqa: E402

NBEST = "H-0\t-1.5\tthe cat sat\nP-0\t-0.5 -0.5 -0.25 -0.25\nH-0\t-2.0\ta cat\nP-0\t-1.0 -0.5 -0.5\n" \
        "H-1\t-0.5\tthe dog\nP-1\t-0.25 -0.25 -0.25\n"


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    save = tmp_path_factory.mktemp("lm")
    run("train", SAMPLE_DATA, *TRAIN_COMMON, "--arch", "alm_lstm", "--embed-dim", "16", "--hidden-size", "16",
        "--optimizer", "adam", "--lr", "0.01", "--batch-size", "64", "--max-update", "2", "--save-dir", save,
        "--no-epoch-checkpoints", "--disable-validation")
    return save / "checkpoint_last.pt"


def rescore(tmp_path, nbest, *args, lm="checkpoint"):
    path = tmp_path / "in.nbest"
    path.write_bytes(nbest if isinstance(nbest, bytes) else nbest.encode("utf-8"))
    code, stdout, stderr = run_module("alm_plugin.cli.rescore", "--nbest", path, "--lm", lm, "--hyp-form", "tok",
                                      "--lm-form", "tok", "--cpu", *args)
    return code, stdout + stderr


def test_rescore_refuses_a_truncated_positional_score_line(tmp_path, tiny_lm):
    code, output = rescore(tmp_path, NBEST.replace("-0.5 -0.5 -0.25 -0.25", "-0.5 -0.5"), lm=tiny_lm)
    assert code != 0 and "in.nbest:2: P-0 has 2 scores but its hypothesis (line 1) has 3 tokens" in last_line(output)


def test_rescore_refuses_a_1best_with_missing_sentences(tmp_path, tiny_lm):
    out = tmp_path / "best.txt"
    truncated = NBEST + "H-3\t-0.5\tthe dog\nP-3\t-0.25 -0.25 -0.25\n"  # ids 0, 1, 3: 2 is missing
    code, output = rescore(tmp_path, truncated, "--output-1best", out, lm=tiny_lm)
    assert code != 0 and "sentence ids 2 have no hypotheses" in last_line(output), output
    assert not out.exists() and not os.path.exists(f"{out}.partial")


def test_rescore_refuses_a_repeated_hypothesis(tmp_path, tiny_lm):
    code, output = rescore(tmp_path, NBEST + NBEST, lm=tiny_lm)
    assert code != 0 and "in.nbest:7: the hypothesis of line 1 appears again for sentence 0" in last_line(output)


def test_rescore_ranks_an_infinite_score_last_and_writes_no_nan(tmp_path, tiny_lm):
    out = tmp_path / "out.nbest"
    minus_inf = NBEST.replace("H-0\t-1.5\tthe cat sat\nP-0\t-0.5 -0.5 -0.25 -0.25",
                              "H-0\t-inf\tthe cat sat\nP-0\t-0.5 -inf -0.25 -0.25")
    code, output = rescore(tmp_path, minus_inf, "--output-nbest", out, "--weights", "TM=1,LM=0,Len=0.5", lm=tiny_lm)
    assert code == 0, output
    written = out.read_text().splitlines()
    assert "nan" not in out.read_text().lower()
    assert written[0].startswith("0 ||| a cat |||") and written[1].startswith("0 ||| the cat sat |||")


def test_rescore_names_a_missing_or_latin1_file(tmp_path, tiny_lm):
    code, output = rescore(tmp_path, NBEST, "--ref", tmp_path / "nope.txt", lm=tiny_lm)
    assert code != 0 and "the reference file" in last_line(output) and "does not exist" in last_line(output)
    code, output = rescore(tmp_path, NBEST.encode() + "H-2\t-0.5\tcafé\n".encode("latin-1"), lm=tiny_lm)
    assert code != 0 and "Traceback" not in output and "in.nbest:7: not UTF-8" in last_line(output)


def test_rescore_names_a_corrupt_checkpoint_and_a_dictionary_mismatch(tmp_path, tiny_lm):
    corrupt = tmp_path / "corrupt.pt"
    corrupt.write_bytes(tiny_lm.read_bytes()[:5000])
    code, output = rescore(tmp_path, NBEST, lm=corrupt)
    assert code != 0 and "Traceback" not in output
    assert "could not be read as a fairseq checkpoint" in last_line(output)
    other = tmp_path / "other-data"
    other.mkdir()
    lines = open(os.path.join(SAMPLE_DATA, "dict.txt"), encoding="utf-8").read().splitlines()
    lines[0], lines[1] = lines[1], lines[0]  # same size, two words swapped
    (other / "dict.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, output = rescore(tmp_path, NBEST, "--lm-data", other, lm=tiny_lm)
    assert code != 0 and "Traceback" not in output
    assert "dictionary mismatch" in last_line(output) and "--lm-data" in last_line(output)


@pytest.mark.parametrize("bad_grid", ["0:1:0", "0:1:-0.1", "1:0:0.1", "0:1"])
def test_rescore_refuses_a_grid_that_is_empty_or_never_ends(tmp_path, bad_grid):
    code, output = rescore(tmp_path, NBEST, "--lm-grid", bad_grid, lm="unused.pt")
    assert code == 2 and "--lm-grid" in last_line(output) and "low:high:step" in last_line(output)


@pytest.mark.parametrize("clash", ["--output-1best", "--nbest", "--ref", "--tune-nbest", "--tune-ref"])
def test_rescore_refuses_an_output_on_an_input_or_on_the_other_output(tmp_path, tiny_lm, clash):
    files = {"--nbest": NBEST, "--ref": "The cat sat.\nThe dog.\n", "--tune-nbest": NBEST,
             "--tune-ref": "The cat sat.\nThe dog.\n", "--output-1best": "an earlier 1-best\n"}
    paths = {option: tmp_path / f"file{i}.txt" for i, option in enumerate(files)}
    for option, text in files.items():
        paths[option].write_text(text, encoding="utf-8")
    before = {path: path.read_bytes() for path in paths.values()}
    same = os.path.join(tmp_path, ".", paths[clash].name)  # the file under another spelling
    code, stdout, stderr = run_module("alm_plugin.cli.rescore", "--lm", tiny_lm, "--hyp-form", "tok", "--lm-form",
                                      "tok", "--cpu", *(str(a) for option in files if option != "--output-1best"
                                                        for a in (option, paths[option])),
                                      "--output-1best", paths["--output-1best"], "--output-nbest", same)
    assert code == 1 and stdout == "", stdout
    assert last_line(stderr) == (f"alm-rescore: error: --output-nbest {same} is also {clash}: "
                                 + ("the second output written would replace the first" if clash == "--output-1best"
                                    else "writing it would destroy the input") + "; give another path"), stderr
    assert {path: path.read_bytes() for path in paths.values()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in paths.values())  # no .partial


def test_rescore_writes_the_same_outputs_for_a_crlf_nbest(tmp_path, tiny_lm):
    outputs = {}
    for name, text in (("lf", NBEST), ("crlf", NBEST.replace("\n", "\r\n"))):
        best, nbest = tmp_path / f"{name}.1best", tmp_path / f"{name}.nbest"
        code, output = rescore(tmp_path, text, "--output-form", "tok", "--output-1best", best,
                               "--output-nbest", nbest, lm=tiny_lm)
        assert code == 0, output
        outputs[name] = best.read_bytes(), nbest.read_bytes()
    assert b"\r" not in b"".join(outputs["crlf"])
    assert [len(output.decode().splitlines()) for output in outputs["crlf"]] == [2, 3]  # sentences, hypotheses
    assert outputs["crlf"] == outputs["lf"]


def test_rescore_finds_an_unwritable_output_before_scoring(tmp_path):
    code, output = rescore(tmp_path, NBEST, "--output-1best", tmp_path / "no" / "such" / "dir.txt",
                           lm=tmp_path / "never-loaded.pt")
    assert code != 0 and "--output-1best" in last_line(output) and "does not exist; create it" in last_line(output)


@pytest.mark.parametrize("module, prog, option, extra", [
    ("alm_plugin.cli.plot_attention", "alm-plot-attention", "--out", ["the cat"]),
    ("alm_plugin.cli.cache_posterior", "alm-cache-posterior", "--plot", []),
    ("alm_plugin.cli.cache_grid", "alm-cache-grid", "--json", []),
])
def test_every_tool_refuses_an_output_in_a_missing_folder_before_loading(tmp_path, module, prog, option, extra):
    """The checkpoint is never read (it does not exist): the output is checked first, not after the run."""
    out = tmp_path / "no" / "such" / "folder" / "out.png"
    code, stdout, stderr = run_module(module, "--path", tmp_path / "never-loaded.pt", option, out, *extra)
    assert code == 1 and "Traceback" not in stderr, stderr
    assert last_line(stderr) == (f"{prog}: error: {option} {out}: the folder {out.parent} does not exist; "
                                 "create it or give another path"), stderr


# ----------------------------------------------------------------------------- wrong pairs

def test_a_corrupt_checkpoint_is_named_by_fairseq_eval_lm(tmp_path, tiny_lm):
    corrupt = tmp_path / "checkpoint_best.pt"
    corrupt.write_bytes(tiny_lm.read_bytes()[:5000])
    code, output = run("eval_lm", SAMPLE_DATA, "--path", corrupt, "--user-dir", "alm_plugin",
                       "--task", "sentence_language_modeling", "--cpu", check=False)
    assert code != 0 and f"{corrupt} could not be read as a fairseq checkpoint" in last_line(output)


def test_a_translation_architecture_with_a_language_model_task(tmp_path):
    code, output = run("train", SAMPLE_DATA, *TRAIN_COMMON, "--arch", "attentive_nmt_small", "--batch-size", "4",
                       "--max-update", "1", "--save-dir", tmp_path, check=False)
    assert code != 0 and "is a translation model: train it with --task translation" in last_line(output)


def test_a_word_model_with_the_open_vocabulary_task(tmp_path):
    code, output = run("train", SAMPLE_DATA, "--user-dir", "alm_plugin", "--cpu", "--task",
                       "open_vocabulary_language_modeling", "--batch-size", "4", "--arch", "attentive_lm_small",
                       "--max-update", "1", "--save-dir", tmp_path, check=False)
    assert code != 0 and "is a word-level language model" in last_line(output)


@pytest.mark.parametrize("tokens", ["0", "-3"])
def test_open_vocabulary_chunks_of_no_words(tmp_path, tokens):
    code, output = run("train", SAMPLE_DATA, "--user-dir", "alm_plugin", "--cpu", "--task",
                       "open_vocabulary_language_modeling", "--batch-size", "4", "--arch", "hclm_small",
                       "--tokens-per-sample", tokens, "--max-update", "1", "--save-dir", tmp_path, check=False)
    assert code != 0 and f"--tokens-per-sample {tokens}: the words per chunk" in last_line(output)


def test_plot_attention_on_a_model_without_history_attention(tmp_path, tiny_lm):
    code, stdout, stderr = run_module("alm_plugin.cli.plot_attention", "--path", tiny_lm, "--out", tmp_path / "a.png",
                                      "the cat")
    assert code != 0 and "draws the history attention of an attentive_lm or amsrn" in last_line(stdout + stderr)
    assert not (tmp_path / "a.png").exists()


@pytest.mark.parametrize("module, prog, extra", [
    ("alm_plugin.cli.score", "alm-score", []),
    ("alm_plugin.cli.plot_attention", "alm-plot-attention", ["the cat"]),
    ("alm_plugin.cli.cache_posterior", "alm-cache-posterior", []),
    ("alm_plugin.cli.cache_grid", "alm-cache-grid", []),
])
def test_every_tool_loads_and_refuses_a_checkpoint_alike(tmp_path, tiny_lm, module, prog, extra):
    corrupt = tmp_path / "corrupt.pt"
    corrupt.write_bytes(tiny_lm.read_bytes()[:5000])
    for path, message in ((corrupt, f"{corrupt} could not be read as a fairseq checkpoint"),
                          (tmp_path / "absent.pt", f"no language model checkpoint at {tmp_path / 'absent.pt'}")):
        code, stdout, stderr = run_module(module, "--path", path, *extra, stdin="the cat\n")
        assert code == 1 and "Traceback" not in stderr, stderr
        assert last_line(stderr).startswith(f"{prog}: error: {message}"), stderr


def test_cache_posterior_json_on_its_checkpoint_or_its_plot_is_refused(tmp_path, tiny_lm):
    """--json naming the checkpoint (under another spelling) or the --plot file: one line, nothing written."""
    checkpoint = tmp_path / "lm.pt"
    checkpoint.write_bytes(tiny_lm.read_bytes())
    for json_out, extra, clash in ((os.path.join(tmp_path, ".", "lm.pt"), [], "--path"),
                                   (tmp_path / "out.png", ["--plot", tmp_path / "out.png"], "--plot")):
        code, stdout, stderr = run_module("alm_plugin.cli.cache_posterior", "--path", checkpoint, *extra,
                                          "--json", json_out)
        assert code == 1 and stdout == "" and f"--json {json_out} is also {clash}" in last_line(stderr), stderr
    assert checkpoint.read_bytes() == tiny_lm.read_bytes() and sorted(os.listdir(tmp_path)) == ["lm.pt"]


def test_cache_posterior_on_a_word_model_is_one_line(tiny_lm):
    code, stdout, stderr = run_module("alm_plugin.cli.cache_posterior", "--path", tiny_lm, "--data", SAMPLE_DATA)
    assert code == 1 and "Traceback" not in stderr and stdout == ""
    assert last_line(stderr).startswith(f"alm-cache-posterior: error: {tiny_lm} has no word cache"), stderr
    code, stdout, stderr = run_module("alm_plugin.cli.cache_posterior", "--path", tiny_lm, "--rare-in-train", "-1")
    assert code == 1 and last_line(stderr).startswith("alm-cache-posterior: error: --rare-in-train -1: give a count")


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux's /proc to cap the memory")
def test_a_line_too_long_for_the_memory_is_named_with_the_way_out(tmp_path, tiny_lm):
    """Before: a 30k-token line under a memory cap ended in torch's allocator traceback. A
    sentence-level model scores a line whole, so the message says why and to split it."""
    (tmp_path / "long.txt").write_text(" ".join(["the"] * 30000) + "\n")
    # the cap: what the process holds once everything is imported, plus 512 MB; the line's
    # 30,001 x 6,208 output probabilities alone are 745 MB
    launch = ("import resource, sys, torch, fairseq, alm_plugin.cli.score as score; "
              "held = int(next(l for l in open('/proc/self/status') if l.startswith('VmSize')).split()[1]) * 1024; "
              "resource.setrlimit(resource.RLIMIT_AS, (held + 2 ** 29, held + 2 ** 29)); "
              "sys.argv[0] = 'alm-score'; sys.exit(score.main(sys.argv[1:]))")
    proc = subprocess.run([sys.executable, "-c", launch, "--path", str(tiny_lm), "--data", SAMPLE_DATA, "--cpu",
                           str(tmp_path / "long.txt")], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 1 and "Traceback" not in proc.stderr and proc.stdout == "", proc.stderr[-3000:]
    assert last_line(proc.stderr).startswith("alm-score: error: out of memory scoring sentence 1 (30,001 tokens, "
                                             "</s> included"), proc.stderr[-3000:]
    assert last_line(proc.stderr).endswith("split the line into sentences")
    # several sentences in the batch: the way out is a smaller batch
    from alm_plugin.scoring import out_of_memory
    message = str(out_of_memory(RuntimeError("can't allocate memory: you tried to allocate 2000000000 bytes"),
                                [torch.zeros(5), torch.zeros(9)], [0, 1], 100, 8000))
    assert "a batch of 2 sentences (the longest, sentence 2, has 9 tokens, 2.0 GB in one piece)" in message
    assert message.endswith("lower --batch-tokens (now 8000), or split the long line")


def test_hub_refuses_an_empty_sentence(tiny_lm):
    from alm_plugin.models.lstm_lm import LSTMLanguageModel
    lm = LSTMLanguageModel.from_pretrained(str(tiny_lm.parent), tiny_lm.name, SAMPLE_DATA)
    assert torch.isfinite(lm.score("the cat")["positional_scores"]).all()
    with pytest.raises(ValueError, match="cannot score an empty sentence"):
        lm.score(" ")


# ----------------------------------------------------------------------------- changed options

TINY_ATTENTIVE = ["--arch", "attentive_lm", "--embed-dim", "16", "--hidden-size", "16", "--optimizer", "adam",
                  "--lr", "0.01", "--batch-size", "64", "--no-epoch-checkpoints", "--disable-validation"]


def test_an_option_that_changes_the_function_cannot_change_on_load(tmp_path):
    run("train", SAMPLE_DATA, *TRAIN_COMMON, *TINY_ATTENTIVE, "--max-update", "2", "--save-dir", tmp_path)
    checkpoint = tmp_path / "checkpoint_last.pt"
    evaluate = ["--path", checkpoint, "--user-dir", "alm_plugin", "--task", "sentence_language_modeling", "--cpu"]
    code, output = run("eval_lm", SAMPLE_DATA, *evaluate, "--model-overrides", "{'concat_activation': 'linear'}",
                       check=False)
    assert code != 0 and ("this checkpoint was trained with --concat-activation tanh, but the model being "
                          "built has --concat-activation linear") in last_line(output)
    run("eval_lm", SAMPLE_DATA, *evaluate, "--model-overrides", "{'dropout': 0.1}")  # training-only: fine
    code, output = run("train", SAMPLE_DATA, *TRAIN_COMMON, *TINY_ATTENTIVE, "--attention-sentinel",
                       "--max-update", "4", "--save-dir", tmp_path, check=False)  # resumes checkpoint_last
    # fairseq-train re-raises it as "Cannot load model parameters ...", after our message
    assert code != 0 and "trained with --attention-sentinel False, but the model being built has " \
                         "--attention-sentinel True" in output
