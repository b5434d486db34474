"""The cuda_vecadd workload's report (registered in analysis.registry): per memory mode, the time of the
whole program and of each part against K and the launch shape, the kernel's bandwidth against the published
peak and a device copy of the same run, the CPU baseline, and the two log-log charts.

    tables.py    result documents -> rows (per case, per copy, per result), recomputed from the raw arrays
    sections.py  rows -> Sections (one table per memory mode, the CPU's, the copy's, the builds')
    plots.py     time against K, log-log, three GPU shapes and the CPU line
"""

from __future__ import annotations

from typing import List

import pandas as pd

from hpml.analysis.cuda_vecadd.sections import cuda_vecadd_sections
from hpml.analysis.cuda_vecadd.tables import CASE_COLUMNS, COPY_COLUMNS, INFO_COLUMNS, case_rows, copy_rows, point_info
from hpml.analysis.results import WorkloadResults
from hpml.report_kit.sections import Section

__all__ = ["sections"]


def sections(results: WorkloadResults) -> List[Section]:
    rows = pd.DataFrame(results.rows(case_rows), columns=CASE_COLUMNS)
    unreadable = {id(doc) for doc, _ in results.unreadable}
    readable = [doc for doc in results.ok if id(doc) not in unreadable]
    copies = pd.DataFrame(results.rows(copy_rows, readable), columns=COPY_COLUMNS)
    infos = pd.DataFrame(results.rows(point_info, readable), columns=INFO_COLUMNS)
    return cuda_vecadd_sections(infos, rows, copies)
