"""DDP or DataParallel training of a torchvision classifier, timed per phase, per step and per epoch.

Started by torchrun, one worker per GPU (NCCL) or per CPU slot (gloo), or one worker per node driving
several GPUs with DataParallel (workload.parallel=dp):
    python -m workloads.train --config <sweep>/points/<n>/config.yaml
Rank 0 writes result.json beside the config. Epoch 1 is warm-up: the reported epoch time is the mean of
epochs 2..N, each epoch's time being that of its slowest rank.

Two epoch times (docs/studies/batch-gpu-scaling.md):
- total: wall clock from a barrier at the epoch's start to the end of its last step (device synchronized);
- train: the sum over steps of h2d + forward + backward + optimizer (workloads/phases.py): data loading
  excluded.
After the last epoch, optional measurements run on every rank: DDP's communication (no_sync probe,
profiler), the plain vs instrumented loop check. Before the first, optionally, the largest batch that fits.
"""

from __future__ import annotations

import itertools
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record
from torch.utils.data import DataLoader, DistributedSampler

from conf.schema import HpmlConfig
from conf.workload_schemas import Dataset, Parallel, Precision, Scaling, TrainConfig
from workloads import overhead, parallel
from workloads.batch_probe import probe_max_batch
from workloads.common.checkpoint import CHECKPOINT_FILE, EpochCheckpoint
from workloads.common.distributed import DistContext, all_gather_objects
from workloads.common.timing import wall_s
from workloads.common.worker import start_worker
from workloads.data import DeviceBatches, build_dataset, resolve_dataset
from workloads.lr_schedule import lr_at_step, target_lr
from workloads.model import build_model, gradient_bytes, memory_format
from workloads.phases import PHASES, NullClock, PhaseClock, train_seconds

EPOCH_METHOD = ("wall clock from a barrier at the epoch's start to the end of its last step (device "
                "synchronized), per rank; an epoch's time is its slowest rank's")
TRAIN_METHOD = ("sum over the epoch's steps of the h2d, forward, backward and optimizer phases (data "
                "loading excluded), per rank; an epoch's train time is its slowest rank's")
STEP_METHOD = "interval between consecutive step ends (the first from the epoch start), rank 0"


@dataclass
class EpochLog:
    """Raw measurements, one entry per epoch (saved in checkpoints: a requeued job keeps them)."""

    epoch_time_s_per_rank: List[List[float]] = field(default_factory=list)
    train_time_s_per_rank: List[List[float]] = field(default_factory=list)
    step_time_s: List[List[float]] = field(default_factory=list)  # rank 0's steps
    phase_time_s: Dict[str, List[List[float]]] = field(default_factory=dict)  # rank 0: phase -> epoch -> steps
    phase_sum_s_per_rank: Dict[str, List[List[float]]] = field(default_factory=dict)  # phase -> epoch -> ranks
    train_loss: List[float] = field(default_factory=list)
    train_accuracy: List[float] = field(default_factory=list)
    lr_last: List[float] = field(default_factory=list)  # the rate of each epoch's last step
    # 0-based epochs that a fresh process started with: 0, and the first epoch after each resume from a
    # checkpoint (imports, NCCL set-up and cuDNN tuning again). Their times are not counted.
    cold_epochs: List[int] = field(default_factory=list)


def per_worker_batch(cfg: TrainConfig, world_size: int) -> int:
    """Samples per step in one worker process: per device x devices (weak), or global / workers (strong)."""
    if cfg.scaling == Scaling.weak:
        return cfg.batch_size * cfg.devices_per_worker
    return cfg.batch_size // world_size


