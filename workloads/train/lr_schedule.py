"""Learning rate for large batches: linear scaling and gradual warm-up (Goyal et al. 2017, "Accurate,
Large Minibatch SGD: Training ImageNet in 1 Hour").

- Linear scaling rule: when the global batch is k times the batch the base rate was tuned for, multiply
  the rate by k:  target = lr * global_batch / lr_base_batch  (workload.lr_scaling=linear).
- Gradual warm-up: start from the base rate lr and raise it by the same amount every step, reaching the
  target after warmup_epochs epochs (Goyal et al. use 5); the target holds from then on. A warm-up only
  ever rises: when the target is not above lr (lr_scaling=none, or a global batch below lr_base_batch)
  it starts at the target, i.e. it is flat.

Pure functions: the train loop calls `lr_at_step` before each optimizer step.
"""

from __future__ import annotations

from conf.workload.train import LrScaling


def target_lr(lr: float, scaling: LrScaling, global_batch: int, base_batch: int) -> float:
    """The rate after warm-up."""
    if scaling == LrScaling.linear:
        return lr * global_batch / base_batch
    return lr


def lr_at_step(step: int, steps_per_epoch: int, lr: float, target: float, warmup_epochs: float) -> float:
    """The rate of global step `step` (0-based, counted over all epochs): a linear ramp from lr (step 0)
    to target (step warmup_epochs * steps_per_epoch), then target."""
    warmup_steps = warmup_epochs * steps_per_epoch
    if warmup_steps <= 0 or step >= warmup_steps:
        return target
    start = min(lr, target)
    return start + (target - start) * step / warmup_steps
