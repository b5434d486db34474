"""The time-to-accuracy report (issue 13; docs/studies/time-to-accuracy.md): train results that carry an
evaluation record (measurements.evaluation, derived.tta: contract/saved_model.py). analysis.registry runs it
after the train sections, on the same results; it adds nothing when no result was evaluated.

    runs.py      one result -> one run record (TTA recomputed from the per-evaluation arrays)
    tables.py    run records -> one row per (configuration, target, data path, hardware): n, converged, TTA statistics
    energy.py    the same rows: energy, energy per sample, GPU-hours and cost to target; the power-sampling check
    compare.py   those rows -> each pair of hardware types: difference of means against the spread
    sections.py  rows -> Sections (rounded cells), the figures per configuration
    plots.py     accuracy vs wall-clock of every run; TTA spread per hardware
"""

from __future__ import annotations

from typing import List

from hpml.analysis.results import WorkloadResults
from hpml.analysis.tta.compare import hardware_comparison
from hpml.analysis.tta.energy import energy_table
from hpml.analysis.tta.runs import has_evaluation, tta_run
from hpml.analysis.tta.sections import tta_sections
from hpml.analysis.tta.tables import tta_table
from hpml.report_kit.sections import Section

__all__ = ["sections"]


def sections(results: WorkloadResults) -> List[Section]:
    evaluated = [doc for doc in results.ok if has_evaluation(doc)]
    if not evaluated:
        return []
    runs = results.rows(lambda doc: [tta_run(doc)], evaluated)
    if not runs:
        return []
    table = tta_table(runs)
    return tta_sections(runs, table, hardware_comparison(table), energy_table(runs))
