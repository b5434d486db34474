"""The train workload's report (registered in analysis.registry): epoch time and speedup, where a step's time
goes, compute vs communication, all-reduce bandwidth, large batches, instrumentation overhead, batch limit.

    runs.py      one result -> one run record (numbers from the raw arrays)
    tables.py    run records -> DataFrames (pure)
    sections.py  DataFrames -> Sections (rounded cells) and the speedup figure
    plots.py     the speedup PNG
    checks.py    what an ok train result must hold (its extra validation)
"""

from __future__ import annotations

from typing import List

from hpml.analysis.results import WorkloadResults
from hpml.analysis.train.checks import training_result_checks
from hpml.analysis.train.runs import is_train_run, train_run
from hpml.analysis.train.sections import train_sections
from hpml.report_kit.sections import Section

__all__ = ["sections", "training_result_checks"]


def sections(results: WorkloadResults) -> List[Section]:
    runs = results.rows(lambda doc: [train_run(doc)], [doc for doc in results.docs if is_train_run(doc)])
    return train_sections(runs) if runs else []
