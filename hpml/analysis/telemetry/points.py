"""Every loaded result (any workload, any status) -> the points whose telemetry can be shown, one line per
distinct reason for the others, and one line per sidecar that could not be read.

Only a block whose status is "ok" leads to reading files; a result without telemetry (status unavailable or
disabled, or no block: written before hpml recorded it) costs a dictionary lookup, so a report of thousands
of CPU results is no slower. A point's numbers and the lines of its PNG are taken as soon as its sidecars
are read, and its raw columns dropped: one point's samples are in memory at a time.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from hpml.analysis.stats import natural_key
from hpml.analysis.telemetry.plots import Timeline, timeline
from hpml.analysis.telemetry.series import Block, Gpu, Sidecar, SidecarError, load_sidecar, read_block
from hpml.analysis.telemetry.stats import GpuStats, PointEnergy, gpu_stats, point_energy

NO_BLOCK = "no telemetry block in result.json (written before hpml recorded GPU telemetry)"


@dataclass
class PointTelemetry:
    doc: Mapping[str, Any]  # the result document (with "path")
    sidecars: List[Sidecar]  # those that could be read, by node rank; their columns dropped once summarized
    named: int  # how many the block names
    gpus: List[Tuple[Sidecar, Gpu, GpuStats]] = field(default_factory=list)  # by node rank, CUDA index
    energy: PointEnergy | None = None
    timeline: Timeline | None = None  # None: nothing worth drawing
    figure: str = ""  # the PNG's file name, unique in the report

    @property
    def complete(self) -> bool:
        return len(self.sidecars) == self.named

    @property
    def identity(self) -> Tuple[str, Any, int]:
        ident = self.doc["identity"]
        return ident["sweep"], ident["point"], ident["repeat"]


def summarized(doc: Mapping[str, Any], sidecars: List[Sidecar], named: int) -> PointTelemetry:
    sidecars = sorted(sidecars, key=lambda sidecar: sidecar.node_rank)
    point = PointTelemetry(doc, sidecars, named)
    point.gpus = [(sidecar, gpu, gpu_stats(gpu, sidecar.phases)) for sidecar in sidecars
                  for gpu in sorted(sidecar.gpus, key=lambda g: g.cuda_index)]
    point.energy = point_energy(sidecars, point.complete)
    point.timeline = timeline(sidecars)
    for sidecar in sidecars:
        for gpu in sidecar.gpus:
            gpu.columns = {}
    return point


@dataclass
class Gathered:
    points: List[PointTelemetry] = field(default_factory=list)
    without: List[str] = field(default_factory=list)  # one line per distinct reason, with its count
    problems: List[str] = field(default_factory=list)  # one line per sidecar or block that could not be used


def _without_line(status: str, reason: str, count: int) -> str:
    what = {"unavailable": "GPU telemetry unavailable", "disabled": "GPU telemetry disabled"}.get(
        status, "No GPU telemetry")
    return f"{what} for {count} result(s): {reason}"


def gather(rows: Sequence[Mapping[str, Any]]) -> Gathered:
    gathered = Gathered()
    without: Counter = Counter()
    for doc in rows:
        block, why = read_block(doc)
        where = doc.get("path") or "a result"
        if why is not None:
            gathered.problems.append(f"`{where}`: {why}")
        elif block is None:
            without[("none", NO_BLOCK)] += 1
        elif block.status != "ok":
            without[(block.status, block.reason or "no reason given")] += 1
        elif not block.sidecars:
            gathered.problems.append(f"`{where}`: telemetry status ok but no sidecar named")
        elif not doc.get("path"):
            gathered.problems.append(f"{where}: telemetry sidecars not read (the result was not read from a file)")
        else:
            sidecars, problems = read_sidecars(doc, block)
            gathered.problems.extend(problems)
            if sidecars:
                gathered.points.append(summarized(doc, sidecars, len(dict.fromkeys(block.sidecars))))
    order = {"unavailable": 0, "disabled": 1, "none": 2}
    gathered.without = [_without_line(status, reason, count) for (status, reason), count
                        in sorted(without.items(), key=lambda item: (order[item[0][0]], item[0][1]))]
    gathered.points.sort(key=lambda p: (natural_key(p.identity[0]), -1 if p.identity[1] is None else p.identity[1],
                                        p.identity[2], str(p.doc.get("path"))))
    name_figures(gathered.points)
    return gathered


def read_sidecars(doc: Mapping[str, Any], block: Block) -> Tuple[List[Sidecar], List[str]]:
    """(the sidecars of an ok block that could be read, one line per one that could not)."""
    folder, sidecars, problems = Path(doc["path"]).parent, [], []
    for name in dict.fromkeys(block.sidecars):  # a name listed twice is one node's file: read (and counted) once
        try:
            sidecars.append(load_sidecar(folder / name))
        except SidecarError as error:
            problems.append(f"`{folder / name}`: {error}")
    return sidecars, problems


def point_sidecars(doc: Mapping[str, Any]) -> Tuple[List[Sidecar], int, Optional[str]]:
    """A result's sidecars for a number computed from them: (those read, how many the block names, None), or
    ([], 0, why there are none) in one line (telemetry unavailable or off, no block, a file not readable)."""
    block, why = read_block(doc)
    if why is not None:
        return [], 0, why
    if block is None:
        return [], 0, NO_BLOCK
    if block.status != "ok":
        return [], 0, f"GPU telemetry {block.status}: {block.reason or 'no reason given'}"
    if not block.sidecars or not doc.get("path"):
        return [], 0, "no sidecar to read"
    sidecars, problems = read_sidecars(doc, block)
    if problems:
        return [], 0, problems[0]
    return sidecars, len(dict.fromkeys(block.sidecars)), None


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("._") or "sweep"


def name_figures(points: Sequence[PointTelemetry]) -> None:
    """telemetry_point<n>.png; with the sweep's name when the report covers several sweeps, the repeat when a
    point has several, and _2, _3, ... for what still collides (an earlier attempt kept under attempts/)."""
    several_sweeps = len({p.identity[0] for p in points}) > 1
    repeats: Dict[Tuple[str, Any], set] = {}
    for p in points:
        repeats.setdefault(p.identity[:2], set()).add(p.identity[2])
    used: Counter = Counter()
    for p in points:
        sweep, point, repeat = p.identity
        stem = "telemetry_" + (f"{_safe(sweep)}_" if several_sweeps else "")
        stem += f"point{point}" if point is not None else "run"
        stem += f"_repeat{repeat}" if len(repeats[(sweep, point)]) > 1 else ""
        used[stem] += 1
        p.figure = f"{stem}.png" if used[stem] == 1 else f"{stem}_{used[stem]}.png"


def telemetry_numbers(doc: Mapping[str, Any]) -> Dict[str, Optional[float]]:
    """The point's first GPU over its timed window: utilization.gpu and SM activity means (%), mean power (W),
    NVML's peak memory used (bytes), and the point's energy per sample (J); None each where unknown."""
    numbers: Dict[str, Optional[float]] = dict.fromkeys(
        ("util_gpu_mean", "sm_activity_mean", "power_mean_w", "nvml_mem_peak_bytes", "energy_per_sample_j"))
    points = gather([doc]).points if doc.get("path") else []
    if points and points[0].gpus:
        _, _, stats = points[0].gpus[0]
        numbers.update(util_gpu_mean=stats.util_gpu.mean if stats.util_gpu else None,
                       sm_activity_mean=stats.sm_activity_mean, power_mean_w=stats.power_mean_w,
                       nvml_mem_peak_bytes=stats.mem_used_peak_bytes)
        numbers["energy_per_sample_j"] = points[0].energy.per_sample_j if points[0].energy else None
    return numbers
