"""The telemetry part of the report: a "GPU telemetry" section with the method, one line per reason some
results have none, and the sidecars that could not be read; then the per-GPU table (telemetry_gpus.csv/.tex),
the per-point energy table (telemetry_energy.csv/.tex) and one time-series PNG per point. Formatting only:
the numbers are analysis.telemetry.stats'; the CSVs keep them at full precision, None as an empty cell.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

import pandas as pd

from hpml.analysis.telemetry.plots import draw_timeline
from hpml.analysis.telemetry.points import Gathered, PointTelemetry
from hpml.analysis.telemetry.stats import (
    BUSY_UTIL_GPU_MIN,
    LOW_SM_ACTIVITY_MAX,
    PERCENTILE_METHOD,
    Spread,
    counted_gpus,
    phase_name,
    unavailable_reasons,
)
from hpml.contract.units import GIB
from hpml.report_kit.numbers import number
from hpml.report_kit.sections import Figure, Section, Table

NA = "n/a"

METHOD_NOTE = (
    "Each node's NVML sampler reads its workers' GPUs every `telemetry.interval_ms`. The numbers are over the "
    "**timed window** only: the union of the phases the workload marked timed (a sample at t counts when "
    "start ≤ t ≤ end), or every sample where no phase was timed (window \"all\": a run that stopped in warm-up). "
    "Samples are time-uniform (one every interval × decimation, the period column), so a mean over samples is "
    f"a mean over time; median, p5 and p95 are numpy's `{PERCENTILE_METHOD}` percentiles. A null (a value NVML "
    "cannot give: GPM SM activity before Hopper, utilization on MIG) is unavailable, never 0: it is left out of "
    f"every mean and percentile, and a field with no value in the window reads {NA}. NVML averages utilization "
    "and power over its own period (up to 1 s), so phase edges blur by up to that. **Busy but under-occupied**: "
    f"mean utilization.gpu ≥ {BUSY_UTIL_GPU_MIN:g} % and mean GPM SM activity < {LOW_SM_ACTIVITY_MAX:g} % "
    "(utilization.gpu counts a period as busy when any kernel ran, even one using 1 SM). **Energy**: the "
    "total-energy counter at each phase's edges (read there, or within 0.5 s of the last read interpolated between "
    "the reads around it); per timed phase = the timed phases' sum / their number; "
    "per sample = the sum over every GPU / the timed phases' samples (every rank's, as the workload marks them)."
)



def _spread(value: Optional[Spread]) -> str:
    return NA if value is None else f"{value.mean:.1f} / {value.median:.1f} [{value.p5:.1f}, {value.p95:.1f}]"


def _joules(value: Optional[float]) -> str:
    if value is None:
        return NA
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.2f}" if abs(value) >= 1 else f"{value:.3g}"


def _flag(value: Optional[bool]) -> str:
    return NA if value is None else "yes" if value else "no"


def _spread_columns(prefix: str, value: Optional[Spread]) -> Dict[str, Optional[float]]:
    return {f"{prefix}_{key}": (None if value is None else getattr(value, key)) for key in Spread._fields}


def _ident(point: PointTelemetry) -> Dict[str, Any]:
    sweep, number, repeat = point.identity
    return {"sweep": sweep, "point": number, "repeat": repeat, "status": point.doc["status"],
            "path": point.doc.get("path")}


def _lead(point: PointTelemetry, several_sweeps: bool) -> List[Any]:
    sweep, number, repeat = point.identity
    return ([sweep] if several_sweeps else []) + [number, repeat, point.doc["status"]]


def gpu_table(points: Sequence[PointTelemetry], several_sweeps: bool) -> Table:
    headers = (["sweep"] if several_sweeps else []) + [
        "point", "repeat", "status", "GPU", "model", "window", "samples × period",
        "utilization.gpu % mean / median [p5, p95]", "utilization.memory % mean / median [p5, p95]",
        "peak memory used (GiB)", "mean power (W)", "SM activity % (mean)", "SM occupancy % (mean)",
        "busy but under-occupied", "energy per timed phase (J)"]
    rows, records = [], []
    for point in points:
        for sidecar, gpu, s in point.gpus:
            name = phase_name(sidecar.phases)
            peak_gib = None if s.mem_used_peak_bytes is None else s.mem_used_peak_bytes / GIB
            rows.append(_lead(point, several_sweeps) + [
                f"{sidecar.host} cuda:{gpu.cuda_index}", gpu.name + (" (MIG)" if gpu.mig else ""), s.window,
                f"{s.samples} × {sidecar.period_ms:g} ms", _spread(s.util_gpu), _spread(s.util_mem),
                number(peak_gib, ".2f", missing=NA), number(s.power_mean_w, ".1f", missing=NA),
                number(s.sm_activity_mean, ".1f", missing=NA), number(s.sm_occupancy_mean, ".1f", missing=NA),
                _flag(s.busy_under_occupied),
                NA if s.energy_per_phase_j is None else f"{_joules(s.energy_per_phase_j)} per {name}"])
            records.append({
                **_ident(point), "host": sidecar.host, "node_rank": sidecar.node_rank,
                "cuda_index": gpu.cuda_index, "nvml_index": gpu.nvml_index, "uuid": gpu.uuid, "name": gpu.name,
                "mig": gpu.mig, "window": s.window, "samples": s.samples, "period_ms": sidecar.period_ms,
                **_spread_columns("util_gpu", s.util_gpu), **_spread_columns("util_mem", s.util_mem),
                "mem_used_peak_bytes": s.mem_used_peak_bytes, "power_mean_w": s.power_mean_w,
                "sm_activity_mean": s.sm_activity_mean, "sm_occupancy_mean": s.sm_occupancy_mean,
                "busy_under_occupied": s.busy_under_occupied, "timed_energy_j": s.timed_energy_j,
                "energy_per_phase_j": s.energy_per_phase_j, "phase_name": name})
    return Table("telemetry_gpus", headers, rows, pd.DataFrame(records))


def energy_table(points: Sequence[PointTelemetry], several_sweeps: bool) -> Table:
    headers = (["sweep"] if several_sweeps else []) + [
        "point", "repeat", "status", "GPUs", "timed phases", "timed time (s)", "samples", "energy, all GPUs (J)",
        "per timed phase (J)", "per sample (J)", "time series"]
    rows, records = [], []
    for point in points:
        e, figure = point.energy, point.figure if point.timeline is not None else None
        read = "" if point.complete else f" ({len(point.sidecars)} of {point.named} nodes read)"
        gpus = f"{len(counted_gpus(point.sidecars))}{read}"  # each GPU once, as the energy sums them
        rows.append(_lead(point, several_sweeps) + [
            gpus, f"{e.phase_name} × {e.phases}" if e.phases else "none", f"{e.timed_s:.1f}",
            NA if e.samples is None else e.samples, _joules(e.energy_j), _joules(e.per_phase_j),
            _joules(e.per_sample_j), figure or NA])
        records.append({**_ident(point), "gpus": len(counted_gpus(point.sidecars)), "sidecars_read": len(point.sidecars),
                        "sidecars_named": point.named, "phase_name": e.phase_name, "timed_phases": e.phases,
                        "timed_s": e.timed_s, "samples": e.samples, "energy_j": e.energy_j,
                        "energy_per_phase_j": e.per_phase_j, "energy_per_sample_j": e.per_sample_j,
                        "figure": figure})
    return Table("telemetry_energy", headers, rows, pd.DataFrame(records))


def _bullets(lines: Sequence[str]) -> str:
    return "\n".join(f"- {line}" for line in lines)


def telemetry_sections(gathered: Gathered) -> List[Section]:
    """[] when there is nothing to say (no result at all)."""
    if not (gathered.points or gathered.without or gathered.problems):
        return []
    text = [METHOD_NOTE] if gathered.points else []
    text += [_bullets(gathered.without)] if gathered.without else []
    if gathered.problems:
        text.append(f"Telemetry that could not be read ({len(gathered.problems)}); the tables leave it out:\n\n"
                    + _bullets(gathered.problems))
    sections = [Section("GPU telemetry", markdown="\n\n".join(text))]
    if not gathered.points:
        return sections
    several_sweeps = len({p.identity[0] for p in gathered.points}) > 1
    reasons = unavailable_reasons([gpu for p in gathered.points for _, gpu, _ in p.gpus])
    after = ("Fields the sampler recorded as unavailable (shown n/a where no value is left):\n\n" + _bullets(reasons)
             if reasons else "")
    sections.append(Section("Utilization, memory and power per GPU (timed window)",
                            tables=[gpu_table(gathered.points, several_sweeps)], after=after, level=3))
    figures = [Figure(p.figure, _drawer(p), kind="telemetry timeline")
               for p in gathered.points if p.timeline is not None]
    sections.append(Section("Energy per point (timed window)",
                            tables=[energy_table(gathered.points, several_sweeps)],
                            after="Time series: one PNG per point (the last column): utilization.gpu and "
                                  "utilization.memory per GPU against time, phase edges marked, the timed "
                                  "window shaded.", figures=figures, level=3))
    return sections


def _drawer(point: PointTelemetry):
    sweep, number, repeat = point.identity
    title = f"{sweep}: point {number}, repeat {repeat} ({point.doc['status']})"
    return lambda path: draw_timeline(point.timeline, title, path)