def build_loader(cfg: TrainConfig, config: HpmlConfig, ctx: DistContext, kind: Dataset):
    batch = per_worker_batch(cfg, ctx.world_size)
    if kind == Dataset.synthetic_device:
        steps = cfg.synthetic_samples // (batch * ctx.world_size)
        loader: Any = DeviceBatches(steps, batch, cfg.num_classes, cfg.image_size, ctx.device,
                                    seed=config.sweep.seed + ctx.rank, memory_format=memory_format(cfg))
        size = cfg.synthetic_samples
    else:
        dataset = build_dataset(cfg, seed=config.sweep.seed, kind=kind)
        sampler = DistributedSampler(dataset, num_replicas=ctx.world_size, rank=ctx.rank, shuffle=True,
                                     seed=config.sweep.seed, drop_last=True)
        loader = DataLoader(dataset, batch_size=batch, sampler=sampler, num_workers=cfg.loader_workers,
                            pin_memory=ctx.device.type == "cuda", drop_last=True,
                            persistent_workers=cfg.loader_workers > 0)
        size = len(dataset)
    if len(loader) == 0:
        raise ValueError(f"no full batch per worker: {size} samples over {ctx.world_size} workers "
                         f"with batch {batch}; raise workload.synthetic_samples or lower workload.batch_size")
    return loader


def set_epoch(loader, epoch: int) -> None:
    if isinstance(getattr(loader, "sampler", None), DistributedSampler):
        loader.sampler.set_epoch(epoch)  # a different shuffle each epoch, the same on every rank


class Stepper:
    """One training step, its phases marked on the clock it is given (a NullClock: the plain loop)."""

    def __init__(self, model, optimizer, cfg: TrainConfig, ctx: DistContext, lr_of_step: Callable[[int], float]):
        self.model, self.optimizer, self.device = model, optimizer, ctx.device
        self.loss_fn = torch.nn.CrossEntropyLoss()
        self.memory_format = memory_format(cfg)
        self.bf16 = cfg.precision == Precision.bf16
        self.lr_of_step = lr_of_step
        self.global_step = 0
        self.lr = lr_of_step(0)
        self.reset_sums()

    def autocast(self):
        return torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.bf16)

    def reset_sums(self) -> None:
        self.sums = torch.zeros(2, device=self.device)  # loss sum, correct predictions
        self.samples = 0

    def loss_of(self, images, labels):
        with self.autocast():
            logits = self.model(images)
            return logits, self.loss_fn(logits, labels)

    def __call__(self, batches: Iterator, clock: NullClock) -> None:
        clock.begin_step()
        images, labels = next(batches)
        clock.loaded()
        images = images.to(self.device, non_blocking=True, memory_format=self.memory_format)
        labels = labels.to(self.device, non_blocking=True)
        clock.mark("h2d")
        logits, loss = self.loss_of(images, labels)
        n = labels.shape[0]
        self.sums += torch.stack([loss.detach().float() * n, (logits.argmax(1) == labels).sum().float()])
        self.samples += n
        clock.mark("forward")
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        clock.mark("backward")
        self.lr = self.lr_of_step(self.global_step)
        for group in self.optimizer.param_groups:
            group["lr"] = self.lr
        self.optimizer.step()
        self.global_step += 1
        clock.mark("optimizer")

    def forward_backward_on(self, images, labels) -> Callable[[], None]:
        """A step without the optimizer on one fixed batch (the communication probes): weights unchanged."""
        def step() -> None:
            _, loss = self.loss_of(images, labels)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
        return step


def run_epoch(stepper: Stepper, loader, clock: PhaseClock) -> Dict[str, List[float]]:
    batches = iter(loader)
    clock.start_epoch()
    for _ in range(len(loader)):
        stepper(batches, clock)
    return clock.read()  # synchronizes the device


def endless(loader) -> Iterator:
    """Batches of the loader, epoch after epoch (for the checks after training)."""
    return itertools.chain.from_iterable(itertools.repeat(loader))


@dataclass
class Extras:
    """Measurements besides the epochs (None when off)."""

    batch_probe: Optional[Dict[str, Any]] = None
    comm_probe: Optional[Dict[str, Any]] = None
    comm_profile: Optional[Dict[str, Any]] = None
    overhead_check: Optional[Dict[str, Any]] = None
    ddp_bucket_bytes: Optional[List[int]] = None
    gradient_bytes: int = 0
    steps_per_epoch: int = 0
    lr_target: float = 0.0


