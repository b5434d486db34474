"""Is the instrumented loop as fast as a plain one? Both measured side by side in one run.

After training (workload.overhead_check_steps > 0), `overhead_check_rounds` rounds each run one block of
`overhead_check_steps` steps with the plain loop (the same step code with a NullClock: no events) and one
with the instrumented loop (PhaseClock: five CUDA events per step, read after the block), the order
alternating between rounds so that a drift in clocks or temperature does not favour one. Every block is
timed by wall clock from a synchronize (and barrier) before it to a synchronize after it, the event
read-out included for the instrumented one. Rate = samples of all workers / seconds.
overhead = 1 - median instrumented rate / median plain rate (negative: the instrumented loop was faster).
"""

from __future__ import annotations

import statistics
import time
from typing import Callable, Dict, List

import torch
import torch.distributed as dist

from hpml.workloads.train.phases import NullClock, PhaseClock

METHOD = ("blocks of N steps, plain (no events) and instrumented (phase events, read after the block) "
          "alternating; each block timed by wall clock between device synchronizes; rate = samples of "
          "all workers / block seconds; overhead = 1 - median instrumented / median plain rate")


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    dist.barrier()


def overhead_check(run_steps: Callable[[NullClock, int], None], device: torch.device, steps: int,
                   rounds: int, samples_per_step: int, data_on_device: bool = False) -> Dict[str, object]:
    """run_steps(clock, n) runs n training steps with the given clock."""
    seconds: Dict[str, List[float]] = {"plain": [], "instrumented": []}
    for r in range(rounds):
        order = ("plain", "instrumented") if r % 2 == 0 else ("instrumented", "plain")
        for mode in order:
            clock = NullClock() if mode == "plain" else PhaseClock(device, data_on_device)
            _sync(device)
            start = time.perf_counter()
            clock.start_epoch()
            run_steps(clock, steps)
            if isinstance(clock, PhaseClock):
                clock.read()
            elif device.type == "cuda":
                torch.cuda.synchronize(device)
            seconds[mode].append(time.perf_counter() - start)
    rates = {mode: [steps * samples_per_step / s for s in values] for mode, values in seconds.items()}
    plain, instrumented = statistics.median(rates["plain"]), statistics.median(rates["instrumented"])
    return {"steps_per_block": steps, "rounds": rounds, "samples_per_step": samples_per_step,
            "plain_block_s": seconds["plain"], "instrumented_block_s": seconds["instrumented"],
            "plain_samples_per_s": rates["plain"], "instrumented_samples_per_s": rates["instrumented"],
            "plain_median_samples_per_s": plain, "instrumented_median_samples_per_s": instrumented,
            "overhead": 1 - instrumented / plain}
