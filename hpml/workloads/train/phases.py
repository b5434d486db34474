"""Per-step phase timing that does not slow the loop down.

A training step has five phases, timed as follows:

    data       host path: time.perf_counter() around next(batches) (the loader's wait, as the host sees it);
               device path (data_on_device): device time between marks around next(batches), i.e. the
               slicing and augmenting kernels (on the host that call only queues them)
    h2d        device: inputs and labels copied to the device (non_blocking from pinned memory)
    forward    device: forward pass, loss, and the epoch's loss/accuracy sums
    backward   device: backward (DDP's gradient all-reduce runs inside it, overlapped)
    optimizer  device: learning-rate update + optimizer.step()

With gradient accumulation (workload.accumulation_chunks = c) a step marks forward and backward once per chunk:
h2d, (forward, backward) x c, optimizer; each phase's time is the sum of its c intervals, so the five phases still
add up to the step.

On GPU, `mark()` records a CUDA event on the current stream at each phase boundary; nothing waits for it.
`read()` synchronizes once (after the epoch) and turns the events into seconds. Events are pooled and
reused from epoch to epoch, so a step costs five cudaEventRecord calls and no allocation. On CPU the
marks are time.perf_counter() readings (CPU work is synchronous, so they are exact).

A step's "train" time is h2d + forward + backward + optimizer: everything but data loading (on the device
timeline, from the event before the copy to the event after the optimizer step). Its "step" time is the
interval between consecutive step ends (the first from the epoch-start mark): it includes the data wait.

`NullClock` has the same methods and does nothing: the plain loop of the overhead check runs the very same
step code with it (no branches for "timing off").
"""

from __future__ import annotations

import time
from typing import Dict, List

import torch

from hpml.contract.train_format import DEVICE_PHASES, PHASES, TRAIN_PHASES  # noqa: F401 - the phases this module marks

# the marks that may follow each mark of a step (None: the batch just loaded): forward and backward repeat per chunk
FOLLOWS = {None: ("h2d",), "h2d": ("forward",), "forward": ("backward",), "backward": ("forward", "optimizer")}

CPU_METHOD = ("time.perf_counter() at phase boundaries (CPU work is synchronous); data = host time around "
              "next(loader)")
CUDA_METHOD = ("CUDA events recorded on the current stream at phase boundaries (no synchronize in the "
               "loop), read after one torch.cuda.synchronize() at the end of the epoch; data = host "
               "time.perf_counter() around next(loader)")
CUDA_DEVICE_DATA_METHOD = ("CUDA events recorded on the current stream at phase boundaries (no synchronize in "
                           "the loop), read after one torch.cuda.synchronize() at the end of the epoch; data = "
                           "device time between events around next(batches): slicing and augmenting on the "
                           "device (data_placement=device; h2d is then a no-op copy)")


class NullClock:
    """The clock interface, doing nothing (the plain loop)."""

    method = "none"

    def start_epoch(self) -> None: ...
    def begin_step(self) -> None: ...
    def loaded(self) -> None: ...
    def mark(self, phase: str) -> None: ...


class PhaseClock(NullClock):
    """begin_step() before fetching a batch, loaded() after it, mark(phase) after each device phase."""

    def __init__(self, device: torch.device, data_on_device: bool = False):
        self.cuda = device.type == "cuda"
        self.method = (CUDA_DEVICE_DATA_METHOD if data_on_device else CUDA_METHOD) if self.cuda else CPU_METHOD
        self._device_data = self.cuda and data_on_device  # the data phase between events, not host readings
        self._data_begin = None
        self._pool: List[torch.cuda.Event] = []
        self._used = 0
        self._start = None
        self._host_begin = 0.0
        self._data_s: List[float] = []
        self._marks: List[List] = []  # per step: [loaded, h2d, forward, backward, (forward, backward, ...) optimizer]
        self._names: List[List[str]] = []  # per step: the phase each mark after `loaded` ends

    def _now(self):
        if not self.cuda:
            return time.perf_counter()
        if self._used == len(self._pool):
            self._pool.append(torch.cuda.Event(enable_timing=True))
        event = self._pool[self._used]
        self._used += 1
        event.record()
        return event

    def start_epoch(self) -> None:
        self._used, self._data_s, self._marks, self._names = 0, [], [], []
        self._start = self._now()

    def begin_step(self) -> None:
        if self._device_data:
            self._data_begin = self._now()
        else:
            self._host_begin = time.perf_counter()

    def loaded(self) -> None:
        loaded = self._now()
        # device data: the pair of events, read with the others after the epoch's synchronize
        self._data_s.append((self._data_begin, loaded) if self._device_data else time.perf_counter() - self._host_begin)
        self._marks.append([loaded])
        self._names.append([])

    def mark(self, phase: str) -> None:
        names = self._names[-1]
        after = names[-1] if names else None
        if phase not in FOLLOWS[after]:
            raise RuntimeError(f"phase {phase!r} marked out of order after {after or 'the data'} (a step is h2d, "
                               "forward and backward per chunk, optimizer)")
        names.append(phase)
        self._marks[-1].append(self._now())

    def _seconds(self, a, b) -> float:
        return a.elapsed_time(b) / 1000.0 if self.cuda else b - a

    def read(self) -> Dict[str, List[float]]:
        """Per-step seconds of each phase, plus "step" (step end to step end); synchronizes the device once."""
        if self.cuda:
            torch.cuda.synchronize()
        if any(not names or names[-1] != "optimizer" for names in self._names):
            raise RuntimeError("a step was not marked through all phases")
        data = [self._seconds(*pair) for pair in self._data_s] if self._device_data else list(self._data_s)
        out: Dict[str, List[float]] = {"data": data, **{phase: [] for phase in DEVICE_PHASES}}
        for marks, names in zip(self._marks, self._names):
            step = dict.fromkeys(DEVICE_PHASES, 0.0)
            for name, begin, end in zip(names, marks, marks[1:]):
                step[name] += self._seconds(begin, end)
            for phase in DEVICE_PHASES:
                out[phase].append(step[phase])
        ends = [self._start] + [marks[-1] for marks in self._marks]
        out["step"] = [self._seconds(a, b) for a, b in zip(ends, ends[1:])]
        return out


def train_seconds(phases: Dict[str, List[float]]) -> List[float]:
    """Each step's train time: the sum of its device phases (h2d + forward + backward + optimizer)."""
    return [sum(values) for values in zip(*(phases[p] for p in TRAIN_PHASES))]
