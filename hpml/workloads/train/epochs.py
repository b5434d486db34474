"""One training step and one epoch of the train workload, and the per-epoch record every rank contributes to.

`Stepper` is the step (its phases marked on the clock it is given: a PhaseClock times them, a NullClock is the
plain loop of the overhead check); with workload.accumulation_chunks > 1 its forward and backward run once per
chunk before the one optimizer step (accumulation.py), and the clock sums each phase over the chunks. Its
`backward(loss)` and `optimizer_step()` are the one place a gradient scaler acts. `run_epoch` runs a loader's worth of steps; `record_epoch` gathers every
rank's epoch numbers into the `EpochLog`, which checkpoints save so that a requeued job keeps them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, Iterator, List, Optional

import torch
import torch.distributed as dist

from hpml.conf.workload.train import TrainConfig
from hpml.conf.workload.train_choices import CompileMode, Precision
from hpml.workloads.common.distributed import DistContext, all_gather_objects
from hpml.workloads.train import accumulation
from hpml.workloads.train.model import autocast, memory_format
from hpml.workloads.train.phases import PHASES, NullClock, PhaseClock, train_seconds


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
    # rank 0's wall clock of each pass of the epoch loop: from the epoch's start (after its barrier) to the
    # barrier after its evaluation, so it holds the steps, the epoch record, checkpoint and evaluation; the full
    # phase profile's whole (analysis/train/profile.py), "other" being what no phase measured
    loop_time_s: List[float] = field(default_factory=list)
    eval_time_s: List[float] = field(default_factory=list)  # rank 0: the evaluation in that pass, 0 when none
    # fp16: the gradient scaler's scale at each epoch's end (it halves on every step with inf/NaN gradients, which
    # the scaler skips); None for the other precisions
    loss_scale: List[Optional[float]] = field(default_factory=list)
    # GPU: rank 0's allocator peak (torch.cuda.max_memory_allocated) over each epoch; None on a CPU
    peak_memory_allocated_bytes: List[Optional[int]] = field(default_factory=list)
    # 0-based epochs that a fresh process started with: 0, and the first epoch after each resume from a
    # checkpoint (imports, NCCL set-up and cuDNN tuning again). Their times are not counted
    # (contract.result_format.timed_epoch_indices).
    cold_epochs: List[int] = field(default_factory=list)


class Stepper:
    """One training step, its phases marked on the clock it is given (a NullClock: the plain loop)."""

    def __init__(self, model, optimizer, cfg: TrainConfig, ctx: DistContext, lr_of_step: Callable[[int], float]):
        self.model, self.optimizer, self.device = model, optimizer, ctx.device
        self.loss_fn = torch.nn.CrossEntropyLoss(label_smoothing=cfg.label_smoothing)
        self.memory_format = memory_format(cfg)
        self.cfg = cfg
        # compile modes that replay CUDA graphs (reduce-overhead; max-autotune too, on a GPU)
        self.graph_trees = cfg.compile in (CompileMode.reduce_overhead, CompileMode.max_autotune) \
            and ctx.device.type == "cuda"
        # fp16: the loss is scaled before backward and the gradients unscaled in step(), which skips a step whose
        # gradients are not finite and lowers the scale (torch.amp.GradScaler); disabled, it passes through
        self.scaler = torch.amp.GradScaler(ctx.device.type, enabled=cfg.precision == Precision.fp16)
        self.lr_of_step = lr_of_step
        self.chunks = cfg.accumulation_chunks  # gradient accumulation over equal chunks of a step (accumulation.py)
        self.global_step = 0
        self.lr = lr_of_step(0)
        self.reset_sums()

    def autocast(self):
        return autocast(self.cfg, self.device)

    def reset_sums(self) -> None:
        # the epoch's loss sum and correct predictions, accumulated on the device (two in-place kernels a step)
        self.loss_sum = torch.zeros((), device=self.device)
        self.correct = torch.zeros((), dtype=torch.int64, device=self.device)
        self.samples = 0

    def loss_of(self, images, labels):
        if self.graph_trees:  # torch's CUDA graph trees: a new step begins (the last one's outputs may be reused)
            torch.compiler.cudagraph_mark_step_begin()
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
        # before the first forward: set_to_none only drops the old gradients (no kernel), and memory they held is
        # free for this step's activations
        self.optimizer.zero_grad(set_to_none=True)
        for chunk in accumulation.chunks(images, labels, self.chunks, self.memory_format):  # one, unless chunked
            with accumulation.gradient_sync(self.model, chunk.last):
                logits, loss = self.loss_of(chunk.images, chunk.labels)
                self.count(logits, loss, chunk.labels)
                clock.mark("forward")
                # equal chunks: the mean over the step's samples is the sum of the chunks' means / chunks
                self.backward(loss if self.chunks == 1 else loss / self.chunks)
                clock.mark("backward")
        self.optimizer_step()
        clock.mark("optimizer")

    def count(self, logits, loss, labels) -> None:
        """The epoch's loss sum and correct predictions, on the device (no synchronization)."""
        n = labels.shape[0]
        self.loss_sum.add_(loss.detach().float(), alpha=n)
        self.correct.add_((logits.argmax(1) == labels).sum())
        self.samples += n

    def backward(self, loss) -> None:
        self.scaler.scale(loss).backward()

    def optimizer_step(self) -> None:
        """The rate of this step, then the update (under fp16 the scaler's: skipped when a gradient is inf/NaN)."""
        self.lr = self.lr_of_step(self.global_step)
        for group in self.optimizer.param_groups:
            group["lr"] = self.lr
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.global_step += 1

    def forward_backward_on(self, images, labels) -> Callable[[], None]:
        """A step without the optimizer on one fixed batch (the communication probes): weights unchanged."""
        def step() -> None:
            _, loss = self.loss_of(images, labels)
            self.optimizer.zero_grad(set_to_none=True)
            self.backward(loss)
        return step


def run_epoch(stepper: Stepper, loader, clock: PhaseClock) -> Dict[str, List[float]]:
    batches = iter(loader)
    if stepper.device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(stepper.device)
    clock.start_epoch()
    for _ in range(len(loader)):
        stepper(batches, clock)
    return clock.read()  # synchronizes the device


def record_epoch(log: EpochLog, stepper: Stepper, phases: Dict[str, List[float]], elapsed: float) -> None:
    """Gathers every rank's epoch numbers (one all_gather) and the loss/accuracy sums (one all_reduce)."""
    totals = torch.stack([stepper.loss_sum, stepper.correct.float(),
                          torch.tensor(float(stepper.samples)).to(stepper.device)])
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
    log.loss_scale.append(stepper.scaler.get_scale() if stepper.scaler.is_enabled() else None)
    cuda = stepper.device.type == "cuda"
    log.peak_memory_allocated_bytes.append(torch.cuda.max_memory_allocated(stepper.device) if cuda else None)
