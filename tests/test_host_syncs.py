"""No device value read on the host by the plugin in a training update.

On a GPU every ``.item()`` / ``bool()`` / ``int()`` of a tensor, ``nonzero``, ``masked_select``,
``torch.equal`` and boolean-mask indexing makes the host wait until the device has caught up;
one in the criterion or the attention stalls every update. ``HostSyncs`` (a ``TorchDispatchMode``,
shared with ``benchmarks/host_overhead.py``) counts them on the CPU in one ``trainer.train_step``
of fairseq's own trainer, for the sentence and the document task, the single and combined
attentive LM and AMSRN, on a batch with padding (the document task's carrying the previous
chunk's state). The plugin's count is 0 (before: 4 to 6 an update); what is left is fairseq's
trainer and meters (docs/benchmarks.md). The figures are those the device reads gave.
"""

import os

import pytest
import torch
from conftest import SAMPLE_DATA, fairseq_trainer
from fairseq import metrics

import alm_plugin
from alm_plugin.criterions.attention_cross_entropy import AttentionCrossEntropyCriterion
from alm_plugin.modules.history_attention import CausalHistoryAttention, CombinedScore
from alm_plugin.modules.stream_carry import StreamCarry, next_chunk, stream_chunk
from benchmarks.host_overhead import CASES, HostSyncs, case_args

FAIRSEQS = ("fairseq/trainer.py:", "fairseq/logging/meters.py:")  # the trainer's checks and its logs


def padded(batch, pad) -> bool:
    return bool(batch["target"].eq(pad).any())


@pytest.fixture(scope="module", params=list(CASES))
def update(request):
    """``(trainer, batch, syncs)``: one update counted, after one on the batch before (a padded
    batch whose stream state, in the document task, comes from that one)."""
    torch.manual_seed(0)
    trainer, batches = fairseq_trainer(case_args(request.param, SAMPLE_DATA))
    pad = trainer.task.target_dictionary.pad()
    index = next(i for i in range(1, len(batches)) if padded(batches[i], pad))
    with metrics.aggregate("train_inner"):  # the aggregators fairseq-train has open
        trainer.train_step([batches[index - 1]])
        with HostSyncs() as syncs:
            trainer.train_step([batches[index]])
    return trainer, batches[index], syncs


def test_a_training_update_reads_no_device_value_of_ours(update):
    trainer, batch, syncs = update
    assert padded(batch, trainer.task.target_dictionary.pad())
    assert syncs.ours == 0, dict(syncs.found)
    theirs = [where for where in syncs.found if not where.startswith(FAIRSEQS)]
    assert not theirs, f"reads outside fairseq's trainer and meters (the backward?): {dict(syncs.found)}"


def test_the_figures_are_those_the_device_reads_gave(update):
    """The criterion's figures from the collate's counts equal those it reads from the batch
    without them (today's code path: a boolean-mask index, ``int(rows)``), to the bit, and so do
    the logged loss, ppl, paper_ppl and attention entropy."""
    trainer, batch, _ = update
    model, criterion = trainer.model, trainer.criterion
    assert "scored_rows" in batch and "first_words" in batch
    device_read = {k: v for k, v in batch.items() if k not in ("scored_rows", "first_words")}
    model.eval()
    with torch.no_grad():
        logs = [criterion(model, sample)[2] for sample in (batch, device_read)]
    model.train()
    assert set(logs[0]) == set(logs[1])
    attends = "attn_entropy" in logs[1]  # every case but the LSTM's
    assert attends == (type(trainer.model).__name__ != "LSTMLanguageModel")
    for key in (
        "loss",
        "nll_loss",
        "paper_nll_loss",
        "sample_size",
        *(("attn_entropy", "attn_entropy_rows") * attends),
    ):
        assert torch.equal(torch.as_tensor(logs[0][key]), torch.as_tensor(logs[1][key])), key
    smoothed = []
    for log in logs:
        with metrics.aggregate() as agg:
            AttentionCrossEntropyCriterion.reduce_metrics([log])
            smoothed.append(agg.get_smoothed_values())
    assert smoothed[0] == smoothed[1] and {"ppl", "paper_ppl", *("attn_entropy",) * attends} <= set(smoothed[0])


