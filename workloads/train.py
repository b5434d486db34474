"""DDP training of a torchvision classifier, timed per step and per epoch.

Started by torchrun, one worker per GPU (NCCL) or per CPU slot (gloo):
    python -m workloads.train --config <sweep>/points/<n>/config.yaml
Rank 0 writes result.json beside the config. Epoch 1 is warm-up: the reported epoch time is the mean of
epochs 2..N, each epoch's time being that of its slowest rank.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Sequence

import torch
import torch.distributed as dist
import torchvision
from omegaconf import OmegaConf
from torch.distributed.elastic.multiprocessing.errors import record
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler

from conf.schema import HpmlConfig, Scaling, TrainConfig
from workloads.common.config_io import load_point_config, parse_worker_args
from workloads.common.distributed import DistContext, all_gather_objects, host_identity, init_distributed
from workloads.common.environment import describe_environment
from workloads.common.result import build_result, utc_now, write_result
from workloads.common.timing import StepClock, wall_s
from workloads.common.checkpoint import CHECKPOINT_FILE, EpochCheckpoint
from workloads.data import build_dataset

EPOCH_METHOD = ("wall clock from a barrier at the epoch's start to the end of its last step (device "
                "synchronized), per rank; an epoch's time is its slowest rank's")


@dataclass
class EpochLog:
    """Raw measurements, one entry per epoch."""

    epoch_time_s_per_rank: List[List[float]] = field(default_factory=list)
    step_time_s: List[List[float]] = field(default_factory=list)  # rank 0's steps
    train_loss: List[float] = field(default_factory=list)
    train_accuracy: List[float] = field(default_factory=list)


def per_worker_batch(cfg: TrainConfig, world_size: int) -> int:
    return cfg.batch_size if cfg.scaling == Scaling.weak else cfg.batch_size // world_size


def build_loader(cfg: TrainConfig, config: HpmlConfig, ctx: DistContext) -> DataLoader:
    dataset = build_dataset(cfg, seed=config.sweep.seed)
    sampler = DistributedSampler(dataset, num_replicas=ctx.world_size, rank=ctx.rank, shuffle=True,
                                 seed=config.sweep.seed, drop_last=True)
    loader = DataLoader(dataset, batch_size=per_worker_batch(cfg, ctx.world_size), sampler=sampler,
                        num_workers=cfg.loader_workers, pin_memory=ctx.device.type == "cuda",
                        drop_last=True, persistent_workers=cfg.loader_workers > 0)
    if len(loader) == 0:
        raise ValueError(f"no full batch per worker: {len(dataset)} samples over {ctx.world_size} workers "
                         f"with batch {per_worker_batch(cfg, ctx.world_size)}; raise workload.synthetic_samples "
                         "or lower workload.batch_size")
    return loader


def train_epoch(model, loader, optimizer, ctx: DistContext, clock: StepClock) -> torch.Tensor:
    """One pass over this rank's shard; returns [loss sum, correct, samples] on the device (no sync)."""
    loss_fn = torch.nn.CrossEntropyLoss()
    totals = torch.zeros(3, device=ctx.device)
    clock.mark()
    for images, labels in loader:
        images = images.to(ctx.device, non_blocking=True)
        labels = labels.to(ctx.device, non_blocking=True)
        logits = model(images)
        loss = loss_fn(logits, labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        n = labels.numel()
        totals += torch.stack([loss.detach() * n, (logits.argmax(1) == labels).sum().float(),
                               torch.tensor(float(n), device=ctx.device)])
        clock.mark()
    return totals


def train(cfg: TrainConfig, config: HpmlConfig, ctx: DistContext, point_dir: Path) -> EpochLog:
    torch.manual_seed(config.sweep.seed)
    loader = build_loader(cfg, config, ctx)
    model = torchvision.models.get_model(cfg.model, num_classes=cfg.num_classes).to(ctx.device)
    model = DistributedDataParallel(model, device_ids=[ctx.local_rank] if ctx.device.type == "cuda" else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=cfg.momentum,
                                weight_decay=cfg.weight_decay)
    log, clock = EpochLog(), StepClock(ctx.device)
    checkpoint = EpochCheckpoint(point_dir / CHECKPOINT_FILE) if cfg.checkpoint else None
    first_epoch = checkpoint.restore(model, optimizer, log, ctx.device) if checkpoint else 0
    if first_epoch and ctx.is_main:
        print(f"[rank 0] resumed from {checkpoint.path} after epoch {first_epoch}", flush=True)
    for epoch in range(first_epoch, cfg.epochs):
        loader.sampler.set_epoch(epoch)  # a different shuffle each epoch, the same on every rank
        clock.reset()
        dist.barrier()
        start = wall_s()
        totals = train_epoch(model, loader, optimizer, ctx, clock)
        steps = clock.intervals_s()  # synchronizes the device
        elapsed = wall_s() - start
        dist.all_reduce(totals)
        loss_sum, correct, samples = totals.tolist()
        log.epoch_time_s_per_rank.append(all_gather_objects(elapsed))
        log.step_time_s.append(steps)
        log.train_loss.append(loss_sum / samples)
        log.train_accuracy.append(correct / samples)
        if ctx.is_main:
            print(f"[rank 0] epoch {epoch + 1}/{cfg.epochs}: {max(log.epoch_time_s_per_rank[-1]):.3f} s, "
                  f"loss {log.train_loss[-1]:.4f}, accuracy {log.train_accuracy[-1]:.4f}", flush=True)
            if checkpoint:  # after the epoch's clock stopped: saving is not part of the epoch time
                checkpoint.save(epoch + 1, model, optimizer, log)
        dist.barrier()
    return log


def summarize(log: EpochLog, cfg: TrainConfig, world_size: int, steps_per_epoch: int) -> Dict:
    """Raw arrays and the numbers derived from them (epochs 2..N; epoch 1 is warm-up)."""
    batch = per_worker_batch(cfg, world_size)
    epoch_times = [max(ranks) for ranks in log.epoch_time_s_per_rank]
    timed_epochs = epoch_times[1:]
    timed_steps = [s for epoch in log.step_time_s[1:] for s in epoch]
    samples_per_epoch = steps_per_epoch * batch * world_size
    measurements = {
        "epoch_time_s": epoch_times,
        "epoch_time_s_per_rank": log.epoch_time_s_per_rank,
        "step_time_s": log.step_time_s,
        "train_loss": log.train_loss,
        "train_accuracy": log.train_accuracy,
        "steps_per_epoch": steps_per_epoch,
        "per_worker_batch": batch,
        "global_batch": batch * world_size,
        "samples_per_epoch": samples_per_epoch,
    }
    epoch_mean = statistics.fmean(timed_epochs)
    derived = {
        "timed_epochs": len(timed_epochs),
        "epoch_time_s": epoch_mean,
        "epoch_time_std_s": statistics.pstdev(timed_epochs),
        "step_time_median_s": statistics.median(timed_steps),
        "samples_per_s": samples_per_epoch / epoch_mean,
        "final_train_loss": log.train_loss[-1],
        "final_train_accuracy": log.train_accuracy[-1],
    }
    return {"measurements": measurements, "derived": derived}


@record
def main(argv: Sequence[str] | None = None) -> None:
    args = parse_worker_args(argv)
    point_dir = Path(args.config).resolve().parent
    config = load_point_config(args.config)
    raw_config = OmegaConf.to_container(OmegaConf.load(args.config))
    started = utc_now()
    cfg: TrainConfig = config.workload
    ctx = init_distributed(cfg.device, cfg.backend, config.resources)
    ranks = all_gather_objects(host_identity())
    environment = describe_environment(ranks, ctx.world_size, ctx.backend, ctx.device.type)
    clock_method = StepClock(ctx.device).method
    status, reason, body = "ok", None, {"measurements": {}, "derived": {}}
    try:
        log = train(cfg, config, ctx, point_dir)
        body = summarize(log, cfg, ctx.world_size, len(log.step_time_s[0]))
    except torch.OutOfMemoryError as error:
        status, reason = "oom", f"out of memory: {str(error).splitlines()[0]}"
        raise
    except Exception as error:
        status, reason = "failed", f"{type(error).__name__}: {error}"
        raise
    finally:
        if ctx.is_main:
            timing = {"epoch": EPOCH_METHOD, "step": clock_method}
            write_result(point_dir, build_result(
                config=raw_config, point_dir=point_dir, status=status, reason=reason,
                environment=environment, timing=timing, started_at=started, **body))
        if status == "ok":
            dist.destroy_process_group()


if __name__ == "__main__":
    main()
