"""GPU telemetry in the report (issue 12): for every result of every workload, ok or failed, what its NVML
sidecars (contract/telemetry_format.py) say about the timed window, and one line per reason where there is none.

    series.py    result.json's block and the sidecars, read with bounds and checked; the timed window
    stats.py     per GPU: utilization spreads, peak memory, power, SM activity, the under-occupied flag,
                 energy; per point: energy per timed phase and per sample (pure)
    points.py    results -> the points to show, the lines for the others, the unreadable sidecars
    sections.py  -> Sections (telemetry_gpus, telemetry_energy tables); plots.py the time series per point
"""

from __future__ import annotations

from typing import Any, List, Mapping, Sequence

from hpml.analysis.telemetry.points import gather
from hpml.analysis.telemetry.sections import telemetry_sections
from hpml.report_kit.sections import Section

__all__ = ["sections"]


def sections(rows: Sequence[Mapping[str, Any]]) -> List[Section]:
    """rows: every loaded result document (any workload, any status), each with "path"."""
    return telemetry_sections(gather(rows))