@pytest.mark.parametrize(
    "window,initial_slot,include_current",
    [(0, False, False), (0, True, True), (3, False, False), (3, True, False), (2, True, True)],
)
def test_the_pairs_found_on_the_host_are_those_nonzero_finds(window, initial_slot, include_current):
    """CombinedScore computes the (query, slot) pairs ``_allowed`` permits: found on the host from
    the shapes, the same pairs in the same order as ``nonzero`` of the device's mask, in every
    chunk of queries, with a carried past (``lead``)."""
    attention = CausalHistoryAttention(
        CombinedScore(4, 3), include_current=include_current, initial_slot=initial_slot, window=window
    )
    for lead in (int(initial_slot), int(initial_slot) + 4):
        slots = lead + 7
        slot_times = torch.arange(slots) - lead + 1
        if initial_slot:
            slot_times[0] = attention._slot_times(slots, lead)[0]
        for start, end in ((0, 7), (0, 3), (3, 7), (6, 7)):
            last_slot = min(slots, end + lead)
            expected = attention._allowed(torch.arange(start + 1, end + 1), slot_times[:last_slot]).nonzero(
                as_tuple=True
            )
            found = attention._pairs(start, end, last_slot, lead, torch.device("cpu"))
            assert all(torch.equal(a, b) for a, b in zip(found, expected))


@pytest.mark.parametrize("score", ["single", "combined"])
def test_a_padding_mask_without_pads_changes_no_bit(score):
    """The mask is applied whether or not the batch has pads (asking would read it on the host):
    without pads the attention is, to the bit, what it was without a mask."""
    from alm_plugin.models.attentive_lm import SCORES

    attention = CausalHistoryAttention(SCORES[score](6, 5))
    states = torch.randn(3, 9, 6)
    unmasked = attention(states)
    masked = attention(states, torch.zeros(3, 9, dtype=torch.bool))
    assert all(torch.equal(a, b) for a, b in zip(unmasked, masked))


def test_the_carry_decides_on_the_host_as_it_did_on_the_device():
    """With the batch's place on the host (``stream_chunk``) the carry resumes exactly where
    comparing the stream ids and positions on the device did."""
    ids = torch.arange(4)
    batches = [(ids, 0), (ids, 5), (ids, 10), (ids, 20), (torch.arange(1, 5), 25), (ids, 0), (ids, 0)]
    decisions = {}
    for on_host in (True, False):
        carry, decisions[on_host] = StreamCarry(), []
        for stream_ids, position in batches:
            positions = torch.full((4,), position)
            chunk = stream_chunk(stream_ids, position) if on_host else None
            decisions[on_host].append(carry.resume(stream_ids, positions, "train", chunk))
            carry.save(stream_ids, positions + 5, position, "train", next_chunk(chunk, 5))
    assert decisions[True] == decisions[False] == [None, 0, 5, None, None, None, None]


def read_from(path, name):
    """``.item()`` of a tensor in a module written at ``path``, counted: ``HostSyncs.found``."""
    import importlib.util

    path.parent.mkdir(parents=True)
    path.write_text("def read(value):\n    return value.item()\n")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with HostSyncs() as syncs:
        module.read(torch.tensor(1.0))
    return syncs


def test_a_read_is_placed_in_the_module_that_made_it_wherever_python_is_installed(tmp_path):
    """fairseq installed in a Python under /opt/torch/.venv (the GPU image's): its reads are
    fairseq's, not put down to the plugin's frame that called it (torch's own frames are skipped
    by torch's directory, not by a ``/torch/`` anywhere in the path)."""
    syncs = read_from(tmp_path / "opt" / "torch" / ".venv" / "site-packages" / "meters.py", "meters_under_a_torch_path")
    assert list(syncs.found) == ["meters.py:2 _local_scalar_dense"]


def test_only_the_imported_plugin_counts_as_ours_in_a_clone_named_alm_plugin(tmp_path, monkeypatch):
    """A user's clone is a directory named alm_plugin: its benchmarks and tests are not the plugin; nor is
    generated code ("<string>", as dataclasses write it), wherever the process runs."""
    syncs = read_from(tmp_path / "alm_plugin" / "benchmarks" / "timing.py", "a_clones_benchmark")
    assert syncs.ours == 0, dict(syncs.found)
    assert [where.rsplit("/", 2)[-2:] for where in syncs.found] == [["benchmarks", "timing.py:2 _local_scalar_dense"]]
    generated = {}
    monkeypatch.chdir(os.path.dirname(alm_plugin.__file__))  # from inside the plugin: "<string>" is no file of it
    exec(compile("def read(value):\n    return value.item()\n", "<string>", "exec"), generated)
    with HostSyncs() as syncs:
        generated["read"](torch.tensor(1.0))
    assert list(syncs.found) == ["<string>:2 _local_scalar_dense"]


def test_the_benchmark_refuses_a_plugin_folder_it_could_not_count_as_ours(tmp_path):
    """fairseq imports a --user-dir by its folder's name; under another name the plugin's reads would count 0."""
    import contextlib

    from benchmarks.host_overhead import plugin_directory

    (tmp_path / "my_plugin").mkdir()
    with pytest.raises(SystemExit, match="must be named alm_plugin"), contextlib.ExitStack() as keep:
        plugin_directory(str(tmp_path / "my_plugin"), keep)
