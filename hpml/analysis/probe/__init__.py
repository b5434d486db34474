"""The probe workload's report (registered in analysis.registry): per GPU, measured matmul TFLOP/s, memory and
host-link GB/s against the published peaks; the probe's matmul timing against plain torch.matmul.

    tables.py    result documents -> rows, every rate recomputed from the raw per-repetition times
    sections.py  the rows -> Sections
"""

from __future__ import annotations

from typing import List

from hpml.analysis.probe.sections import probe_sections
from hpml.analysis.probe.tables import PEAK_COLUMNS, REFERENCE_COLUMNS, frame, peak_rows, reference_rows
from hpml.analysis.results import WorkloadResults
from hpml.report_kit.sections import Section

__all__ = ["sections"]


def sections(results: WorkloadResults) -> List[Section]:
    order = ["sweep", "point", "repeat", "rank"]
    peaks = frame(results.rows(peak_rows), PEAK_COLUMNS).sort_values(order, kind="stable", ignore_index=True)
    readable = [doc for doc in results.ok if all(doc is not bad for bad, _ in results.unreadable)]
    checks = frame(results.rows(reference_rows, readable), REFERENCE_COLUMNS)
    return probe_sections(peaks, checks.sort_values(order, kind="stable", ignore_index=True))
