"""The full phase profile of a training run: where each pass of the epoch loop spent its wall time.

Per epoch (rank 0), in seconds:
    data        sum over steps of (step time - train time): what a step spent between the end of the previous
                step and the start of its own copy, i.e. waiting for the batch (host path) or slicing and
                augmenting it (device path). On a GPU it is read on the device's timeline, so it is the time the
                device waited, and the phases below never overlap it
    h2d, forward (with the loss), backward, optimizer: the sums of the step phases (workloads/train/phases.py)
    evaluation  the held-out evaluation after the epoch (0 when none ran)
    other       loop wall time - all of the above: the epoch's start and end (barriers, the final synchronize),
                the epoch record's collectives, logging, a checkpoint save
The loop wall time (measurements.loop_time_s) runs from the epoch's start to the barrier after its evaluation,
so the parts add up to it by construction; what can go wrong is a negative "other" (phases longer than the wall
clock), which CONSISTENCY_TOLERANCE bounds and the report flags.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Mapping

import pandas as pd

from hpml.contract.train_format import DEVICE_PHASES, PHASES

PARTS = (*PHASES, "evaluation", "other")  # the step phases as the worker names them, then the rest of the wall
STEP_PHASES = DEVICE_PHASES  # what a step's phase record holds besides its data wait
CONSISTENCY_TOLERANCE = 0.02  # "other" may fall below 0 by at most 2 % of the wall time (clock read-outs)


def epoch_profile(record: Mapping[str, Any], epoch: int) -> Dict[str, float]:
    """Seconds of each part of one epoch (0-based index) and the wall time they add up to."""
    phases = {p: sum(record["phase_time_s"][p][epoch]) for p in STEP_PHASES}
    steps = sum(record["step_time_s"][epoch])
    parts = {"data": steps - sum(phases.values()), **phases, "evaluation": record["eval_time_s"][epoch]}
    wall = record["loop_time_s"][epoch]
    parts["other"] = wall - sum(parts.values())
    return {"wall": wall, **parts}


def profile_rows(records: List[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """One configuration's runs -> one row per epoch (mean over the runs that ran it, n), then a row "timed" with
    the sums over every run's timed epochs divided by the runs (the pie chart's numbers); each part also as a
    share of the wall time. Plain Python: a report over thousands of configurations makes one DataFrame, not
    one per configuration (issue 25)."""
    rows = []
    per_run = [[epoch_profile(r, epoch) for epoch in range(r["epochs"])] for r in records]  # each epoch once
    for epoch in range(max(r["epochs"] for r in records)):
        profiles = [run[epoch] for run in per_run if epoch < len(run)]
        rows.append({"epoch": str(epoch + 1), "runs": len(profiles),
                     **{k: sum(p[k] for p in profiles) / len(profiles) for k in ("wall",) + PARTS}})
    timed = [run[e] for r, run in zip(records, per_run) for e in r["timed"]]
    rows.append({"epoch": "timed", "runs": len(records),
                 **{k: sum(p[k] for p in timed) / len(records) for k in ("wall",) + PARTS}})
    for row in rows:
        row.update({f"{part}_share": row[part] / row["wall"] if row["wall"] else math.nan for part in PARTS})
    return rows


def profile_frame(records: List[Mapping[str, Any]]) -> pd.DataFrame:
    """profile_rows as a DataFrame (its CSV)."""
    return pd.DataFrame(profile_rows(records))


def inconsistent_epochs(profile: pd.DataFrame | List[Mapping[str, Any]]) -> List[str]:
    """The rows whose "other" is below -CONSISTENCY_TOLERANCE of the wall: the phases exceed the wall clock."""
    rows = profile.to_dict("records") if isinstance(profile, pd.DataFrame) else profile
    return [row["epoch"] for row in rows if row["other_share"] < -CONSISTENCY_TOLERANCE]
