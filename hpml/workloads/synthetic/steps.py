"""A training step of the synthetic benchmark: Horovod's random batch on the device, the model wrapped for
the gradient sync being measured (DDP or Horovod-style), and benchmark_step with gradient accumulation."""

from __future__ import annotations

import contextlib
from typing import Callable

import torch
import torch.nn.functional as F
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import fp16_compress_hook
from torch.nn.parallel import DistributedDataParallel

from hpml.conf.workload.synthetic import GradientSync, SyntheticConfig
from hpml.workloads.common.distributed import DistContext
from hpml.workloads.common.random_inputs import random_images, random_labels
from hpml.workloads.synthetic.horovod_style import (
    MB,
    DistributedOptimizer,
    broadcast_optimizer_state,
    broadcast_parameters,
)

Step = Callable[[], None]


def random_batch(cfg: SyntheticConfig, batch: int, ctx: DistContext, seed: int):
    """One batch of random images and labels on the device, different on every rank (Horovod's data)."""
    generator = torch.Generator().manual_seed(seed + ctx.rank)
    images = random_images(batch, cfg.image_size, generator=generator)
    labels = random_labels(batch, cfg.num_classes, generator=generator)
    return images.to(ctx.device), labels.to(ctx.device)


def ddp_bucket_cap_mb(fusion_threshold_mb: float) -> float:
    """DDP's bucket_cap_mb for a fusion threshold. 0 (no fusion) becomes one byte: every gradient is larger,
    so each gets a bucket of its own. torch 2.11's DDP refuses 0 itself ("bucket_cap_mb should be set by
    now", seen on 2 H200s)."""
    return fusion_threshold_mb if fusion_threshold_mb > 0 else 1 / MB


def with_gradient_sync(model: torch.nn.Module, cfg: SyntheticConfig, ctx: DistContext, method: GradientSync):
    """(module to call, optimizer, context for a pass whose gradients are only accumulated)."""
    if method == GradientSync.ddp:
        ddp = DistributedDataParallel(model, device_ids=[ctx.local_rank] if ctx.device.type == "cuda" else None,
                                      bucket_cap_mb=ddp_bucket_cap_mb(cfg.fusion_threshold_mb),
                                      broadcast_buffers=cfg.ddp_broadcast_buffers)  # broadcasts rank 0's state
        if cfg.fp16_allreduce:
            ddp.register_comm_hook(None, fp16_compress_hook)
        return ddp, torch.optim.SGD(ddp.parameters(), lr=cfg.lr), ddp.no_sync
    optimizer = DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=cfg.lr),
                                     fusion_threshold_mb=cfg.fusion_threshold_mb,
                                     compression_fp16=cfg.fp16_allreduce,
                                     backward_passes_per_step=cfg.backward_passes_per_step)
    broadcast_parameters(model, root=0)
    broadcast_optimizer_state(optimizer, root=0)
    return model, optimizer, contextlib.nullcontext  # the hooks count the passes themselves


def make_step(module, optimizer, accumulate_only, images, labels, passes: int) -> Step:
    """Horovod's benchmark_step; with passes > 1, gradients of passes-1 passes accumulate before the last."""

    def step() -> None:
        optimizer.zero_grad()
        for micro in range(passes):
            with accumulate_only() if micro < passes - 1 else contextlib.nullcontext():
                loss = F.cross_entropy(module(images), labels)
                (loss / passes if passes > 1 else loss).backward()
        optimizer.step()

    return step
