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
from hpml.analysis.train.efficiency import (
    MFU_INTRO,
    SCALING_HEADERS,
    differs_in_technique,
    efficiency_of,
    efficiency_table,
    na_lines,
    scaling_cells,
    techniques_of,
)
from hpml.analysis.train.runs import is_train_run, train_run
from hpml.analysis.train.sections import train_sections
from hpml.analysis.tta.runs import has_evaluation
from hpml.report_kit.sections import Section, Table

__all__ = ["sections", "training_result_checks"]


def sections(results: WorkloadResults) -> List[Section]:
    runs = results.rows(lambda doc: [train_run(doc)], [doc for doc in results.docs if is_train_run(doc)])
    return (train_sections(runs) + limit_sections(results)) if runs else []


def limit_sections(results: WorkloadResults) -> List[Section]:
    """MFU and the verdict of the runs no other section tabulates (analysis/train/efficiency.py: one home each):
    not evaluated (those are in the time-to-accuracy table), not a techniques study (its own table)."""
    if differs_in_technique(results.ok):
        return []
    docs = results.rows(lambda doc: [] if has_evaluation(doc) else [{"doc": doc, **efficiency_of(doc["measurements"], techniques_of(doc))}])
    if not docs:
        return []
    table = efficiency_table([d["doc"] for d in docs], label_of=lambda doc: doc["identity"]["sweep"])
    body = [scaling_cells(r) for r in table.to_dict("records")]
    return [Section("How far from the GPU's limit: MFU and what bounds each step", level=3,
                    markdown=MFU_INTRO + na_lines(table),
                    tables=[Table("train_efficiency", SCALING_HEADERS, body, table)])]
