"""The quantize report (issue 24; docs/studies/quantization.md): accuracy, size and time per stage beside the
float model, the bars against float and torch.ao, the scales per layer, the range checks, the histograms.

    runs.py      one result -> one run record (top-1, bytes and times recomputed from the raw arrays)
    tables.py    run records -> frames (stages, bars, scales, checks)
    sections.py  frames -> Sections (rounded cells) and the figures per configuration
    plots.py     weight and activation histograms with [min, max], mean ± kσ and ±r marked
"""

from __future__ import annotations

from typing import List

from hpml.analysis.quantize.runs import quantize_run
from hpml.analysis.quantize.sections import quantize_sections
from hpml.analysis.results import WorkloadResults
from hpml.report_kit.sections import Section

__all__ = ["sections"]


def sections(results: WorkloadResults) -> List[Section]:
    runs = results.rows(lambda doc: [quantize_run(doc)])
    return quantize_sections(runs) if runs else []
