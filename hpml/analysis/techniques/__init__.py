"""The training-techniques sections of the train report (issue 22; docs/studies/training-techniques.md): the full
phase profile, precision side by side, activation checkpointing, GPU utilization per setting. The registry's
train entry adds them after the time-to-accuracy sections; each appears only where its results are.

    runs.py      one ok train result -> one record (raw arrays; telemetry numbers on demand)
    profile.py   a configuration's records -> its per-epoch profile (data .. other, shares of the wall time)
    compare.py   records -> the precision, checkpointing and utilization frames (pure)
    sections.py  frames -> Sections (rounded cells), pie chart and curves
    plots.py     the PNGs
"""

from __future__ import annotations

from typing import List

from hpml.analysis.results import WorkloadResults
from hpml.analysis.techniques.runs import technique_run
from hpml.analysis.techniques.sections import technique_sections
from hpml.report_kit.sections import Section


def sections(results: WorkloadResults) -> List[Section]:
    records = results.rows(lambda doc: [{**technique_run(doc), "doc": doc}])
    return technique_sections(records) if records else []
