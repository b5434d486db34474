"""DDP and Horovod-style side by side in one process (synthetic workload, workload.paired_rounds > 0).

Why: separate launches of the two methods drift apart on a shared host. On 4 H200s two DDP / Horovod-style
pairs of launches a minute apart read ratios of 1.005 and 1.188, with a per-iteration CV of 9-10 %
(docs/results/horovod_synthetic/README.md): too coarse for a 3 % comparison. Here both methods run in the
same process, on the same GPUs, interleaved finely enough that a drift of the host hits both alike.

How: after the protocol, each method is built on its own copy of the same model (same seed, so the same
initial weights; the same batch, optimizer, fusion threshold / bucket size, fp16 compression and backward
passes per step). Each first runs num_warmup_batches steps, untimed. Then `rounds` rounds each run one
iteration (num_batches_per_iter steps) of each method, the order alternating between rounds (DDP first in
even rounds, Horovod-style first in odd ones), so neither always follows the other. Iterations are timed as
the protocol's are: device-side marks at iteration boundaries (CUDA events, read after one synchronize at
the end; perf_counter on CPU), ranks aligned by a barrier before the first.

The analysis (analysis/synthetic/, the paired table) compares, round by round, the two methods' total
rates (the sum over ranks of each rank's own rate) and reports the median over rounds of the ratio
Horovod-style / DDP.
"""

from __future__ import annotations

from typing import Callable, Dict, List

import torch

from hpml.conf.workload.synthetic import GradientSync
from hpml.workloads.common.timing import StepClock

METHODS = (GradientSync.ddp, GradientSync.horovod)
METHOD = ("DDP and Horovod-style on copies of one model in one process; after num_warmup_batches untimed "
          "steps of each, rounds of one iteration (num_batches_per_iter steps) of each, the order alternating "
          "between rounds; every iteration timed like the protocol's (device-side marks at iteration "
          "boundaries, ranks aligned by a barrier before the first)")

Step = Callable[[], None]


def round_order(rounds: int) -> List[GradientSync]:
    """The methods in the order they run: (ddp, horovod), (horovod, ddp), (ddp, horovod), ..."""
    return [method for r in range(rounds) for method in (METHODS if r % 2 == 0 else METHODS[::-1])]


def paired_check(build_step: Callable[[GradientSync], Step], rounds: int, warmup_steps: int,
                 steps_per_iteration: int, device: torch.device,
                 align_ranks: Callable[[torch.device], None]) -> Dict[str, object]:
    """This rank's iteration times of each method, in run order. build_step(method) returns one training
    step of that method; it is called once per method, on every rank in the same order (DDP's constructor
    and the Horovod-style parameter broadcast are collectives)."""
    steps = {method: build_step(method) for method in METHODS}
    for step in steps.values():
        for _ in range(warmup_steps):
            step()
    align_ranks(device)
    order = round_order(rounds)
    clock = StepClock(device)
    clock.mark()
    for method in order:
        for _ in range(steps_per_iteration):
            steps[method]()
        clock.mark()
    times = clock.intervals_s()  # the one synchronize
    return {method.value: [t for t, ran in zip(times, order) if ran == method] for method in METHODS}


def paired_measurements(per_rank: List[Dict[str, List[float]]], rounds: int, images: int) -> Dict[str, object]:
    """The result's measurements.paired: every rank's raw times per method ([rank][round])."""
    return {
        "rounds": rounds,
        "order": [method.value for method in round_order(rounds)],
        "images_per_iteration_per_rank": images,
        "iteration_time_s_per_rank": {method.value: [rank[method.value] for rank in per_rank]
                                      for method in METHODS},
        "method": METHOD,
    }