def after_training(stepper: Stepper, model, loader, cfg: TrainConfig, ctx: DistContext, extras: Extras) -> None:
    """The measurements that follow the last epoch, on every rank (they run collectives)."""
    extras.ddp_bucket_bytes = parallel.ddp_bucket_bytes(model)
    images, labels = next(iter(loader))
    images = images.to(ctx.device, memory_format=stepper.memory_format)
    fixed = stepper.forward_backward_on(images, labels.to(ctx.device))
    if cfg.comm_probe_steps and cfg.parallel == Parallel.ddp:
        extras.comm_probe = parallel.comm_probe(model, fixed, ctx.device, cfg.comm_probe_steps)
    if cfg.profile_comm_steps and cfg.parallel == Parallel.ddp and ctx.device.type == "cuda":
        extras.comm_profile = parallel.nccl_kernel_seconds(fixed, cfg.profile_comm_steps)
    if cfg.overhead_check_steps:
        batches = endless(loader)

        def run_steps(clock, steps: int) -> None:
            for _ in range(steps):
                stepper(batches, clock)
        extras.overhead_check = overhead.overhead_check(
            run_steps, ctx.device, cfg.overhead_check_steps, cfg.overhead_check_rounds,
            samples_per_step=per_worker_batch(cfg, ctx.world_size) * ctx.world_size)


def probe_batches(cfg: TrainConfig, ctx: DistContext) -> Dict[str, Any]:
    fmt = memory_format(cfg)

    def make_batch(batch: int):
        images = torch.randn(batch, 3, cfg.image_size, cfg.image_size, device=ctx.device)
        labels = torch.randint(0, cfg.num_classes, (batch,), device=ctx.device)
        return images.contiguous(memory_format=fmt), labels

    bf16 = cfg.precision == Precision.bf16
    probe = probe_max_batch(lambda: build_model(cfg, ctx.device), make_batch, ctx.device, cfg.batch_size,
                            cfg.max_batch_probe,
                            lambda: torch.autocast(ctx.device.type, dtype=torch.bfloat16, enabled=bf16))
    per_rank = all_gather_objects(probe["largest_fitting"])
    probe["largest_fitting_per_rank"] = per_rank
    return probe


def cudnn_benchmark_in_force(cfg: TrainConfig) -> bool:
    """workload.cudnn_benchmark, except under DataParallel over several GPUs. PyTorch keeps the cuDNN plans
    that benchmark mode found per thread, and DataParallel runs every replica's forward in a new thread at
    every step, so each forward tunes its convolutions again: on 2 H200s a ResNet-18 step at batch 32 per GPU
    took 0.5 s (forward) instead of ~10 ms (docs/results/hw5_scaling/h200_4gpu_dp_stopped)."""
    return cfg.cudnn_benchmark and not (cfg.parallel == Parallel.dp and cfg.dp_devices > 1)


def configure_backends(cfg: TrainConfig, ctx: DistContext) -> None:
    if ctx.device.type == "cuda":
        torch.backends.cudnn.benchmark = cudnn_benchmark_in_force(cfg)
        if cfg.cudnn_benchmark and not torch.backends.cudnn.benchmark and ctx.is_main:
            print("[rank 0] note: cudnn.benchmark off under DataParallel over several GPUs (its per-step threads "
                  "would re-tune every forward)", flush=True)
        torch.backends.cuda.matmul.allow_tf32 = cfg.tf32
        torch.backends.cudnn.allow_tf32 = cfg.tf32


