"""The numbers of the telemetry report, from one point's sidecars (pure: arrays in, numbers out).

Per GPU, over the timed window (analysis.telemetry.series.timed_mask; every sample when no phase is timed,
as in a run that failed during warm-up):

- utilization.gpu and utilization.memory: mean, median, p5 and p95 of the samples. Percentiles are numpy's
  "linear" method (position (n - 1) x q between the sorted samples); the median is p50 of the same rule.
  Samples are time-uniform (every interval_ms x decimation), so a mean over samples is a mean over time.
- peak memory used (max), mean power, mean GPM SM activity and SM occupancy.
- A null is "unavailable", never 0: it is left out of every mean and percentile; a field all null in the
  window has no number (None, shown "n/a").
- busy but under-occupied: mean utilization.gpu >= BUSY_UTIL_GPU_MIN and mean SM activity < LOW_SM_ACTIVITY_MAX
  (utilization.gpu counts a period as busy when any kernel ran, even on 1 SM of 132); None without SM activity.
- energy of the timed window: the sum over the timed phases of the phase's energy_j (the total-energy
  counter read at its two edges); per phase: that sum / the number of timed phases. Any timed phase without
  energy for the GPU -> None (a partial sum would understate it).

Per point: energy of all GPUs (every sidecar's, each GPU once: counted_gpus), per timed phase, and per sample = energy / the timed
phases' samples (the workload's marks count every rank's samples). None wherever a part is missing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from hpml.analysis.telemetry.series import Gpu, Phase, Sidecar, timed_mask

BUSY_UTIL_GPU_MIN = 80.0  # %: utilization.gpu at or above this is "busy"
LOW_SM_ACTIVITY_MAX = 30.0  # %: GPM SM activity below this, while busy, is "under-occupied"
PERCENTILE_METHOD = "linear"  # numpy's default, named so the report can say which one
QUANTILES = (5, 50, 95)


class Spread(NamedTuple):
    mean: float
    median: float
    p5: float
    p95: float


@dataclass
class GpuStats:
    window: str  # "timed" (the union of the timed phases) or "all" (no phase was timed)
    samples: int  # samples in the window
    util_gpu: Optional[Spread]
    util_mem: Optional[Spread]
    mem_used_peak_bytes: Optional[float]
    power_mean_w: Optional[float]
    sm_activity_mean: Optional[float]
    sm_occupancy_mean: Optional[float]
    busy_under_occupied: Optional[bool]
    timed_energy_j: Optional[float]
    energy_per_phase_j: Optional[float]


@dataclass
class PointEnergy:
    phase_name: str  # the timed phases' name ("epoch"), or "timed phase" when they differ
    phases: int  # timed phases (of the first node's marks)
    timed_s: float  # their summed duration
    samples: Optional[int]  # their summed samples; None when one has none
    energy_j: Optional[float]  # all GPUs of all nodes
    per_phase_j: Optional[float]
    per_sample_j: Optional[float]


def known(values: np.ndarray) -> np.ndarray:
    """The values NVML gave (nulls, read as NaN, left out)."""
    return values[~np.isnan(values)]


def spread(values: np.ndarray) -> Optional[Spread]:
    values = known(values)
    if not len(values):
        return None
    p5, median, p95 = np.percentile(values, QUANTILES, method=PERCENTILE_METHOD)
    return Spread(float(np.mean(values)), float(median), float(p5), float(p95))


def mean_of(values: np.ndarray) -> Optional[float]:
    values = known(values)
    return float(np.mean(values)) if len(values) else None


def peak_of(values: np.ndarray) -> Optional[float]:
    values = known(values)
    return float(np.max(values)) if len(values) else None


def under_occupied(util_gpu_mean: Optional[float], sm_activity_mean: Optional[float]) -> Optional[bool]:
    if util_gpu_mean is None or sm_activity_mean is None:
        return None
    return util_gpu_mean >= BUSY_UTIL_GPU_MIN and sm_activity_mean < LOW_SM_ACTIVITY_MAX


def timed_energy(phases: Sequence[Phase], uuid: str) -> Optional[float]:
    """Sum of the timed phases' energy for one GPU; None without timed phases or when one lacks it."""
    values = [phase.energy_j.get(uuid) for phase in phases if phase.timed]
    if not values or any(value is None for value in values):
        return None
    return float(sum(values))


