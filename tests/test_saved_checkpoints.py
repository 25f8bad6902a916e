"""A checkpoint saved by the plugin's code of an earlier layout (tests/fixtures/attentive_lm_single_8.pt: an
attentive_lm, single score, 8 wide, four Adam updates on the sample) still loads in fairseq-eval-lm, alm-score and
the hub, and scores the sample's valid split and a sentence to the figures it gave when it was saved."""

import os

from cli import eval_lm_result, run, run_module
from conftest import ROOT, SAMPLE_DATA

SAVED = os.path.join(ROOT, "tests", "fixtures", "attentive_lm_single_8.pt")
SENTENCE = "the cat sat on the mat"


def test_a_checkpoint_of_an_earlier_layout_scores_as_it_did_in_eval_lm_alm_score_and_the_hub():
    before = open(SAVED, "rb").read()
    output = run(
        "eval_lm",
        SAMPLE_DATA,
        "--path",
        SAVED,
        "--user-dir",
        "alm_plugin",
        "--task",
        "sentence_language_modeling",
        "--cpu",
    )[1]
    assert eval_lm_result(output) == (12.5297, 5913.04)
    code, stdout, stderr = run_module(
        "alm_plugin.cli.score", "--path", SAVED, "--data", SAMPLE_DATA, "--cpu", stdin=SENTENCE
    )
    assert code == 0 and "loss 8.6774 nats" in stderr + stdout, stderr
    from alm_plugin.models.attentive_lm import AttentiveLanguageModel

    hub = AttentiveLanguageModel.from_pretrained(os.path.dirname(SAVED), os.path.basename(SAVED), SAMPLE_DATA)
    nats = -hub.eval().score(SENTENCE)["positional_scores"].sum().item()
    assert round(nats, 4) == 52.0725  # its 6 words: fairseq's hub scores no </s>
    assert open(SAVED, "rb").read() == before
