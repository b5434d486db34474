"""One node's sampler: a sampling thread for the cheap counters and an edge thread for the phase marks.

Threads, not a process: NVML is called through ctypes, which releases the GIL for the call itself, and a
tick costs 60 us per GPU on an H200 (0.3-0.4 ms under training, waits for the GIL included); ResNet-50 on
one H200 trained at the same rate with it on and off (-0.001 %; docs/studies/gpu-telemetry.md). A process
would need its own NVML set-up and a channel for the marks, for nothing measurable.
The edge thread is apart from the sampling thread because its work blocks: it waits until the device reaches
a mark, then reads the total-energy counter (milliseconds per GPU); the samples keep their period meanwhile.
That read stalls the workload's own CUDA calls for about as long (the launched tta_digits worker's 70 ms epochs
lost 11 ms to the reads at their edges on an H100: docs/results/tta_digits_device/launched/), and the counter
refreshes only about every 0.1 s, so the counters are read at most once per ENERGY_MIN_GAP_S: an edge closer than
that to the last read is placed between reads (phases.EnergyReads), and the sampling thread makes the read after
it once the gap has passed.

Everything NVML-specific is behind `Reader` (nvml.py's NvmlReader), so the buffer, the schedule and the
phase bookkeeping here run the same with any reader.
"""

from __future__ import annotations

import math
import queue
import statistics
import threading
import time
from array import array
from typing import Any, Callable, Dict, List, Optional, Protocol, Tuple

from hpml.contract.telemetry_format import MAX_SAMPLES_PER_GPU, SAMPLE_FIELDS
from hpml.workloads.common.telemetry.buffer import SampleBuffer
from hpml.workloads.common.telemetry.phases import EdgeClock, EnergyReads, PhaseLog

TICK_STATS_LIMIT = 1 << 16  # ticks whose read time is kept for the sidecar's "sampler" statistics
# Phases shorter than this get their energy from reads around them, not at their edges: 20 times the counter's
# refresh period (about 0.1 s), so the interpolated share of a phase's energy is small, and at most 2 reads a
# second (about 6 ms of stalls a second at 3 ms a read) however short the phases are.
ENERGY_MIN_GAP_S = 0.5
JOIN_TIMEOUT_S = 30.0  # stop() waits this long for each thread (an edge waits for the device to reach it)
_STOP = None


class Reader(Protocol):
    infos: List[Dict[str, Any]]  # per GPU: cuda_index, nvml_index, uuid, name, mig, unavailable

    def read(self, gpu: int) -> Dict[str, Optional[float]]: ...

    def energy_mj(self, gpu: int) -> Optional[float]: ...

    def close(self) -> None: ...


