"""The dataloader workload's report (registered in analysis.registry): per group of settings, epoch time and
samples/s per DataLoader setting and the device path, the speedup against PyTorch's defaults, the fastest setting
named, and samples/s against num_workers.

    runs.py      result documents -> one record per result (its setting, its group, its timed epochs)
    tables.py    records -> a table per group; the answer to "is the default optimal?"
    sections.py  the tables -> Sections;  plots.py  samples/s against num_workers
"""

from __future__ import annotations

from typing import List

from hpml.analysis.dataloader.runs import run_record
from hpml.analysis.dataloader.sections import dataloader_sections
from hpml.analysis.dataloader.tables import dataloader_tables
from hpml.analysis.results import WorkloadResults
from hpml.report_kit.sections import Section

__all__ = ["sections"]


def sections(results: WorkloadResults) -> List[Section]:
    records = results.rows(lambda doc: [run_record(doc)])
    return dataloader_sections(dataloader_tables(records), records)
