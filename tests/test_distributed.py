"""DDP compatibility on CPU: two gloo processes give the gradients of one process on the
concatenated batch, for every model variant, under PyTorch DDP's default
``find_unused_parameters=False`` (fairseq's default ``pytorch_ddp`` backend), which raises
on the second step if a parameter got no gradient in the first."""

import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from fairseq.data import Dictionary
from fairseq.distributed import ModuleProxyWrapper

from alm_plugin.criterions.attention_cross_entropy import AttentionCrossEntropyCriterion
from alm_plugin.criterions.open_vocabulary_cross_entropy import OpenVocabularyCrossEntropy
from alm_plugin.models.amsrn import AMSRNConfig, AMSRNDecoder, AMSRNLanguageModel
from alm_plugin.models.attentive_lm import AttentiveLanguageModel, AttentiveLMConfig, AttentiveLMDecoder
from alm_plugin.models.char_cache_lm import CharCacheLanguageModel, CharCacheLMConfig, HierarchicalCharDecoder
from alm_plugin.models.char_lstm_lm import CharLSTMDecoder, CharLSTMLanguageModel, CharLSTMLMConfig
from alm_plugin.models.pointer_sentinel_lm import (
    PointerSentinelConfig,
    PointerSentinelDecoder,
    PointerSentinelLanguageModel,
)

VARIANTS = [
    (
        "attentive_lm single",
        AttentiveLanguageModel,
        AttentiveLMDecoder,
        AttentiveLMConfig,
        dict(attention_score="single"),
    ),
    (
        "attentive_lm combined+sentinel",
        AttentiveLanguageModel,
        AttentiveLMDecoder,
        AttentiveLMConfig,
        dict(attention_score="combined", attention_sentinel=True),
    ),
    *[
        (f"amsrn {s}", AMSRNLanguageModel, AMSRNDecoder, AMSRNConfig, dict(memory_selection=s))
        for s in ("independent", "tied", "complementary", "none")
    ],
    # the adaptive softmax: tails 12-13 and 14-15 get no target on rank 0 in the first step, so
    # their untied parameters would get no gradient there if they left the graph
    (
        "attentive_lm adaptive (tied)",
        AttentiveLanguageModel,
        AttentiveLMDecoder,
        AttentiveLMConfig,
        dict(adaptive_softmax_cutoff="8,14"),
    ),
    (
        "amsrn adaptive untied",
        AMSRNLanguageModel,
        AMSRNDecoder,
        AMSRNConfig,
        dict(
            adaptive_softmax_cutoff="12,14,16",
            adaptive_softmax_untied=True,
            adaptive_softmax_factor=2.0,
            adaptive_softmax_dropout=0.0,
        ),
    ),
    (
        "pointer_sentinel_lm adaptive",
        PointerSentinelLanguageModel,
        PointerSentinelDecoder,
        PointerSentinelConfig,
        dict(adaptive_softmax_cutoff="12,14,16", pointer_window=5),
    ),
]
# character models: batches are consecutive chunks of 4 streams, so step 2 resumes step 1's
# carried state (context LSTM, cache) per stream, on each rank for its own streams
CHAR_VARIANTS = [
    ("char_cache_lm", CharCacheLanguageModel, HierarchicalCharDecoder, CharCacheLMConfig, dict(cache_size=3)),
    ("hclm", CharCacheLanguageModel, HierarchicalCharDecoder, CharCacheLMConfig, dict(cache_size=0)),
    ("char_lstm_lm", CharLSTMLanguageModel, CharLSTMDecoder, CharLSTMLMConfig, {}),
]


def dictionary():
    d = Dictionary()
    for i in range(20):
        d.add_symbol(f"w{i}")
    return d


class Task:
    def __init__(self, d):
        self.source_dictionary = self.target_dictionary = d


def batch(d, step):
    g = torch.Generator().manual_seed(step)
    tokens = torch.randint(d.nspecial, len(d), (4, 9), generator=g)
    tokens[1, 6:] = d.pad()  # a padded sentence
    src = torch.cat([torch.full((4, 1), d.eos()), tokens[:, :-1]], 1).masked_fill(tokens.eq(d.pad()), d.pad())
    return {
        "net_input": {"src_tokens": src, "src_lengths": src.ne(d.pad()).sum(1)},
        "target": tokens,
        "ntokens": int(tokens.ne(d.pad()).sum()),
        "id": torch.arange(4),
    }


