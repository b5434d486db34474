"""Run records -> the time-to-accuracy table: one row per (configuration, target, data path, hardware). Pure.

The data path (host / device, analysis.tta.runs) is part of the key: runs that loaded their data differently are
never pooled, even where the configuration is the same.

Over the runs of a row with a target (n):
- converged: how many reached the target, and the fraction k / n.
- TTA (evaluation included) and TTA without evaluation time, each over the k converged runs: mean, sample std
  (ddof = 1), CoV = std / mean (never rounded), median, min, max; std and CoV are NaN for k < 2 (one time
  has no spread), every statistic NaN for k = 0.
- olympic mean (analysis.stats.olympic_mean, MLPerf's rule): the converged times without the fastest and the
  slowest; one non-converged run stands as the slowest and is dropped; with more than one the olympic mean is
  invalid (NaN, olympic_status says why), as it is for n < 3.
- epochs to target: mean, sample std, CoV over the converged runs (what MLPerf's reference-convergence CoV is
  of); steps to target: mean.
"""

from __future__ import annotations

import statistics
from collections import Counter
from typing import Any, Dict, List, Optional, Sequence

import pandas as pd

from hpml.analysis.stats import (
    OLYMPIC_MIN_RUNS,
    SAMPLE_DDOF,
    coefficient_of_variation,
    natural_key,
    olympic_mean,
    sample_std,
)

NAN = float("nan")
COLUMNS = ["config_key", "model", "target", "data_placement", "hardware", "runs", "converged", "converged_fraction",
           "std_ddof"]


def spread(values: Sequence[float], prefix: str) -> Dict[str, float]:
    """mean, std (ddof=1), cov, median, min, max of values under prefix_*; NaN where undefined."""
    names = ("mean", "std", "cov", "median", "min", "max")
    if not values:
        return {f"{prefix}_{name}": NAN for name in names}
    spread_known = len(values) > 1  # one value has no spread (stats would say 0.0)
    return {f"{prefix}_mean": statistics.fmean(values), f"{prefix}_std": sample_std(values) if spread_known else NAN,
            f"{prefix}_cov": coefficient_of_variation(values, SAMPLE_DDOF) if spread_known else NAN,
            f"{prefix}_median": statistics.median(values), f"{prefix}_min": min(values), f"{prefix}_max": max(values)}


def olympic_status(runs: int, not_converged: int) -> str:
    if not_converged > 1:
        return f"invalid: {not_converged} runs not converged (MLPerf allows one)"
    if runs < OLYMPIC_MIN_RUNS:
        return f"undefined: {runs} run(s), needs {OLYMPIC_MIN_RUNS}"
    return "ok" if not not_converged else "ok: the non-converged run dropped as the slowest"


def _olympic(values: Sequence[float], not_converged: int) -> float:
    result: Optional[float] = olympic_mean(values, not_converged)
    return NAN if result is None else result


def row(members: List[Dict[str, Any]]) -> Dict[str, Any]:
    first = members[0]
    done = [r for r in members if r["converged"]]
    missed = len(members) - len(done)
    tta = [r["tta_s"] for r in done]
    tta_train = [r["tta_train_s"] for r in done]
    epochs = [float(r["epochs_to_target"]) for r in done]
    steps = [float(r["steps_to_target"]) for r in done]
    return {
        "config_key": first["config_key"], "model": first["model"], "target": first["target"],
        "data_placement": first["data_placement"], "hardware": first["hardware"], "runs": len(members),
        "converged": len(done), "converged_fraction": len(done) / len(members), "std_ddof": SAMPLE_DDOF,
        **spread(tta, "tta_s"), "tta_s_olympic": _olympic(tta, missed),
        **spread(tta_train, "tta_train_s"), "tta_train_s_olympic": _olympic(tta_train, missed),
        "olympic_status": olympic_status(len(members), missed),
        **spread(epochs, "epochs"),
        "steps_mean": statistics.fmean(steps) if steps else NAN,
        **step_efficiency(members),
        "paths": " ".join(r["path"] for r in members),
    }


def step_efficiency(members: List[Dict[str, Any]]) -> Dict[str, Any]:
    """The row's mean MFU (NaN when a run has none: mfu_na says why) and its runs' verdicts, the most common first."""
    found = [r["step"] for r in members]
    known = [f["mfu"] for f in found if f["mfu"] is not None]
    verdicts = [v for v, _ in Counter(f["bound"] for f in found if f["bound"]).most_common()]
    return {"mfu_mean": statistics.fmean(known) if len(known) == len(found) else NAN,
            "mfu_na": next((f["mfu_na"] for f in found if f["mfu_na"]), None), "bound": " / ".join(verdicts) or None}


def row_groups(runs: Sequence[Dict[str, Any]]) -> List[List[Dict[str, Any]]]:
    """The runs that had a target, one list per (configuration, target, data path, hardware), sorted in that order
    (hardware by natural_key)."""
    groups: Dict[tuple, List[Dict[str, Any]]] = {}
    for run in runs:
        if run["target"] is not None:
            key = (run["config_key"], run["target"], run["data_placement"], run["hardware"])
            groups.setdefault(key, []).append(run)
    return [groups[key] for key in sorted(groups, key=lambda k: (k[0], k[1], k[2], natural_key(k[3])))]


def tta_table(runs: Sequence[Dict[str, Any]]) -> pd.DataFrame:
    """One row per (configuration, target, data path, hardware) of the runs that had a target."""
    rows = [row(members) for members in row_groups(runs)]
    frame = pd.DataFrame(rows)
    return frame if rows else pd.DataFrame(columns=COLUMNS)