class Sampler:
    def __init__(self, reader: Reader, interval_ms: int, *, limit: int = MAX_SAMPLES_PER_GPU,
                 clock: Callable[[], float] = time.monotonic, energy_min_gap_s: float = ENERGY_MIN_GAP_S):
        self.reader = reader
        self.interval_ms = interval_ms
        self.uuids = [info["uuid"] for info in reader.infos]
        self.buffer = SampleBuffer(self.uuids, SAMPLE_FIELDS, limit)
        self.phases = PhaseLog(self.uuids)
        self.energy_reads = EnergyReads()
        self.energy_min_gap_s = energy_min_gap_s
        self._energy_pending = False  # an edge went unread: the next read (once the gap has passed) brackets it
        self._clock = clock
        self.t0_unix = time.time()
        self._t0 = clock()
        self.edges = EdgeClock(self.now)
        self._marks: "queue.SimpleQueue[Optional[Tuple[int, str, float, Any]]]" = queue.SimpleQueue()
        self._stop = threading.Event()
        self._threads: List[threading.Thread] = []
        self.tick_read_s = array("d")
        self.ticks = 0
        self.overruns = 0  # ticks skipped because a read (or the wait for the GIL) outlasted a period
        self.errors: Dict[str, str] = {}  # what broke a tick or an edge, first occurrence only

    def now(self) -> float:
        """Seconds since sampling began: every t_s, start_s and end_s of the sidecar."""
        return self._clock() - self._t0

    # --- sampling ----------------------------------------------------------------------------------------

    def tick(self) -> None:
        """One sample of every GPU, each stamped with the time its reads began."""
        begin = self._clock()
        rows = {}
        for gpu, uuid in enumerate(self.uuids):
            t_s = self.now()
            row = self.reader.read(gpu)
            row["t_s"] = t_s
            rows[uuid] = row
        self.buffer.append(rows)
        self.ticks += 1
        if len(self.tick_read_s) < TICK_STATS_LIMIT:
            self.tick_read_s.append(self._clock() - begin)

    def _sample_loop(self) -> None:
        deadline = self._clock()
        while not self._stop.is_set():
            try:
                self.tick()
                if self._energy_pending and self.energy_due():
                    self.read_energy()
            except Exception as error:  # noqa: BLE001 - a broken tick must not end the sampling
                self.errors.setdefault("tick", f"{type(error).__name__}: {error}")
            period = self.interval_ms / 1000.0 * self.buffer.decimation
            deadline += period
            now = self._clock()
            if now > deadline:  # keep the grid: skip the ticks already missed instead of bunching them
                missed = math.ceil((now - deadline) / period)
                self.overruns += missed
                deadline += missed * period
            self._stop.wait(deadline - now)

    # --- phase edges -------------------------------------------------------------------------------------

    def mark(self, phase_id: int, which: str, event: Any = None) -> None:
        """From the workload's thread: costs a queue put; the edge thread does the rest."""
        self._marks.put((phase_id, which, self.now(), event))

    def energy_due(self) -> bool:
        last = self.energy_reads.last_s()
        return last is None or self.now() - last >= self.energy_min_gap_s

    def read_energy(self) -> Dict[str, Optional[float]]:
        """Every GPU's total-energy counter, kept with the time the reads began."""
        self._energy_pending = False
        t_s = self.now()
        energy = {uuid: self.reader.energy_mj(gpu) for gpu, uuid in enumerate(self.uuids)}
        self.energy_reads.add(t_s, energy)
        return energy

    def resolve(self, item: Tuple[int, str, float, Any]) -> None:
        phase_id, which, host_t, event = item
        t_s = self.edges.resolve(event, host_t)
        if self.energy_due():
            self.phases.edge(phase_id, which, t_s, self.read_energy())
        else:
            self._energy_pending = True
            self.phases.edge(phase_id, which, t_s, None)

    def _edge_loop(self) -> None:
        while True:
            item = self._marks.get()
            if item is _STOP:
                return
            try:
                self.resolve(item)
            except Exception as error:  # noqa: BLE001 - the edge keeps the host's time, without energy
                self.errors.setdefault("edge", f"{type(error).__name__}: {error}")
                self.phases.edge(item[0], item[1], item[2], {})

    # --- life ----------------------------------------------------------------------------------------------

    def start(self) -> None:
        self._threads = [threading.Thread(target=self._sample_loop, name="hpml-telemetry-samples", daemon=True),
                         threading.Thread(target=self._edge_loop, name="hpml-telemetry-edges", daemon=True)]
        for thread in self._threads:
            thread.start()

    def stop(self, timeout_s: float = JOIN_TIMEOUT_S) -> None:
        """Ends both threads (the edge thread after the marks already queued) and closes the reader. A thread
        still stuck after timeout_s (a hung device) is left behind; marks it never reached keep the host's
        time, without energy."""
        self._stop.set()
        self._marks.put(_STOP)
        for thread in self._threads:
            thread.join(timeout_s)
        stuck = [thread.name for thread in self._threads if thread.is_alive()]
        if stuck:
            self.errors.setdefault("stop", f"still running after {timeout_s:g} s: {', '.join(stuck)}")
        while True:
            try:
                item = self._marks.get_nowait()
            except queue.Empty:
                break
            if item is not _STOP:
                self.phases.edge(item[0], item[1], item[2], {})
        if not stuck:
            if self._energy_pending:  # the read after the last unread edges
                try:
                    self.read_energy()
                except Exception as error:  # noqa: BLE001 - those edges then have no energy
                    self.errors.setdefault("edge", f"{type(error).__name__}: {error}")
            self.reader.close()

    def stats(self) -> Dict[str, Any]:
        """The sidecar's "sampler": how long one tick's reads of every GPU took (wall clock, waits for the
        GIL included), how many ticks were skipped, what broke."""
        reads = sorted(self.tick_read_s)
        spread = None
        if reads:
            spread = {"median": statistics.median(reads), "p99": reads[min(len(reads) - 1, int(0.99 * len(reads)))],
                      "max": reads[-1], "of_ticks": len(reads)}
        return {"kind": "thread", "gpus": len(self.uuids), "ticks": self.ticks, "overruns": self.overruns,
                "tick_read_s": spread, "energy_reads": len(self.energy_reads),
                "energy_min_gap_s": self.energy_min_gap_s, "errors": dict(self.errors)}