def train(cfg: TrainConfig, config: HpmlConfig, ctx: DistContext, point_dir: Path, kind: Dataset,
          extras: Extras) -> EpochLog:
    torch.manual_seed(config.sweep.seed)
    configure_backends(cfg, ctx)
    if cfg.max_batch_probe:
        extras.batch_probe = probe_batches(cfg, ctx)
    loader = build_loader(cfg, config, ctx, kind)
    model = build_model(cfg, ctx.device)
    extras.gradient_bytes = gradient_bytes(model)
    model = parallel.wrap_model(model, cfg, ctx)
    step_model = torch.compile(model) if cfg.compile else model  # DDP: compile the wrapper (DDPOptimizer)
    global_batch = per_worker_batch(cfg, ctx.world_size) * ctx.world_size
    extras.steps_per_epoch = len(loader)
    extras.lr_target = target_lr(cfg.lr, cfg.lr_scaling, global_batch, cfg.lr_base_batch)
    lr_of_step = lambda step: lr_at_step(step, len(loader), cfg.lr, extras.lr_target, cfg.warmup_epochs)  # noqa: E731
    optimizer = torch.optim.SGD(model.parameters(), lr=lr_of_step(0), momentum=cfg.momentum,
                                weight_decay=cfg.weight_decay)
    stepper = Stepper(step_model, optimizer, cfg, ctx, lr_of_step)
    log, clock = EpochLog(), PhaseClock(ctx.device)
    checkpoint = EpochCheckpoint(point_dir / CHECKPOINT_FILE) if cfg.checkpoint else None
    first_epoch = checkpoint.restore(model, optimizer, log, ctx.device) if checkpoint else 0
    stepper.global_step = first_epoch * len(loader)
    if first_epoch < cfg.epochs:  # epoch 1 is always cold, whatever an older checkpoint recorded
        log.cold_epochs = sorted({0, *log.cold_epochs, first_epoch})
    if first_epoch and ctx.is_main:
        print(f"[rank 0] resumed from {checkpoint.path} after epoch {first_epoch}", flush=True)
    for epoch in range(first_epoch, cfg.epochs):
        set_epoch(loader, epoch)
        stepper.reset_sums()
        dist.barrier()
        start = wall_s()
        phases = run_epoch(stepper, loader, clock)
        elapsed = wall_s() - start
        record_epoch(log, stepper, phases, elapsed)
        if ctx.is_main:
            print(f"[rank 0] epoch {epoch + 1}/{cfg.epochs}: total {max(log.epoch_time_s_per_rank[-1]):.3f} s, "
                  f"train {max(log.train_time_s_per_rank[-1]):.3f} s, loss {log.train_loss[-1]:.4f}, "
                  f"accuracy {log.train_accuracy[-1]:.4f}, lr {stepper.lr:.4g}", flush=True)
            if checkpoint:  # after the epoch's clock stopped: saving is not part of the epoch time
                checkpoint.save(epoch + 1, model, optimizer, log)
        dist.barrier()
    after_training(stepper, model, loader, cfg, ctx, extras)
    return log


def record_epoch(log: EpochLog, stepper: Stepper, phases: Dict[str, List[float]], elapsed: float) -> None:
    """Gathers every rank's epoch numbers (one all_gather) and the loss/accuracy sums (one all_reduce)."""
    totals = torch.cat([stepper.sums, torch.tensor([float(stepper.samples)], device=stepper.device)])
    dist.all_reduce(totals)
    loss_sum, correct, samples = totals.tolist()
    mine = {"total": elapsed, "train": sum(train_seconds(phases)),
            "phases": {p: sum(phases[p]) for p in PHASES}}
    ranks = all_gather_objects(mine)
    log.epoch_time_s_per_rank.append([r["total"] for r in ranks])
    log.train_time_s_per_rank.append([r["train"] for r in ranks])
    log.step_time_s.append(phases["step"])
    for p in PHASES:
        log.phase_time_s.setdefault(p, []).append(phases[p])
        log.phase_sum_s_per_rank.setdefault(p, []).append([r["phases"][p] for r in ranks])
    log.train_loss.append(loss_sum / samples)
    log.train_accuracy.append(correct / samples)
    log.lr_last.append(stepper.lr)


