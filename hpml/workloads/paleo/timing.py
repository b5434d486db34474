"""Timing a forward pass as a whole and layer by layer (the paleo workload's two measurements).

Whole forward (no hooks): the device is synchronized, then on GPU a CUDA event is recorded before and after
model(x) and read after one more synchronize; the host queues the kernels of layer k+1 while layer k runs,
as in any inference. On CPU: time.perf_counter() around the call.

Layer by layer: models.stats.layers.hooked_leaf_calls calls `before` and `after` around every leaf-module call
(the call names of layer_rows: "features.0", "layer1.0.relu#2", ...). `before` synchronizes the device and
records a start event; `after` records an end event and synchronizes again. So each layer's time is its own:
nothing of the previous layer is still running when it starts, and it has finished when the next one is
launched. Each time therefore includes the host's launch latency (the GPU waits, idle, for the layer's first
kernel); the whole forward hides most of it. Both times are kept: `time_s` (CUDA events) and `wall_s`
(perf_counter from just after the synchronize in `before` to just after the one in `after`).
"""

from __future__ import annotations

import contextlib
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch

from hpml.models.stats.layers import hooked_leaf_calls
from hpml.workloads.common.timing import synchronize

FORWARD_METHOD_CUDA = ("whole forward without hooks: torch.cuda.synchronize(), CUDA event, model(x), CUDA event, "
                       "synchronize; the event interval")
FORWARD_METHOD_CPU = "whole forward without hooks: time.perf_counter() around model(x)"
LAYER_METHOD_CUDA = ("each leaf-module call: forward pre-hook = synchronize + CUDA event; forward hook = CUDA "
                     "event + synchronize; time_s is the event interval (launch latency included: the GPU is idle "
                     "until the layer's first kernel arrives), wall_s the host's perf_counter interval between "
                     "the two synchronizes")
LAYER_METHOD_CPU = "each leaf-module call: time.perf_counter() in its forward pre-hook and its forward hook"


class _Interval:
    """One timed interval on the device: start() and stop() return nothing; seconds() after stop()."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"
        self.device = device
        if self.cuda:
            self._start_event = torch.cuda.Event(enable_timing=True)
            self._end_event = torch.cuda.Event(enable_timing=True)
        self._wall_start = self._wall_end = 0.0

    def start(self) -> None:
        synchronize(self.device)
        self._wall_start = time.perf_counter()
        if self.cuda:
            self._start_event.record()

    def stop(self) -> None:
        if self.cuda:
            self._end_event.record()
        synchronize(self.device)
        self._wall_end = time.perf_counter()

    def seconds(self) -> Tuple[float, float]:
        """(device seconds, host seconds); on CPU both are perf_counter's."""
        wall = self._wall_end - self._wall_start
        if self.cuda:
            return self._start_event.elapsed_time(self._end_event) / 1000.0, wall
        return wall, wall


def time_forward(model: torch.nn.Module, x: torch.Tensor) -> Tuple[float, float]:
    """(seconds, host seconds) of one whole forward without hooks."""
    interval = _Interval(x.device)
    interval.start()
    model(x)
    interval.stop()
    return interval.seconds()


class LayerTimes:
    """The call names and (seconds, host seconds) of every leaf call of one forward, in call order."""

    def __init__(self) -> None:
        self.names: List[str] = []
        self.seconds: List[float] = []
        self.wall_seconds: List[float] = []


def time_layers(model: torch.nn.Module, x: torch.Tensor) -> LayerTimes:
    """One forward with every leaf call timed on its own (synchronized before and after)."""
    times = LayerTimes()
    open_intervals: Dict[str, _Interval] = {}

    def before(name: str, module: torch.nn.Module, inputs: Any) -> None:
        interval = open_intervals[name] = _Interval(x.device)
        interval.start()

    def after(name: str, module: torch.nn.Module, inputs: Any, output: Any) -> None:
        interval = open_intervals.pop(name)
        interval.stop()
        device_s, wall_s = interval.seconds()
        times.names.append(name)
        times.seconds.append(device_s)
        times.wall_seconds.append(wall_s)

    with hooked_leaf_calls(model, before, after):
        model(x)
    return times


class CallOrderChanged(RuntimeError):
    """The timed forward called other leaf modules (or in another order) than the counted one."""


def check_call_order(expected: List[str], timed: LayerTimes, repetition: int) -> None:
    if timed.names != expected:
        first = next((i for i, (a, b) in enumerate(zip(expected, timed.names)) if a != b),
                     min(len(expected), len(timed.names)))
        raise CallOrderChanged(
            f"repetition {repetition}: the timed forward's leaf call {first} is "
            f"{timed.names[first] if first < len(timed.names) else 'missing'}, the counted forward's "
            f"{expected[first] if first < len(expected) else 'nothing'} ({len(timed.names)} vs {len(expected)} "
            "calls): a model whose control flow depends on its input cannot be timed layer by layer")


def run_rounds(model: torch.nn.Module, x: torch.Tensor, expected: List[str], warmup: int, repetitions: int,
               phase: Optional[Callable[[int], Any]] = None) -> Dict[str, List]:
    """Warm-up forwards (with and without hooks), then `repetitions` rounds of (whole forward, forward timed
    layer by layer), alternating so that any drift of the clock or the temperature touches both alike.
    phase(round) opens the telemetry phase of a timed round (a context manager), if given."""
    for _ in range(warmup):
        model(x)
        time_layers(model, x)
    synchronize(x.device)
    forward_s: List[float] = []
    forward_wall_s: List[float] = []
    layer_s: List[List[float]] = []
    layer_wall_s: List[List[float]] = []
    for repetition in range(repetitions):
        with phase(repetition) if phase else contextlib.nullcontext():
            device_s, wall_s = time_forward(model, x)
            timed = time_layers(model, x)
        check_call_order(expected, timed, repetition)
        forward_s.append(device_s)
        forward_wall_s.append(wall_s)
        layer_s.append(timed.seconds)
        layer_wall_s.append(timed.wall_seconds)
    return {"forward_s": forward_s, "forward_wall_s": forward_wall_s, "layer_s": layer_s,
            "layer_wall_s": layer_wall_s}

