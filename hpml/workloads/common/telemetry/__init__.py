"""GPU telemetry of a point, as every workload uses it (through the worker scaffold, workloads/common/worker.py):

    with worker.telemetry.phase("epoch", index=e, timed=True, samples=n):   # every rank calls it alike
        ...

Each node's local rank 0 samples the GPUs its node's workers use (NVML, a thread: sampler.py) and, when the
point ends, writes the node's sidecar (sidecar.py); every other rank, and every rank of a point without
telemetry (disabled, on the CPU, no NVML), holds a NullTelemetry, whose phase() does nothing, so workloads
call it unconditionally and a CPU run pays for nothing. result.json's "telemetry" block (telemetry_block)
says what happened on every node. Formats: contract/telemetry_format.py; the study: docs/studies/gpu-telemetry.md.

Telemetry never fails a point: whatever goes wrong in it becomes status "unavailable" with a one-line reason.
"""

from __future__ import annotations

import contextlib
import os
import socket
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence

import torch

from hpml.conf.schema import TelemetryConfig
from hpml.contract.result_format import reason_line
from hpml.contract.telemetry_format import sidecar_name
from hpml.workloads.common.telemetry.nvml import NvmlReader, TelemetryUnavailable
from hpml.workloads.common.telemetry.phases import END, START
from hpml.workloads.common.telemetry.sampler import Reader, Sampler
from hpml.workloads.common.telemetry.sidecar import sidecar_document, write_sidecar

DISABLED_REASON = "telemetry.enabled=false"
NO_CUDA_REASON = "no CUDA device (the workers run on the CPU)"


def node_rank() -> int:
    """This node's rank among the job's nodes (torchrun's GROUP_RANK; 0 outside torchrun)."""
    if "GROUP_RANK" in os.environ:
        return int(os.environ["GROUP_RANK"])
    return int(os.environ.get("RANK", 0)) // max(1, int(os.environ.get("LOCAL_WORLD_SIZE", 1)))


class NullTelemetry:
    """No sampling here (another rank samples, or nobody does): phase() costs a nullcontext."""

    def __init__(self, status: Optional[str], reason: Optional[str], interval_ms: int):
        self.status, self.reason, self.interval_ms = status, reason, interval_ms

    def phase(self, name: str, *, index: Optional[int] = None, timed: bool = False,
              samples: Optional[int] = None) -> "contextlib.AbstractContextManager[None]":
        return contextlib.nullcontext()

    def state(self) -> Optional[Dict[str, Any]]:
        """What this rank tells rank 0 for result.json: None on ranks that sample nothing for a node."""
        return None if self.status is None else {"node": node_rank(), "status": self.status, "reason": self.reason}

    def finish(self, point_dir: Path) -> Optional[Dict[str, Any]]:
        return self.state()


NO_TELEMETRY = NullTelemetry(None, None, 0)  # the default of workload functions called without a worker


class NodeTelemetry:
    """The sampler of this node, owned by its local rank 0."""

    status, reason = "ok", None

    def __init__(self, sampler: Sampler, interval_ms: int, cuda: bool):
        self.sampler, self.interval_ms, self.cuda = sampler, interval_ms, cuda
        self.node = node_rank()
        self._finished: Optional[Dict[str, Any]] = None

    def _event(self) -> Any:
        """A CUDA event at this point of the stream (the device's time of the edge: phases.EdgeClock)."""
        if not self.cuda:
            return None
        event = torch.cuda.Event(enable_timing=True, blocking=True)
        event.record()
        return event

    @contextlib.contextmanager
    def phase(self, name: str, *, index: Optional[int] = None, timed: bool = False,
              samples: Optional[int] = None) -> Iterator[None]:
        """A phase of the workload. samples: every rank's samples (images) in it, for energy per sample."""
        phase_id = self.sampler.phases.open(name, index, timed, samples)
        self.sampler.mark(phase_id, START, self._event())
        try:
            yield
        finally:  # a phase that raised still ends here
            self.sampler.mark(phase_id, END, self._event())

    def state(self) -> Dict[str, Any]:
        return {"node": self.node, "status": self.status, "reason": self.reason}

    def finish(self, point_dir: Path) -> Dict[str, Any]:
        """Stops the sampler and writes the sidecar (once); the node's state for result.json. Never raises."""
        if self._finished is None:
            try:
                self.sampler.stop()
                write_sidecar(point_dir, sidecar_document(
                    host=socket.gethostname(), node_rank=self.node, interval_ms=self.interval_ms,
                    t0_unix=self.sampler.t0_unix, decimation=self.sampler.buffer.decimation,
                    gpus=self.sampler.reader.infos, samples=self.sampler.buffer.export(),
                    phases=self.sampler.phases.export(self.sampler.energy_reads), sampler=self.sampler.stats()))
                self._finished = self.state()
            except Exception as error:  # noqa: BLE001 - telemetry never fails a point
                self._finished = {"node": self.node, "status": "unavailable",
                                  "reason": reason_line(f"sidecar not written: {type(error).__name__}: {error}")}
        return self._finished


