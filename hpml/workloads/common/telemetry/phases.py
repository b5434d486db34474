"""The workload's phase marks, and when the device reached them.

A phase (warm-up, an epoch, a benchmark iteration, a message size) has two edges. At each edge the main thread
only enqueues a mark, with a CUDA event recorded on its stream; the sampler's edge thread later finds the
time at which the device reached the event (EdgeClock) and reads the GPUs' energy counters then. The host
runs ahead of the device by up to the launch queue's depth (a step or two of a training loop), so the host's
own clock at the mark would misplace the edge by that much; where the workload synchronized before the mark
(every epoch end of train, every all-reduce size) the two agree.

A phase's energy is the difference of each GPU's total-energy counter at its two edges (mJ -> J). An edge that
came within the sampler's ENERGY_MIN_GAP_S of the last counter read is not read itself (a read costs milliseconds
that the workload's kernel launches pay: issue 36): its counter value is interpolated linearly in time between
the reads around it (`counter_at`), which the sampler keeps (`EnergyReads`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

START, END = "start", "end"


@dataclass
class _Phase:
    name: str
    index: Optional[int]
    timed: bool
    samples: Optional[int]
    start_s: Optional[float] = None
    end_s: Optional[float] = None
    energy_mj: Dict[str, Dict[str, Optional[float]]] = field(default_factory=dict)  # edge -> uuid -> mJ


def energy_j(start_mj: Optional[float], end_mj: Optional[float]) -> Optional[float]:
    """Joules between two counter reads; None when either is missing or the counter went back (a driver
    reload resets it)."""
    if start_mj is None or end_mj is None or end_mj < start_mj:
        return None
    return (end_mj - start_mj) / 1000.0


class EnergyReads:
    """Every read of the total-energy counters: (t_s, {uuid: mJ or None}), in time order, from two threads."""

    def __init__(self) -> None:
        self._reads: List[Tuple[float, Dict[str, Optional[float]]]] = []
        self._lock = threading.Lock()

    def add(self, t_s: float, energy_mj: Mapping[str, Optional[float]]) -> None:
        with self._lock:
            self._reads.append((t_s, dict(energy_mj)))
            self._reads.sort(key=lambda read: read[0])  # two threads: a read may land after a later one

    def last_s(self) -> Optional[float]:
        with self._lock:
            return self._reads[-1][0] if self._reads else None

    def __len__(self) -> int:
        return len(self._reads)

    def counter_at(self, uuid: str, t_s: float) -> Optional[float]:
        """The counter at t_s, linear between the nearest reads before and after it that have a value; None
        outside them, or where the counter went back between them (a driver reload resets it)."""
        with self._lock:
            points = [(t, e[uuid]) for t, e in self._reads if e.get(uuid) is not None]
        before = [p for p in points if p[0] <= t_s]
        after = [p for p in points if p[0] >= t_s]
        if not before or not after:
            return None
        (t0, e0), (t1, e1) = before[-1], after[0]
        if e1 < e0:
            return None
        return e0 if t1 == t0 else e0 + (e1 - e0) * (t_s - t0) / (t1 - t0)


class PhaseLog:
    """Phases as the workload opened them, their edges as the edge thread resolved them."""

    def __init__(self, uuids: Sequence[str]):
        self.uuids = tuple(uuids)
        self._phases: List[_Phase] = []
        self._lock = threading.Lock()

    def open(self, name: str, index: Optional[int], timed: bool, samples: Optional[int]) -> int:
        with self._lock:
            self._phases.append(_Phase(name, index, timed, samples))
            return len(self._phases) - 1

    def edge(self, phase_id: int, which: str, t_s: float, energy_mj: Optional[Mapping[str, Optional[float]]]) -> None:
        """energy_mj: the counters read at this edge; None: not read here (interpolated from `reads` on export)."""
        with self._lock:
            phase = self._phases[phase_id]
            setattr(phase, f"{which}_s", t_s)
            phase.energy_mj[which] = None if energy_mj is None else dict(energy_mj)

    def _at_edge(self, phase: _Phase, which: str, reads: Optional[EnergyReads]) -> Dict[str, Optional[float]]:
        read = phase.energy_mj.get(which, {})
        if read is not None:
            return read
        t_s = getattr(phase, f"{which}_s")
        return {u: reads.counter_at(u, t_s) for u in self.uuids} if reads is not None else {}

    def export(self, reads: Optional[EnergyReads] = None) -> List[Dict[str, Any]]:
        """The sidecar's "phases" (contract/telemetry_format.py), in the order they were opened."""
        with self._lock:
            phases = list(self._phases)
        rows = []
        for phase in phases:
            start, end = self._at_edge(phase, START, reads), self._at_edge(phase, END, reads)
            rows.append({"name": phase.name, "index": phase.index, "timed": phase.timed,
                         "start_s": phase.start_s, "end_s": phase.end_s, "samples": phase.samples,
                         "energy_j": {u: energy_j(start.get(u), end.get(u)) for u in self.uuids}})
        return rows


class EdgeClock:
    """When the device reached a CUDA event, in the sampler's clock (seconds).

    An event the edge thread finds not yet reached, it waits for (synchronize() sleeps without the GIL:
    the events are made with blocking=True): the edge is the moment the wait ends, and that pair becomes
    the anchor. An event already reached when the thread gets to it (the thread was reading energy for an
    earlier edge) is placed by the GPU's own timer: anchor time + elapsed_time(anchor event, event), kept
    within [the host's mark, now], the interval in which it must have happened.
    """

    def __init__(self, clock: Callable[[], float], anchor: Optional[Tuple[Any, float]] = None):
        self.clock = clock
        self.anchor = anchor  # (a reached timing event, the clock's time then)

    def resolve(self, event: Any, host_t: float) -> float:
        if event is None:  # no device to wait for (CPU): the host's time is the edge
            return host_t
        waited = not event.query()
        if waited:
            event.synchronize()
        now = self.clock()
        if waited:
            self.anchor = (event, now)
            return now
        if self.anchor is None:
            return host_t
        anchor_event, anchor_t = self.anchor
        try:
            estimate = anchor_t + anchor_event.elapsed_time(event) / 1000.0
        except RuntimeError:  # an event without timing: the host's mark is the best bound there is
            return host_t
        return min(max(estimate, host_t), now)
