"""The batch augmentation report (issue 23; docs/studies/batch-augmentation.md): train results that evaluated, in
the configurations where some run trained on M > 1 copies of each sample (workload.batch_augmentation) or with
Cutout. analysis.registry adds it after the train and time-to-accuracy sections; it adds nothing otherwise, so
every other study's report is unchanged.

    runs.py      one result -> one run record (every number from the raw arrays)
    tables.py    run records -> one row per (group, variant): epochs and time to target, epoch time, rates, cost
    plots.py     validation error against epoch, one line per variant
    sections.py  rows -> Sections (rounded cells) and the figure per group
"""

from __future__ import annotations

from typing import List

from hpml.analysis.batch_aug.runs import ba_run, copies_of, cutout_of
from hpml.analysis.batch_aug.sections import batch_augmentation_sections
from hpml.analysis.batch_aug.tables import shown_groups, variant_table
from hpml.analysis.results import WorkloadResults
from hpml.analysis.tta.runs import has_evaluation
from hpml.report_kit.sections import Section

__all__ = ["sections"]


def sections(results: WorkloadResults) -> List[Section]:
    evaluated = [doc for doc in results.ok if has_evaluation(doc)]
    if not any(copies_of(doc) != 1 or cutout_of(doc) for doc in evaluated):
        return []  # no run of this study: the report stays the train and TTA sections alone
    # every evaluated run becomes a record: a group's single-copy runs are its baseline
    runs = shown_groups(results.rows(lambda doc: [ba_run(doc)], evaluated))
    if not runs:
        return []
    return batch_augmentation_sections(runs, variant_table(runs))
