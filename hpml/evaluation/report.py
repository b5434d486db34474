"""The evaluate report: one row per model, mean ± std per hardware group, as report_kit.sections Sections.

Top-1 = correct / images, each model on every image of the folder. Per hardware (the GPU model the run trained
on, as the saved model records it): the mean of its models' top-1 and their sample std (ddof=1, analysis.stats;
"—" for a single model: one value has no spread), min and max. The frames (evaluate.csv,
evaluate_hardware.csv) hold fractions at full precision; the Markdown shows percentages. What was left out is
listed with its reason: "Models not evaluated", "Images skipped" (evaluation.images: every model is scored on
the same usable images).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import List, Sequence, Tuple

import pandas as pd

from hpml.analysis.stats import SAMPLE_DDOF, natural_key, sample_std
from hpml.evaluation.accuracy import Score
from hpml.evaluation.images import ClassFolders
from hpml.models.saved import SavedModel, describe
from hpml.report_kit.sections import Section, Table

MODELS_TABLE = "evaluate"
HARDWARE_TABLE = "evaluate_hardware"


@dataclass
class Evaluated:
    saved: SavedModel
    score: Score


def model_frame(evaluated: Sequence[Evaluated]) -> pd.DataFrame:
    rows = [{"point": e.saved.point, "path": str(e.saved.path), "hardware": e.saved.hardware,
             "model": e.saved.spec.model, "cifar_stem": e.saved.spec.cifar_stem, "image_size": e.saved.image_size,
             "images": e.score.images, "correct": e.score.correct, "top1": e.score.top1} for e in evaluated]
    return pd.DataFrame(rows, columns=["point", "path", "hardware", "model", "cifar_stem", "image_size", "images",
                                       "correct", "top1"])


def hardware_frame(models: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for hardware in sorted(models["hardware"].unique(), key=natural_key):
        top1 = models.loc[models["hardware"] == hardware, "top1"].tolist()
        rows.append({"hardware": hardware, "models": len(top1), "top1_mean": statistics.fmean(top1),
                     "top1_std": sample_std(top1) if len(top1) > 1 else float("nan"), "std_ddof": SAMPLE_DDOF,
                     "top1_min": min(top1), "top1_max": max(top1)})
    return pd.DataFrame(rows, columns=["hardware", "models", "top1_mean", "top1_std", "std_ddof", "top1_min",
                                       "top1_max"])


def _pct(fraction: float) -> str:
    return "—" if fraction != fraction else f"{fraction * 100:.2f}"


def sections(evaluated: Sequence[Evaluated], folders: ClassFolders,
             not_evaluated: Sequence[Tuple[Path, str]]) -> List[Section]:
    out: List[Section] = []
    if evaluated:
        models = model_frame(evaluated)
        first = evaluated[0].saved
        counts = ", ".join(f"{name}: {n}" for name, n in folders.counts.items())
        left_out = f" ({len(folders.skipped)} left out: Images skipped, below)" if folders.skipped else ""
        intro = (f"Images: `{folders.root}`, {folders.images} in {len(folders.counts)} class folders ({counts})"
                 f"{left_out}; "
                 "folders matched to each model's classes by name. Transform (the train workload's evaluation "
                 f"transform): RGB, shorter side resized to image_size ({first.image_size} for the first model), "
                 "centre crop to image_size × image_size, grayscale for a 1-channel model, zero padding where the "
                 f"model was trained on padded images ({first.padding} px a side for the first model), to tensor, "
                 "normalize with the model's saved mean and std. "
                 "Top-1 = correct / images.")
        body = [[e.saved.point, e.saved.hardware, describe(e.saved.spec), e.score.images, e.score.correct,
                 _pct(e.score.top1)] for e in evaluated]
        out.append(Section("Accuracy per model", markdown=intro, tables=[Table(
            MODELS_TABLE, ["point", "hardware", "model", "images", "correct", "top-1 [%]"], body, models)]))
        hardware = hardware_frame(models)
        body = [[r["hardware"], r["models"], f"{_pct(r['top1_mean'])} ± {_pct(r['top1_std'])}",
                 _pct(r["top1_min"]), _pct(r["top1_max"])] for r in hardware.to_dict("records")]
        out.append(Section("Accuracy per hardware", markdown=(
            f"Mean ± sample std (ddof={SAMPLE_DDOF}; — for one model) of the models' top-1, n = models trained "
            "on that hardware."), tables=[Table(HARDWARE_TABLE, ["hardware", "models (n)", "top-1 [%] mean ± std",
                                                                  "min [%]", "max [%]"], body, hardware)]))
    for title, left_out in (("Models not evaluated", not_evaluated), ("Images skipped", folders.skipped)):
        if left_out:
            lines = [f"- `{path}`: {why}" for path, why in left_out]
            out.append(Section(f"{title} ({len(left_out)})", markdown="\n".join(lines)))
    return out
