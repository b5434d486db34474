"""The batch augmentation sections: a heading with the definitions, then per group its table (analysis.batch_aug.
tables; the frame, full precision, is batch_augmentation.csv) and its validation-error figure. Formatting only."""

from __future__ import annotations

from typing import Any, Dict, List

import pandas as pd

from hpml.analysis.batch_aug.plots import drawer
from hpml.analysis.batch_aug.tables import variant_of
from hpml.analysis.stats import SAMPLE_DDOF, differing_labels
from hpml.analysis.tta import energy
from hpml.report_kit.numbers import is_missing, row_mean_std
from hpml.report_kit.sections import Figure, Section, Table

TABLE = "batch_augmentation"
ENERGY_TABLE = "batch_augmentation_energy"

INTRO = (
    "Batch augmentation (Hoffer et al. 2019): each step trains on M copies of each of its B samples, every copy its "
    "own draw of the augmentation (crop, flip, Cutout holes), M x B samples per step; an epoch is still one pass "
    "over the data set. One table and one figure per group: runs that differ only in M, the accumulation chunks, "
    "Cutout and the seed (same configuration otherwise, same hardware, same data path). n: the runs (seeds) of a "
    "row; converged: those whose validation top-1 reached the target (k / n). Epochs to target and TTA (wall-clock "
    "from the start of training to the first evaluation at or above the target, evaluation included) over the k "
    "converged runs; a run that did not converge gives its best top-1 and its clock at the last evaluation (the "
    "cap) instead. Epoch time: each run's mean over its timed epochs (epoch 1 is warm-up), then mean ± sample std "
    f"(ddof={SAMPLE_DDOF}) over the runs; step time: each run's median step (rank 0, step end to step end: data, "
    "copies and augmentation included); samples/s: distinct samples of an epoch / epoch time; images/s: M x that. "
    "Step cost / (M x single-copy step): the mean step time at M over M times the mean step time of the same "
    "group's M = 1 whole-step run with the same Cutout (1: the cost grows exactly as M; below 1: a larger step "
    "uses the device better). GPU use: utilization.gpu and SM activity over each run's timed window (the GPU "
    "telemetry section's numbers), mean ± std over the runs that have telemetry; — without it.")

HEADERS = ["M (copies)", "samples per step", "chunks", "Cutout", "runs (n)", "converged", "epochs to target mean ± std",
           "TTA [s] mean ± std", "not converged: best top-1 [%], time at cap [s]", "best top-1 [%] mean ± std",
           "epoch time [s] mean ± std", "step time [ms] mean ± std", "samples/s mean ± std",
           "images/s (M x B) mean ± std", "step cost / (M x single-copy step)", "util.gpu [%] mean ± std",
           "SM activity [%] mean ± std"]


def cutout_label(holes: int, size: int) -> str:
    return f"{holes} x {size}x{size} px" if holes else "none"



def _missed(r: Dict[str, Any]) -> str:
    if is_missing(r["target"]):
        return "— (no target)"
    if r["converged"] == r["runs"] or is_missing(r["missed_best_top1_mean"]):
        return "—"
    return f"{r['missed_best_top1_mean'] * 100:.2f}, {r['missed_last_elapsed_s_mean']:.2f} (n={r['runs'] - r['converged']})"


def table_rows(rows: pd.DataFrame) -> List[List[Any]]:
    body = []
    for r in rows.to_dict("records"):
        body.append([r["copies"], r["samples_per_step"], r["chunks"], cutout_label(r["cutout_holes"], r["cutout_size"]),
                     r["runs"], "no target" if is_missing(r["target"]) else f"{r['converged']}/{r['runs']}", row_mean_std(r, "epochs", ".2f", n_key="converged"),
                     row_mean_std(r, "tta_s", ".2f", n_key="converged"), _missed(r), row_mean_std(r, "best_top1", ".2f", 100),
                     row_mean_std(r, "epoch_time_s", ".4f"), row_mean_std(r, "step_time_s", ".2f", 1000),
                     row_mean_std(r, "samples_per_s", ",.0f"), row_mean_std(r, "images_per_s", ",.0f"),
                     "—" if is_missing(r["step_cost_factor"]) else f"{r['step_cost_factor']:.3f}",
                     row_mean_std(r, "util_gpu", ".1f", n_key="util_gpu_runs"),
                     row_mean_std(r, "sm_activity", ".1f", n_key="sm_activity_runs")])
    return body


def variant_label(variant: tuple, chunked: bool) -> str:
    copies, chunks, holes, size = variant
    return f"M={copies}" + (f", {chunks} chunks" if chunked else "") + (f", Cutout {size}" if holes else ", no Cutout")


VARIANT_LEAD = ["M (copies)", "chunks", "Cutout"]


def _variant_lead(r: Dict[str, Any]) -> List[Any]:
    return [r["copies"], r["chunks"], cutout_label(r["cutout_holes"], r["cutout_size"])]


def batch_augmentation_sections(runs: List[Dict[str, Any]], table: pd.DataFrame) -> List[Section]:
    by_group: Dict[str, List[Dict[str, Any]]] = {}
    for run in runs:
        by_group.setdefault(run["group_key"], []).append(run)
    labels = differing_labels({key: members[0]["group_items"] for key, members in by_group.items()})
    sections = [Section("Batch augmentation", markdown=INTRO + "\n\n" + energy.NOTE)]
    for index, key in enumerate(sorted(by_group), start=1):
        members = by_group[key]
        first = members[0]
        target = first["target"]
        goal = f" to {target * 100:g} % top-1" if target is not None else ", no target"
        title = (f"Batch augmentation: {first['model']}{goal}, {first['hardware']}, {first['data_placement']} path "
                 f"{labels[key]}").rstrip()
        variants: Dict[tuple, List[Dict[str, Any]]] = {}
        for run in sorted(members, key=variant_of):
            variants.setdefault(variant_of(run), []).append(run)
        chunked = any(v[1] > 1 for v in variants)
        figure = "batch_augmentation_error.png" if len(by_group) == 1 else f"batch_augmentation_error_{index}.png"
        rows = table[table["group_key"] == key].reset_index(drop=True)
        lines = {variant_label(v, chunked): group for v, group in variants.items()}
        sections.append(Section(title, level=3, tables=[Table(TABLE, HEADERS, table_rows(rows), rows)],
                                after=f"Figure: {figure} (validation error against epoch, one line per M).",
                                figures=[Figure(figure, drawer(lines, target, title))]))
        sections.append(energy.energy_section(rows, title.removeprefix("Batch augmentation: "), ENERGY_TABLE,
                                               VARIANT_LEAD, _variant_lead, "variant"))
    return sections
