"""The paleo workload's report (registered in analysis.registry): PALEO's per-layer predictions against the
measured per-layer times, the platform percent of peak, the layer sum against the whole forward, and the
study's time per image at a reference GPU's published peaks.

    model.py     PALEO's formulas (predicted time, achieved PPP, error, time per image)
    tables.py    one result -> its layer rows, summary, peaks and reference rows (recomputed from raw times)
    sections.py  the tables -> Sections; plots.py one result's bar chart
"""

from __future__ import annotations

from typing import List

from hpml.analysis.paleo.sections import paleo_sections
from hpml.analysis.paleo.tables import point_tables
from hpml.analysis.results import WorkloadResults
from hpml.report_kit.sections import Section

__all__ = ["sections"]


def sections(results: WorkloadResults) -> List[Section]:
    return paleo_sections(results.rows(point_tables))