Telemetry = Any  # NullTelemetry | NodeTelemetry: phase(), state(), finish()


def start_sampling(reader: Reader, interval_ms: int, cuda: bool) -> NodeTelemetry:
    """A running sampler over `reader`; with cuda, its edge clock anchored on an event the device has reached."""
    sampler = Sampler(reader, interval_ms)
    if cuda:
        anchor = torch.cuda.Event(enable_timing=True, blocking=True)
        anchor.record()
        anchor.synchronize()
        sampler.edges.anchor = (anchor, sampler.now())
    sampler.start()
    return NodeTelemetry(sampler, interval_ms, cuda)


def start_telemetry(settings: TelemetryConfig, device_type: str, local_rank: int, gpus: int) -> Telemetry:
    """This rank's telemetry: a running sampler on local rank 0 of a node whose workers use CUDA, with NVML;
    else a NullTelemetry saying why. gpus: how many CUDA ordinals (0..gpus-1) the node's workers use."""
    if not settings.enabled:
        return NullTelemetry("disabled" if local_rank == 0 else None, DISABLED_REASON, settings.interval_ms)
    if local_rank != 0:
        return NullTelemetry(None, None, settings.interval_ms)
    if device_type != "cuda":
        return NullTelemetry("unavailable", NO_CUDA_REASON, settings.interval_ms)
    try:
        return start_sampling(NvmlReader(gpus), settings.interval_ms, cuda=True)
    except TelemetryUnavailable as error:
        return NullTelemetry("unavailable", reason_line(error), settings.interval_ms)
    except Exception as error:  # noqa: BLE001 - telemetry never fails a point
        return NullTelemetry("unavailable", reason_line(f"{type(error).__name__}: {error}"), settings.interval_ms)


def telemetry_block(states: Sequence[Optional[Dict[str, Any]]], interval_ms: int,
                    final: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """result.json's "telemetry" block from every node's state (one per node's local rank 0; None elsewhere),
    as gathered at the start; `final`, rank 0's own node's state at the end, replaces its node's (a sidecar
    that could not be written makes that node unavailable).

    ok when some node sampled: sidecars names theirs, and reason says which nodes did not and why;
    otherwise the common status (disabled, or unavailable) with the reason (per node where they differ).
    """
    by_node = {s["node"]: s for s in states if s is not None}
    if final is not None:
        by_node[final["node"]] = final
    nodes: List[Dict[str, Any]] = [by_node[node] for node in sorted(by_node)]
    ok = [s for s in nodes if s["status"] == "ok"]
    others = [s for s in nodes if s["status"] != "ok"]
    if ok:
        status, sidecars = "ok", [sidecar_name(s["node"]) for s in ok]
    else:
        statuses = {s["status"] for s in nodes}
        status, sidecars = ("disabled" if statuses == {"disabled"} else "unavailable"), []
    reasons = {s["reason"] for s in others}
    if not others:
        reason = None
    elif len(reasons) == 1 and not ok:
        reason = reason_line(others[0]["reason"])
    else:
        reason = reason_line("; ".join(f"node {s['node']}: {s['reason']}" for s in others))
    return {"status": status, "reason": reason, "interval_ms": interval_ms, "sidecars": sidecars}