def stream_batch(d, step):
    g = torch.Generator().manual_seed(100)
    stream = torch.randint(d.nspecial, len(d), (4, 19), generator=g)
    stream[:, 0] = d.eos()
    stream[3, 15:] = d.pad()  # the end of the last stream
    chunk = stream[:, 9 * step : 9 * step + 10]
    target = chunk[:, 1:]
    return {
        "net_input": {
            "src_tokens": chunk[:, :-1],
            "target_tokens": target,
            "stream_ids": torch.arange(4),
            "stream_positions": torch.full((4,), 9 * step),
        },
        "target": target,
        "ntokens": int(target.ne(d.pad()).sum()),
        "nchars": 1,
        "nsentences": 4,
        "id": torch.arange(4),
    }


def shard(sample, rank, world):
    rows = slice(rank * 4 // world, (rank + 1) * 4 // world)
    return {
        **sample,
        "net_input": {k: v[rows] for k, v in sample["net_input"].items()},
        "target": sample["target"][rows],
        "ntokens": int(sample["target"][rows].ne(1).sum()),
        "id": sample["id"][rows],
    }


def build(variant, d):
    _, model_cls, decoder_cls, config_cls, overrides = variant
    torch.manual_seed(0)
    if config_cls in (CharCacheLMConfig, CharLSTMLMConfig):
        cfg = config_cls(**{"char_embed_dim": 5, "hidden_size": 6, "dropout": 0.0, **overrides})
    else:
        cfg = config_cls(**{"embed_dim": 8, "hidden_size": 8, "num_layers": 2, "dropout": 0.0, **overrides})
    return model_cls(decoder_cls(cfg, d))


def suites(d):
    """(variants, criterion, batch maker) for the word-softmax and the character models."""
    return [
        (VARIANTS, AttentionCrossEntropyCriterion(Task(d), attention_entropy_weight=0.3), batch),
        (CHAR_VARIANTS, OpenVocabularyCrossEntropy(Task(d)), stream_batch),
    ]


def step_gradients(model, criterion, samples, scale):
    """Two steps; returns the gradients of the second (after an SGD update)."""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for sample in samples:
        optimizer.zero_grad()
        loss, _, _ = criterion(model, sample)
        (loss * scale).backward()
        grads = [p.grad.clone() for p in model.parameters()]
        optimizer.step()
    return grads


def worker(rank, world, port, results):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    d = dictionary()
    for variants, criterion, make_batch in suites(d):
        for variant in variants:
            # fairseq's own pytorch_ddp wrapping (ModuleProxyWrapper keeps the model's methods reachable)
            model = ModuleProxyWrapper(torch.nn.parallel.DistributedDataParallel(build(variant, d)))
            grads = step_gradients(model, criterion, [shard(make_batch(d, s), rank, world) for s in range(2)], 1.0)
            if rank == 0:
                results[variant[0]] = [g.numpy() for g in grads]
            del model
    dist.barrier()
    dist.destroy_process_group()
    # skip the interpreter's teardown: gloo's threads, destroyed with the statics, can abort
    # ("terminate called without an active exception", SIGABRT) after the work is done, as CI saw
    os._exit(0)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_gloo_processes_match_one_process_on_the_whole_batch():
    d = dictionary()
    # DDP averages the ranks' gradients of their shard sums: the whole batch's sum over 2. Computed first,
    # so that the ranks, forked from this process, start with its torch and models warmed up
    expected = {
        variant[0]: step_gradients(build(variant, d), criterion, [make_batch(d, s) for s in range(2)], 0.5)
        for variants, criterion, make_batch in suites(d)
        for variant in variants
    }
    manager = mp.Manager()
    results = manager.dict()
    # forked from this process (which has imported torch, fairseq and the plugin), not spawned: a spawned
    # process imports them all again; spawned where torch runs several threads, whose OpenMP pool a
    # forked child inherits without its threads and waits on for ever
    method = "fork" if torch.get_num_threads() == 1 else "spawn"
    mp.start_processes(worker, args=(2, free_port(), results), nprocs=2, join=True, start_method=method)
    for name, grads in expected.items():
        got = results[name]
        assert len(got) == len(grads)
        for g, e in zip(got, grads):
            torch.testing.assert_close(torch.from_numpy(g), e, atol=1e-5, rtol=1e-4, msg=name)