def gpu_stats(gpu: Gpu, phases: Sequence[Phase]) -> GpuStats:
    columns = gpu.columns
    mask = timed_mask(columns["t_s"], list(phases))
    window = "timed" if mask.any() else "all"
    if window == "all":
        mask = np.ones(len(columns["t_s"]), dtype=bool)
    cut: Dict[str, np.ndarray] = {name: column[mask] for name, column in columns.items()}
    util_gpu, sm_activity = spread(cut["util_gpu"]), mean_of(cut["sm_activity"])
    energy = timed_energy(phases, gpu.uuid)
    timed_count = sum(1 for phase in phases if phase.timed)
    return GpuStats(
        window=window, samples=int(mask.sum()), util_gpu=util_gpu, util_mem=spread(cut["util_mem"]),
        mem_used_peak_bytes=peak_of(cut["mem_used_bytes"]), power_mean_w=mean_of(cut["power_w"]),
        sm_activity_mean=sm_activity, sm_occupancy_mean=mean_of(cut["sm_occupancy"]),
        busy_under_occupied=under_occupied(util_gpu.mean if util_gpu else None, sm_activity),
        timed_energy_j=energy, energy_per_phase_j=None if energy is None else energy / timed_count)


def phase_name(phases: Sequence[Phase]) -> str:
    names = {phase.name for phase in phases if phase.timed}
    return names.pop() if len(names) == 1 else "timed phase"


def counted_gpus(sidecars: Sequence[Sidecar]) -> List[Tuple[Sidecar, Gpu]]:
    """Each GPU of a point once, with the sidecar whose phases give its energy: nodes by rank (a node's sidecar
    read twice counts once), GPUs by UUID across every node (NVML's UUID names one physical GPU or MIG instance
    host-wide, so two ranks on one GPU, or two SLURM nodes on one host sampling the same GPUs, count it once).
    The lowest node rank that lists a GPU keeps it."""
    counted: List[Tuple[Sidecar, Gpu]] = []
    nodes, uuids = set(), set()
    for sidecar in sorted(sidecars, key=lambda sidecar: sidecar.node_rank):
        if sidecar.node_rank in nodes:
            continue
        nodes.add(sidecar.node_rank)
        for gpu in sorted(sidecar.gpus, key=lambda gpu: gpu.cuda_index):
            if gpu.uuid.lower() not in uuids:
                uuids.add(gpu.uuid.lower())
                counted.append((sidecar, gpu))
    return counted


def point_energy(sidecars: Sequence[Sidecar], complete: bool) -> PointEnergy:
    """complete: every sidecar the result names was read (else the GPUs' sum is partial: no energy)."""
    first = min(sidecars, key=lambda sidecar: sidecar.node_rank)
    timed = first.timed_phases
    durations = [phase.end_s - phase.start_s for phase in timed if None not in (phase.start_s, phase.end_s)]
    counts = [phase.samples for phase in timed]
    samples = sum(counts) if counts and all(count is not None for count in counts) else None
    energies = [timed_energy(sidecar.phases, gpu.uuid) for sidecar, gpu in counted_gpus(sidecars)]
    energy = (float(sum(energies)) if complete and energies and all(e is not None for e in energies) else None)
    return PointEnergy(
        phase_name=phase_name(timed), phases=len(timed), timed_s=float(sum(durations)), samples=samples,
        energy_j=energy, per_phase_j=None if energy is None else energy / len(timed),
        per_sample_j=None if energy is None or not samples else energy / samples)


def unavailable_reasons(gpus: Sequence[Gpu]) -> List[str]:
    """"field: why" for each field a GPU declares unavailable (GPM off Hopper, MIG), once per distinct pair."""
    return sorted({f"{name}: {why}" for gpu in gpus for name, why in gpu.unavailable.items()})
