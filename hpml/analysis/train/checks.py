"""What an ok result of the train workload must hold beyond the envelope (registered in analysis.registry):
the raw per-epoch arrays its tables recompute every number from. A failed run may have stopped before
measuring anything, so none of this is asked of it.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping

from hpml.analysis.train.runs import DATA_PATHS
from hpml.contract.result_format import WARMUP_EPOCHS, timed_values
from hpml.contract.result_schema import (
    DURATION_LISTS,
    EPOCH_TIMES,
    NUMBERS,
    POSITIVE_INTEGER,
    SCALING,
    Kind,
    check_kinds,
    shown,
)

TRAINING_MEASUREMENTS: Dict[str, Kind] = {
    "config.workload.scaling": SCALING,
    "measurements.epoch_time_s": EPOCH_TIMES,
    "measurements.epoch_time_s_per_rank": DURATION_LISTS,
    "measurements.step_time_s": DURATION_LISTS,
    "measurements.train_loss": NUMBERS,  # NaN allowed: a diverged run is still a measured run
    "measurements.train_accuracy": NUMBERS,
    "measurements.steps_per_epoch": POSITIVE_INTEGER,
    "measurements.per_worker_batch": POSITIVE_INTEGER,
    "measurements.global_batch": POSITIVE_INTEGER,
    "measurements.samples_per_epoch": POSITIVE_INTEGER,
}


def training_consistency(doc: Mapping[str, Any]) -> List[str]:
    """Rules between arrays, for an ok training result whose arrays already have the right kinds."""
    m, errors = doc["measurements"], []
    epochs = len(m["epoch_time_s"])
    if epochs <= WARMUP_EPOCHS:
        errors.append(f"measurements.epoch_time_s: {epochs} epoch(s); an ok result needs at least "
                      f"{WARMUP_EPOCHS + 1} (epoch 1 is warm-up and is not reported)")
    cold = m.get("cold_epochs")  # optional: results written before it existed have only epoch 1 cold
    if cold is not None and not (isinstance(cold, list) and all(type(i) is int and 0 <= i < epochs for i in cold)):
        errors.append(f"measurements.cold_epochs: expected epoch indices 0..{epochs - 1}, got {shown(cold)}")
        return errors  # the checks below count timed epochs by it
    # optional: results written before it existed ran the host path; when present it must name a known path
    if "data_placement" in m and m["data_placement"] not in DATA_PATHS:
        errors.append(f"measurements.data_placement: expected one of {', '.join(DATA_PATHS)}, "
                      f"got {shown(m['data_placement'])}")
    for key in ("epoch_time_s_per_rank", "step_time_s"):
        if len(m[key]) != epochs:
            errors.append(f"measurements.{key}: {len(m[key])} epoch(s), but epoch_time_s has {epochs}")
    if len(m["step_time_s"]) == epochs and any(len(steps) == 0 for steps in timed_values(m["step_time_s"], m)):
        errors.append("measurements.step_time_s: a timed epoch has no steps")
    errors += evaluation_errors(m.get("evaluation"))
    resources, world_size = doc["config"]["resources"], doc["environment"]["world_size"]
    planned = resources["nodes"] * resources["workers_per_node"]
    if world_size != planned:
        errors.append(f"environment.world_size: {world_size} workers ran, but config.resources asked for "
                      f"nodes * workers_per_node = {planned}")
    return errors


def evaluation_errors(evaluation: Any) -> List[str]:
    """measurements.evaluation (optional: runs that never evaluated have none): an object of equal-length lists,
    epochs increasing from 1, top-1 fractions in [0, 1] (a percentage there would read as a run at its target
    from the first evaluation)."""
    if evaluation is None:
        return []
    if not isinstance(evaluation, dict) or not all(isinstance(v, list) for v in evaluation.values()):
        return [f"measurements.evaluation: expected an object of lists, got {shown(evaluation)}"]
    errors, top1, epochs = [], evaluation.get("top1", []), evaluation.get("epoch", [])
    if len({len(v) for v in evaluation.values()}) > 1:
        errors.append("measurements.evaluation: its lists differ in length ("
                      + ", ".join(f"{k} {len(v)}" for k, v in evaluation.items()) + ")")
    if not all(type(t) in (int, float) and 0 <= t <= 1 for t in top1):
        errors.append(f"measurements.evaluation.top1: expected fractions in [0, 1], got {shown(top1)}")
    if not (all(type(e) is int and e >= 1 for e in epochs) and all(a < b for a, b in zip(epochs, epochs[1:]))):
        errors.append(f"measurements.evaluation.epoch: expected increasing epochs >= 1, got {shown(epochs)}")
    return errors


def training_result_checks(doc: Mapping[str, Any]) -> List[str]:
    """Every broken rule of an ok training result, one line each."""
    return check_kinds(doc, TRAINING_MEASUREMENTS) or training_consistency(doc)
