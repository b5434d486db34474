"""Learning rate for large batches: linear scaling and gradual warm-up (Goyal et al. 2017, "Accurate,
Large Minibatch SGD: Training ImageNet in 1 Hour").

- Linear scaling rule: when the global batch is k times the batch the base rate was tuned for, multiply
  the rate by k:  target = lr * global_batch / lr_base_batch  (workload.lr_scaling=linear).
- Gradual warm-up: start from the base rate lr and raise it by the same amount every step, reaching the
  target after warmup_epochs epochs (Goyal et al. use 5); the target holds from then on. A warm-up only
  ever rises: when the target is not above lr (lr_scaling=none, or a global batch below lr_base_batch)
  it starts at the target, i.e. it is flat.

- Warm-up from zero (workload.warmup_from=zero): the ramp starts at 0 instead of lr, as one-cycle schedules do
  (Smith & Topin 2017; Page's DAWNBench CIFAR-10 ResNet and Keller Jordan's airbench ramp up from near 0).
- Linear decay (workload.lr_decay=linear): after the warm-up the rate falls linearly from the target to 0 at
  the end of epoch lr_decay_epochs and stays 0 (the triangular schedule of Page and airbench). A schedule that
  ends at a fixed epoch makes every seed approach its final accuracy at the same epoch: the time-to-accuracy
  preset uses it to narrow the spread of epochs to target (docs/studies/time-to-accuracy.md).
- Step decay (workload.lr_decay=step): after the warm-up the rate is target * gamma^k, k the number of
  milestones (workload.lr_milestones, in epochs, counted from the start of training) already passed: He et al.
  2016 divide by 10 (lr_gamma=0.1) at 32k and 48k of 64k iterations on CIFAR-10; DeVries & Taylor 2017 by 5 at
  epochs 60, 120 and 160 of 200. A milestone takes effect at the first step of its epoch (step milestone x
  steps_per_epoch), as torch's MultiStepLR stepped once per epoch does.

Pure functions: the train loop calls the `schedule` of its config before each optimizer step.
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

from hpml.conf.workload.train import TrainConfig
from hpml.conf.workload.train_choices import LrDecay, LrScaling, WarmupFrom


def target_lr(lr: float, scaling: LrScaling, global_batch: int, base_batch: int) -> float:
    """The rate after warm-up."""
    if scaling == LrScaling.linear:
        return lr * global_batch / base_batch
    return lr


def lr_at_step(step: int, steps_per_epoch: int, lr: float, target: float, warmup_epochs: float,
               warmup_from_zero: bool = False, decay_epochs: Optional[float] = None,
               milestones: Sequence[float] = (), gamma: float = 0.1) -> float:
    """The rate of global step `step` (0-based, counted over all epochs): a linear ramp from lr (or 0) at step 0
    to target at step warmup_epochs * steps_per_epoch; then target, or with decay_epochs a linear fall to 0 at
    step decay_epochs * steps_per_epoch, or with milestones target * gamma^(milestones at or before this step)."""
    warmup_steps = warmup_epochs * steps_per_epoch
    if warmup_steps > 0 and step < warmup_steps:
        start = 0.0 if warmup_from_zero else min(lr, target)
        return start + (target - start) * step / warmup_steps
    if milestones:
        return target * gamma ** sum(step >= milestone * steps_per_epoch for milestone in milestones)
    if decay_epochs is None:
        return target
    decay_steps = decay_epochs * steps_per_epoch - max(warmup_steps, 0)
    return target * max(0.0, 1 - (step - max(warmup_steps, 0)) / decay_steps)


def schedule(cfg: TrainConfig, steps_per_epoch: int, target: float) -> Callable[[int], float]:
    """The rate of each global step under the config's warm-up and decay keys."""
    decay_epochs = cfg.lr_decay_epochs if cfg.lr_decay == LrDecay.linear else None
    milestones = tuple(cfg.lr_milestones) if cfg.lr_decay == LrDecay.step else ()
    return lambda step: lr_at_step(step, steps_per_epoch, cfg.lr, target, cfg.warmup_epochs,
                                   cfg.warmup_from == WarmupFrom.zero, decay_epochs, milestones, cfg.lr_gamma)
