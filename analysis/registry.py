"""Which report each workload has: one line per workload in each table.

REPORTS: workload name (identity.workload of its results) -> sections(results), the function that turns
its results (analysis.results.WorkloadResults) into report sections. analysis.report calls them in this
order and names no workload; a result of a workload missing here is listed, not tabulated. The train
entry adds the time-to-accuracy sections (analysis.tta) after its own tables: the same results, one more
study of them, present only when some run evaluated; then the batch augmentation sections (analysis.batch_aug),
present only when some evaluated run trained on several copies per sample or with Cutout; then the
training-techniques sections (analysis.techniques), each present only where its results are.

RESULT_CHECKS: workload name -> the rules its ok results must pass beyond the envelope every result
shares (contract.result_schema); a result that breaks one is a Problem, never handed to its report. A
training variant that writes the train workload's arrays registers train's checks under its own name.
"""

from __future__ import annotations

from typing import Callable, Dict, List

from analysis import allreduce, batch_aug, cuda_vecadd, dataloader, paleo, probe, synthetic, techniques, train, tta
from analysis import quantize
from analysis.results import WorkloadResults
from analysis.sections import Section
from contract.result_schema import ResultCheck


def train_and_time_to_accuracy(results: WorkloadResults) -> List[Section]:
    """The train tables, then the time-to-accuracy sections of the results that evaluated (none: nothing), then the
    batch augmentation sections where some evaluated run used M > 1 copies or Cutout (none: nothing), then the
    training-techniques sections (analysis.techniques: phase profile, precision, checkpointing, utilization) where
    their results are."""
    return train.sections(results) + tta.sections(results) + batch_aug.sections(results) + \
        techniques.sections(results)


REPORTS: Dict[str, Callable[[WorkloadResults], List[Section]]] = {
    "train": train_and_time_to_accuracy,
    "synthetic": synthetic.sections,
    "allreduce": allreduce.sections,
    "cuda_vecadd": cuda_vecadd.sections,
    "probe": probe.sections,
    "paleo": paleo.sections,
    "quantize": quantize.sections,
    "dataloader": dataloader.sections,
}

RESULT_CHECKS: Dict[str, ResultCheck] = {
    "train": train.training_result_checks,
}
