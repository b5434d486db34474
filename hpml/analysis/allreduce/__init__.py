"""The allreduce workload's report (registered in analysis.registry): nccl-tests' algbw and busbw per
message size, recomputed from the raw per-rank times.

    tables.py    result documents -> the bandwidth table; the ring model the train tables share
    sections.py  the table -> Sections
    plots.py     busbw against the message size
"""

from __future__ import annotations

from typing import List

import pandas as pd

from hpml.analysis.allreduce.sections import allreduce_sections
from hpml.analysis.allreduce.tables import COLUMNS, allreduce_rows
from hpml.analysis.results import WorkloadResults
from hpml.report_kit.sections import Section

__all__ = ["sections"]


def sections(results: WorkloadResults) -> List[Section]:
    table = pd.DataFrame(results.rows(allreduce_rows), columns=COLUMNS)
    return allreduce_sections(table.sort_values(["sweep", "point", "repeat", "bytes"], kind="stable",
                                                ignore_index=True))