def summarize(log: EpochLog, cfg: TrainConfig, world_size: int, extras: Extras, kind: Dataset,
              note: Optional[str]) -> Dict:
    """Raw arrays and the numbers derived from them (the timed epochs: all but the cold ones)."""
    batch = per_worker_batch(cfg, world_size)
    devices = world_size * cfg.devices_per_worker
    epoch_times = [max(ranks) for ranks in log.epoch_time_s_per_rank]
    train_times = [max(ranks) for ranks in log.train_time_s_per_rank]
    # Timed epochs: all but the cold ones; the rule of analysis.schema.timed_epoch_indices (which the report
    # applies to these raw arrays again; workloads never import analysis).
    timed = [i for i in range(len(epoch_times)) if i not in set(log.cold_epochs)] or list(range(1, len(epoch_times)))
    timed_steps = [s for i in timed for s in log.step_time_s[i]]
    samples_per_epoch = extras.steps_per_epoch * batch * world_size
    measurements = {
        "epoch_time_s": epoch_times,
        "epoch_time_s_per_rank": log.epoch_time_s_per_rank,
        "train_time_s": train_times,
        "train_time_s_per_rank": log.train_time_s_per_rank,
        "step_time_s": log.step_time_s,
        "phase_time_s": log.phase_time_s,
        "phase_sum_s_per_rank": log.phase_sum_s_per_rank,
        "train_loss": log.train_loss,
        "train_accuracy": log.train_accuracy,
        "lr_last": log.lr_last,
        "lr_target": extras.lr_target,
        "steps_per_epoch": extras.steps_per_epoch,
        "per_worker_batch": batch,
        "global_batch": batch * world_size,
        "samples_per_epoch": samples_per_epoch,
        "parallel": cfg.parallel.value,
        "devices": devices,
        "per_device_batch": batch * world_size // devices,
        "dataset": kind.value,
        "dataset_note": note,
        "gradient_bytes": extras.gradient_bytes,
        "ddp_bucket_bytes": extras.ddp_bucket_bytes,
        "comm_probe": extras.comm_probe,
        "comm_profile": extras.comm_profile,
        "overhead_check": extras.overhead_check,
        "batch_probe": extras.batch_probe,
        "cudnn_benchmark": bool(torch.backends.cudnn.benchmark) if torch.cuda.is_available() else None,
        "cold_epochs": log.cold_epochs,
    }
    epoch_mean = statistics.fmean(epoch_times[i] for i in timed)
    derived = {
        "timed_epochs": len(timed),
        "epoch_time_s": epoch_mean,
        "epoch_time_std_s": statistics.pstdev(epoch_times[i] for i in timed),
        "train_time_s": statistics.fmean(train_times[i] for i in timed),
        "step_time_median_s": statistics.median(timed_steps),
        "samples_per_s": samples_per_epoch / epoch_mean,
        "final_train_loss": log.train_loss[-1],
        "final_train_accuracy": log.train_accuracy[-1],
    }
    return {"measurements": measurements, "derived": derived}


def timing_words(clock_method: str) -> Dict[str, str]:
    return {"epoch": EPOCH_METHOD, "train_epoch": TRAIN_METHOD, "step": f"{STEP_METHOD}; {clock_method}",
            "phases": clock_method, "comm": parallel.COMM_METHOD, "overhead_check": overhead.METHOD,
            "batch_probe": "workloads/batch_probe.py: doubling per-device batch, 2 steps each, plain model"}


@record
def main(argv: Sequence[str] | None = None) -> None:
    worker = start_worker(argv)
    cfg: TrainConfig = worker.config.workload
    ctx = worker.ctx
    kind, note = resolve_dataset(cfg)
    if ctx.is_main and note:
        print(f"[rank 0] note: {note}", flush=True)
    extras = Extras()
    # An out-of-memory point keeps what the batch probe found: the report shows it as "does not fit".
    with worker.reporting(timing_words(PhaseClock(ctx.device).method),
                          oom_measurements=lambda: {"batch_probe": extras.batch_probe, "dataset": kind.value}) as body:
        log = train(cfg, worker.config, ctx, worker.point_dir, kind, extras)
        body.update(summarize(log, cfg, ctx.world_size, extras, kind, note))


if __name__ == "__main__":
    main()
