"""Step clocks that do not slow the loop down.

On GPU a clock records a CUDA event at each step boundary and reads the intervals once, after the epoch's
final synchronize: no synchronize per step. On CPU it reads time.perf_counter(), which is exact there.
"""

from __future__ import annotations

import time
from typing import List

import torch

CPU_METHOD = "time.perf_counter() at step boundaries (CPU work is synchronous)"
CUDA_METHOD = ("CUDA events recorded at step boundaries on the current stream, read after one "
               "torch.cuda.synchronize() at the end of the epoch")


class StepClock:
    """mark() at the start of the epoch and after every step; intervals_s() gives the step times."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"
        self.method = CUDA_METHOD if self.cuda else CPU_METHOD
        self._marks: List = []

    def mark(self) -> None:
        if self.cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            self._marks.append(event)
        else:
            self._marks.append(time.perf_counter())

    def intervals_s(self) -> List[float]:
        """Seconds between consecutive marks; synchronizes the device once."""
        if self.cuda:
            torch.cuda.synchronize()
            return [a.elapsed_time(b) / 1000.0 for a, b in zip(self._marks, self._marks[1:])]
        return [b - a for a, b in zip(self._marks, self._marks[1:])]

    def reset(self) -> None:
        self._marks = []


def synchronize(device: torch.device) -> None:
    """Wait for the device's queued work (a no-op on the CPU, whose work is done when the call returns)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def wall_s() -> float:
    return time.perf_counter()
