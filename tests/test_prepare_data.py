"""examples/language_model/prepare_lm_data.py: sentence splitting, sacremoses, binarising."""
import os
import subprocess
import sys

from fairseq.data import Dictionary, data_utils

from conftest import ROOT, needs_shared_data

sys.path.insert(0, os.path.join(ROOT, "examples", "language_model"))
from prepare_lm_data import split_sentences  # noqa: E402

SCRIPT = os.path.join(ROOT, "examples", "language_model", "prepare_lm_data.py")


def test_paragraphs_split_after_sentence_final_tokens():
    line = "It was released in 2011 . Was it good ? Yes ! The U.S. version followed"
    assert list(split_sentences(line)) == ["It was released in 2011 .", "Was it good ?", "Yes !",
                                           "The U.S. version followed"]


def test_raw_text_is_tokenised_and_binarised(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    for split in ("train", "valid", "test"):
        (raw / f"{split}.txt").write_text("Hello, world! It's a test.\n\nSecond line (with brackets).\n")
    subprocess.run([sys.executable, SCRIPT, "--raw-dir", raw, "--tokenize", "en", "--name", "tiny",
                    "--destdir", tmp_path / "bin", "--text-dir", tmp_path / "text"], check=True, capture_output=True, cwd=tmp_path)
    dictionary = Dictionary.load(str(tmp_path / "bin" / "tiny" / "dict.txt"))
    assert "," in dictionary.symbols and "(" in dictionary.symbols  # sacremoses split punctuation
    sentences = data_utils.load_indexed_dataset(str(tmp_path / "bin" / "tiny" / "train"), dictionary)
    assert len(sentences) == 2  # the blank line is dropped
    assert dictionary.string(sentences[0]) == "Hello , world ! It &apos;s a test ." or \
        dictionary.string(sentences[0]) == "Hello , world ! It 's a test ."


@needs_shared_data("wikitext-2", "valid.tokens")
def test_shipped_sample_is_what_the_script_makes(tmp_path):
    """The committed data-bin/wikitext-2-sample is reproducible from ../shared/data."""
    subprocess.run([sys.executable, SCRIPT, "--corpus", "wikitext-2", "--sample-sentences", "4000",
                    "--threshold", "2", "--name", "wikitext-2-sample", "--destdir", tmp_path,
                    "--text-dir", tmp_path / "text"],
                   check=True, capture_output=True, cwd=tmp_path)
    for name in ("dict.txt", "valid.bin", "test.idx"):
        made = (tmp_path / "wikitext-2-sample" / name).read_bytes()
        shipped = open(os.path.join(ROOT, "data-bin", "wikitext-2-sample", name), "rb").read()
        assert made == shipped, name
