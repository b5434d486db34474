"""Run records -> the batch augmentation table: one row per (group, variant), variants ordered by M. Pure.

Over the runs of a row (n: its seeds):
- converged: how many reached the target (k / n); epochs to target and TTA (evaluation included, analysis.tta's
  clock): mean, sample std (ddof = 1), CoV, median, min, max over the k converged runs (NaN where undefined:
  analysis.tta.tables.spread);
- the runs that did not converge: their best top-1 and the clock at their last evaluation (the cap), mean;
- epoch time, step time (each run's median), samples/s and images/s: the same statistics over the n runs;
- GPU use (utilization.gpu, SM activity; %): the same statistics over the runs that have telemetry (their count:
  util_gpu_runs, sm_activity_runs);
- what reaching the target cost: energy, energy per sample, GPU-hours and cost to target, the power-sampling check
  (analysis.tta.energy.row_fields);
- per-step cost factor = mean step time at M / (M x mean step time of the group's single-copy variant: M = 1, one
  chunk, the same Cutout). 1 means a step of M x B samples costs exactly M single-copy steps; below 1 the larger
  step uses the device better (a small step is bound by kernel launches, not by arithmetic). NaN without such a
  variant in the group.
"""

from __future__ import annotations

import statistics
from typing import Any, Dict, List, Sequence, Tuple

import pandas as pd

from hpml.analysis.stats import SAMPLE_DDOF
from hpml.analysis.tta.energy import row_fields
from hpml.analysis.tta.tables import spread

NAN = float("nan")
COLUMNS = ["group_key", "model", "hardware", "data_placement", "copies", "chunks", "cutout_holes", "cutout_size",
           "runs", "converged"]
MEASURES = ("epoch_time_s", "step_time_s", "samples_per_s", "images_per_s")
GPU_USE = ("util_gpu", "sm_activity")  # None in a run without telemetry: over the runs that have it

Variant = Tuple[int, int, int, int]  # copies, chunks, Cutout holes, Cutout size


def is_variant_of_interest(run: Dict[str, Any]) -> bool:
    return run["copies"] > 1 or run["cutout_holes"] > 0


def shown_groups(runs: Sequence[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The runs of the groups where some run used batch augmentation or Cutout; the other groups are not this
    study's (their report is the train and TTA sections alone)."""
    shown = {run["group_key"] for run in runs if is_variant_of_interest(run)}
    return [run for run in runs if run["group_key"] in shown]


def variant_of(run: Dict[str, Any]) -> Variant:
    return run["copies"], run["chunks"], run["cutout_holes"], run["cutout_size"]


def _mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else NAN


def row(members: List[Dict[str, Any]], single_step_s: float) -> Dict[str, Any]:
    first = members[0]
    done = [r for r in members if r["converged"]]
    missed = [r for r in members if not r["converged"] and r["best_top1"] is not None]
    out: Dict[str, Any] = {
        "group_key": first["group_key"], "model": first["model"], "hardware": first["hardware"],
        "data_placement": first["data_placement"], "copies": first["copies"], "chunks": first["chunks"],
        "cutout_holes": first["cutout_holes"], "cutout_size": first["cutout_size"], "batch": first["batch"],
        "samples_per_step": first["samples_per_step"], "target": first["target"], "runs": len(members),
        "converged": len(done), "std_ddof": SAMPLE_DDOF,
        **spread([float(r["epochs_to_target"]) for r in done], "epochs"), **spread([r["tta_s"] for r in done], "tta_s"),
        "missed_best_top1_mean": _mean([r["best_top1"] for r in missed]),
        "missed_last_elapsed_s_mean": _mean([r["last_elapsed_s"] for r in missed]),
        **spread([r["best_top1"] for r in members if r["best_top1"] is not None], "best_top1"),
    }
    for measure in MEASURES:
        out.update(spread([r[measure] for r in members], measure))
    for measure in GPU_USE:
        known = [r[measure] for r in members if r.get(measure) is not None]
        out.update(spread(known, measure), **{f"{measure}_runs": len(known)})
    out.update(row_fields(members))
    out["step_cost_factor"] = out["step_time_s_mean"] / (first["copies"] * single_step_s)
    out["seeds"] = " ".join(str(r["seed"]) for r in sorted(members, key=lambda r: r["seed"]))
    out["paths"] = " ".join(r["path"] for r in members)
    return out


def _single_copy_step_s(groups: Dict[Variant, List[Dict[str, Any]]], variant: Variant) -> float:
    """The mean step time of the single-copy, whole-step variant with this variant's Cutout; NaN if none ran."""
    base = groups.get((1, 1, variant[2], variant[3]))
    return _mean([r["step_time_s"] for r in base]) if base else NAN


def variant_table(runs: Sequence[Dict[str, Any]]) -> pd.DataFrame:
    by_group: Dict[str, Dict[Variant, List[Dict[str, Any]]]] = {}
    for run in runs:
        by_group.setdefault(run["group_key"], {}).setdefault(variant_of(run), []).append(run)
    rows = [row(variants[v], _single_copy_step_s(variants, v))
            for key in sorted(by_group) for variants in [by_group[key]] for v in sorted(variants)]
    return pd.DataFrame(rows) if rows else pd.DataFrame(columns=COLUMNS)
