"""DDP compatibility on CPU: two gloo processes give the gradients of one process on the
concatenated batch, for every model variant, under PyTorch DDP's default
``find_unused_parameters=False`` (fairseq's default ``pytorch_ddp`` backend), which raises
on the second step if a parameter got no gradient in the first."""
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from fairseq.data import Dictionary
from fairseq.distributed import ModuleProxyWrapper

from alm_plugin.criterions.attention_cross_entropy import AttentionCrossEntropyCriterion
from alm_plugin.models.amsrn import AMSRNConfig, AMSRNLanguageModel, AMSRNDecoder
from alm_plugin.models.attentive_lm import AttentiveLanguageModel, AttentiveLMConfig, AttentiveLMDecoder

VARIANTS = [
    ("attentive_lm single", AttentiveLanguageModel, AttentiveLMDecoder, AttentiveLMConfig, dict(attention_score="single")),
    ("attentive_lm combined+sentinel", AttentiveLanguageModel, AttentiveLMDecoder, AttentiveLMConfig,
     dict(attention_score="combined", attention_sentinel=True)),
    *[(f"amsrn {s}", AMSRNLanguageModel, AMSRNDecoder, AMSRNConfig, dict(memory_selection=s))
      for s in ("independent", "tied", "complementary", "none")],
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
    return {"net_input": {"src_tokens": src, "src_lengths": src.ne(d.pad()).sum(1)},
            "target": tokens, "ntokens": int(tokens.ne(d.pad()).sum()), "id": torch.arange(4)}


def shard(sample, rank, world):
    rows = slice(rank * 4 // world, (rank + 1) * 4 // world)
    return {"net_input": {k: v[rows] for k, v in sample["net_input"].items()},
            "target": sample["target"][rows], "ntokens": int(sample["target"][rows].ne(1).sum()),
            "id": sample["id"][rows]}


def build(variant, d):
    _, model_cls, decoder_cls, config_cls, overrides = variant
    torch.manual_seed(0)
    cfg = config_cls(**{"embed_dim": 8, "hidden_size": 8, "num_layers": 2, "dropout": 0.0, **overrides})
    return model_cls(decoder_cls(cfg, d))


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
    criterion = AttentionCrossEntropyCriterion(Task(d), attention_entropy_weight=0.3)
    for variant in VARIANTS:
        # fairseq's own pytorch_ddp wrapping (ModuleProxyWrapper keeps the model's methods reachable)
        model = ModuleProxyWrapper(torch.nn.parallel.DistributedDataParallel(build(variant, d)))
        grads = step_gradients(model, criterion, [shard(batch(d, s), rank, world) for s in range(2)], 1.0)
        if rank == 0:
            results[variant[0]] = [g.numpy() for g in grads]
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_gloo_processes_match_one_process_on_the_whole_batch():
    manager = mp.Manager()
    results = manager.dict()
    mp.spawn(worker, args=(2, free_port(), results), nprocs=2, join=True)
    d = dictionary()
    criterion = AttentionCrossEntropyCriterion(Task(d), attention_entropy_weight=0.3)
    for variant in VARIANTS:
        # DDP averages the ranks' gradients of their shard sums: the whole batch's sum over 2
        expected = step_gradients(build(variant, d), criterion, [batch(d, s) for s in range(2)], 0.5)
        got = results[variant[0]]
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            torch.testing.assert_close(torch.from_numpy(g), e, atol=1e-5, rtol=1e-4, msg=variant[0])
