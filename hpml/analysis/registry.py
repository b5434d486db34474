"""Which report each workload has: one line per workload in each table.

REPORTS: workload name (identity.workload of its results) -> its report's parts, each a function that turns
its results (analysis.results.WorkloadResults) into report sections. analysis.report calls them in this order
and names no workload; a result of a workload missing here is listed, not tabulated. The train report has four
parts: its own tables; the time-to-accuracy sections (analysis.tta), present only when some run evaluated; the
batch augmentation sections (analysis.batch_aug), present only when some evaluated run trained on several
copies per sample or with Cutout; the training-techniques sections (analysis.techniques), each present only
where its results are.

RESULT_CHECKS: workload name -> the rules its ok results must pass beyond the envelope every result
shares (contract.result_schema); a result that breaks one is a Problem, never handed to its report. A
training variant that writes the train workload's arrays registers train's checks under its own name.
"""

from __future__ import annotations

from typing import Callable, Dict, List, Tuple

from hpml.analysis import (
    allreduce,
    batch_aug,
    cuda_vecadd,
    dataloader,
    paleo,
    probe,
    quantize,
    synthetic,
    techniques,
    train,
    tta,
)
from hpml.analysis.results import WorkloadResults
from hpml.contract.result_schema import ResultCheck
from hpml.report_kit.sections import Section

ReportPart = Callable[[WorkloadResults], List[Section]]

REPORTS: Dict[str, Tuple[ReportPart, ...]] = {
    "train": (train.sections, tta.sections, batch_aug.sections, techniques.sections),
    "synthetic": (synthetic.sections,),
    "allreduce": (allreduce.sections,),
    "cuda_vecadd": (cuda_vecadd.sections,),
    "probe": (probe.sections,),
    "paleo": (paleo.sections,),
    "quantize": (quantize.sections,),
    "dataloader": (dataloader.sections,),
}

RESULT_CHECKS: Dict[str, ResultCheck] = {
    "train": train.training_result_checks,
}
