"""Where fairseq 0.12 slips on devices and precision: ``--bf16``, and ``--fp16`` where fairseq-train would
train on the CPU, refused in one line; the clipped gradient norm kept on the gradients' device (``--cpu`` on a
machine with a GPU); and two of fairseq's per-update host costs cut, the numbers the same."""

import torch
from fairseq import tasks, utils
from fairseq.dataclass.configs import CommonConfig
from fairseq.optim.fp16_optimizer import FP16Optimizer

from ..errors import OptionError
from ..options.reading import read_options


def _root(cfg):
    """The whole config a task's (or model's) config belongs to: fairseq hands ``setup_task`` the
    ``task`` node of its root config (``omegaconf`` keeps the parent); a legacy ``Namespace`` is
    the whole config itself."""
    parent = getattr(cfg, "_get_parent", None)
    while parent is not None and parent() is not None:
        cfg = parent()
        parent = getattr(cfg, "_get_parent", None)
    return cfg


def refuse_bf16(cfg) -> None:
    """Refuse ``--bf16`` / ``--memory-efficient-bf16`` in the config ``cfg`` belongs to."""
    root = _root(cfg)
    common = root.get("common", None) if hasattr(root, "get") else None
    given = read_options(CommonConfig, common if common is not None else root, "bf16", "memory_efficient_bf16")
    if not (given.bf16 or given.memory_efficient_bf16):
        return
    flag = "--memory-efficient-bf16" if given.memory_efficient_bf16 else "--bf16"
    raise OptionError(
        f"{flag}: fairseq 0.12 reads it as --tpu, which needs torch_xla (fairseq-train dies, "
        "fairseq-eval-lm and fairseq-validate ignore it and compute in float32): drop it, or for "
        "mixed precision on a GPU use --fp16 or --amp"
    )


_fairseq_setup_task = getattr(tasks.setup_task, "fairseq_original", tasks.setup_task)


def setup_task(cfg, **kwargs):
    """fairseq's ``tasks.setup_task``, after refusing ``--bf16``."""
    refuse_bf16(cfg)
    return _fairseq_setup_task(cfg, **kwargs)


setup_task.fairseq_original = _fairseq_setup_task


def refuse_fp16_on_the_cpu(params) -> None:
    """``fairseq-train --fp16`` with the parameters ``params`` on the CPU."""
    if any(getattr(p, "is_cuda", False) for p in params):
        return
    raise OptionError(
        "--fp16: fairseq's float16 training keeps a float32 copy of the weights on the GPU, and this run "
        "trains on the CPU (--cpu, or no GPU torch can use): drop --fp16 (the CPU trains in float32), "
        "or train on a GPU without --cpu"
    )


_fairseq_build_fp16_optimizer = getattr(
    FP16Optimizer.build_optimizer, "fairseq_original", FP16Optimizer.__dict__["build_optimizer"].__func__
)


def build_fp16_optimizer(cls, cfg, params, **kwargs):
    """fairseq's ``FP16Optimizer.build_optimizer``, after refusing the CPU."""
    params = list(params)
    common = getattr(cfg, "common", cfg)  # a legacy Namespace holds the common options itself
    flat = not read_options(CommonConfig, common, "fp16_no_flatten_grads").fp16_no_flatten_grads
    if flat:  # the flat copy is the one made on the GPU
        refuse_fp16_on_the_cpu(params)
    return _fairseq_build_fp16_optimizer(cls, cfg, params, **kwargs)


build_fp16_optimizer.fairseq_original = _fairseq_build_fp16_optimizer


_fairseq_clip_grad_norm_ = getattr(utils.clip_grad_norm_, "fairseq_original", utils.clip_grad_norm_)


def _has_grad(p):
    return p is not None and getattr(p, "grad", None) is not None


@torch.no_grad()
def clip_grad_norm_(params, max_norm, aggregate_norm_fn=None) -> torch.Tensor:
    """fairseq's ``utils.clip_grad_norm_``, the per-gradient norms taken in one ``torch._foreach_norm`` and
    the total norm on the gradients' device."""
    if isinstance(params, torch.Tensor):
        params = [params]
    params = list(params)
    grads = [p.grad.detach() for p in params if _has_grad(p) and not hasattr(p, "expert")]
    # apex's kernel, a single gradient, or gradients on several devices: fairseq's own code
    if len(grads) < 2 or utils.multi_tensor_l2norm_available or not _on_one_device(grads):
        return _fairseq_clip_grad_norm_(params, max_norm, aggregate_norm_fn)
    expert_grads = [p.grad.detach() for p in params if _has_grad(p) and hasattr(p, "expert")]
    # fairseq's figure: the norm of the per-gradient float32 norms
    total_norm = torch.norm(torch.stack(torch._foreach_norm(grads, 2, dtype=torch.float32)))
    if aggregate_norm_fn is not None:
        total_norm = aggregate_norm_fn(total_norm)
    if max_norm > 0:
        clip_coef = (float(max_norm) / (total_norm + 1e-6)).clamp_(max=1)
        torch._foreach_mul_(grads + expert_grads, clip_coef)
    return total_norm


clip_grad_norm_.fairseq_original = _fairseq_clip_grad_norm_


def _on_one_device(tensors) -> bool:
    device = tensors[0].device
    return device.type in ("cpu", "cuda") and all(t.device == device for t in tensors)


_fairseq_set_torch_seed = getattr(utils.set_torch_seed, "fairseq_original", utils.set_torch_seed)


class set_torch_seed(_fairseq_set_torch_seed):
    """fairseq's ``utils.set_torch_seed`` (a context manager that restores the generators' state on exit),
    seeding the CPU generator and CUDA's directly rather than through ``torch.manual_seed``."""

    def __init__(self, seed):
        assert isinstance(seed, int)
        self.rng_state = utils.get_rng_state()
        torch.default_generator.manual_seed(seed)
        if torch.cuda.is_initialized():
            for generator in torch.cuda.default_generators:
                generator.manual_seed(seed)
        elif torch.cuda.is_available():
            torch.cuda.manual_seed_all(seed)  # CUDA not initialised: queued, as fairseq queues it
        if utils.xm is not None:
            utils.xm.set_rng_state(seed)


set_torch_seed.fairseq_original = _fairseq_set_torch_seed


def install():
    """Put them in fairseq's modules (once, however often the plugin is imported)."""
    tasks.setup_task = setup_task
    FP16Optimizer.build_optimizer = classmethod(build_fp16_optimizer)
    # fairseq's optimizers look utils.clip_grad_norm_ up at each call: the module's attribute reaches them
    utils.clip_grad_norm_ = clip_grad_norm_  # fairseq: one torch.norm per gradient, in Python
    utils.set_torch_seed = set_torch_seed  # fairseq: torch.manual_seed, a traceback formatted per update
