"""The synthetic workload's report (registered in analysis.registry): Horovod's synthetic benchmark,
recomputed from every rank's raw iteration times.

    runs.py      one result -> one run row (rates per rank and iteration, Horovod's summary)
    tables.py    run rows -> scaling, protocol, comparison and paired tables (pure)
    sections.py  tables -> Sections; plots.py the throughput figure
"""

from __future__ import annotations

from typing import List

from hpml.analysis.results import WorkloadResults
from hpml.analysis.synthetic.runs import runs_frame
from hpml.analysis.synthetic.sections import synthetic_sections
from hpml.analysis.synthetic.tables import comparison_table, paired_table, protocol_table, scaling_table
from hpml.report_kit.sections import Section

__all__ = ["sections"]


def sections(results: WorkloadResults) -> List[Section]:
    runs = runs_frame(results)
    if runs.empty:
        return []
    return synthetic_sections(scaling_table(runs), protocol_table(runs), comparison_table(runs), paired_table(runs))
