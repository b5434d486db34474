"""The side-by-side tables of the training-techniques study (pure: records in, DataFrames out).

- precision_frame: runs of one configuration that differ only in precision (fp32 / tf32 / fp16 / bf16): per
  setting the final training loss, the best and the final held-out top-1 (mean ± sample std over repeats), the
  time per timed epoch, the allocator's and NVML's peak memory, mean power, utilization and energy per sample,
  and the epochs whose training loss was not finite (never dropped: a diverged fp16 run shows as such).
- checkpointing_frame: runs that differ in workload.activation_checkpointing (and the batch): per batch, peak
  memory and step time without and with, the memory saved, the extra step time, and MB saved per extra ms of
  step; the largest batch that fits (the batch probe) without and with.
- utilization_frame: every configuration of a sweep with GPU telemetry: samples/s, utilization.gpu and SM
  activity; `closest_to_full_use` picks the one with the highest SM activity (utilization.gpu where no SM
  activity was sampled): utilization.gpu only says a kernel was running, SM activity how much of the GPU it used.
"""

from __future__ import annotations

import statistics
from typing import Any, Dict, List, Mapping, Optional

import pandas as pd

from hpml.analysis.stats import sample_std
from hpml.analysis.techniques.runs import CHECKPOINTING_KEYS, PRECISION_KEYS, finite, mean_step_s, without_keys
from hpml.contract.units import MIB, MS_PER_S

PRECISION_ORDER = ("fp32", "tf32", "fp16", "bf16")


def _mean(values: List[float]) -> Optional[float]:
    return statistics.fmean(values) if values else None


def _std(values: List[float]) -> Optional[float]:
    return sample_std(values) if len(values) >= 2 else None


def _known(records, key) -> List[float]:
    return [r[key] for r in records if r.get(key) is not None]


def groups(records: List[Mapping[str, Any]], keys) -> Dict[str, List[Mapping[str, Any]]]:
    """Records by their configuration without `keys` (what a comparison holds fixed)."""
    out: Dict[str, List[Mapping[str, Any]]] = {}
    fixed: Dict[str, str] = {}  # config_key -> its key without `keys`: once per configuration, not per record
    for record in records:
        if record["config_key"] not in fixed:
            fixed[record["config_key"]] = without_keys(record["config_items"], keys)
        out.setdefault(fixed[record["config_key"]], []).append(record)
    return out


def precision_frame(records: List[Mapping[str, Any]]) -> pd.DataFrame:
    rows = []
    by_setting: Dict[str, List[Mapping[str, Any]]] = {}
    for record in records:
        by_setting.setdefault(record["precision"], []).append(record)
    for setting in sorted(by_setting, key=lambda s: (PRECISION_ORDER.index(s) if s in PRECISION_ORDER else 9, s)):
        runs = by_setting[setting]
        final_loss = [r["train_loss"][-1] for r in runs if r["train_loss"] and finite(r["train_loss"][-1])]
        final_top1 = [r["val_top1"][-1] for r in runs if r["val_top1"]]
        best_top1 = [max(r["val_top1"]) for r in runs if r["val_top1"]]
        epoch_s = [statistics.fmean(r["epoch_time_s"][i] for i in r["timed"]) for r in runs]
        rows.append({
            "precision": setting, "runs": len(runs),
            "final_train_loss_mean": _mean(final_loss),
            "nonfinite_loss_runs": sum(bool(r["nonfinite_loss_epochs"]) for r in runs),
            "nonfinite_loss_epochs": ";".join(",".join(map(str, r["nonfinite_loss_epochs"])) for r in runs
                                              if r["nonfinite_loss_epochs"]),
            "final_top1_mean": _mean(final_top1), "final_top1_std": _std(final_top1),
            "best_top1_mean": _mean(best_top1),
            "epoch_s_mean": _mean(epoch_s), "epoch_s_std": _std(epoch_s),
            "peak_allocated_bytes": max((b for r in runs for b in r["peak_allocated_bytes"]), default=None),
            "nvml_mem_peak_bytes": max(_known(runs, "nvml_mem_peak_bytes"), default=None),
            "power_mean_w": _mean(_known(runs, "power_mean_w")),
            "util_gpu_mean": _mean(_known(runs, "util_gpu_mean")),
            "sm_activity_mean": _mean(_known(runs, "sm_activity_mean")),
            "energy_per_sample_j": _mean(_known(runs, "energy_per_sample_j")),
        })
    return pd.DataFrame(rows)


def checkpointing_frame(records: List[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per per-device batch that ran both without and with checkpointing."""
    rows = []
    batches = sorted({r["per_device_batch"] for r in records})
    for batch in batches:
        sides = {flag: [r for r in records if r["per_device_batch"] == batch and r["activation_checkpointing"] == flag]
                 for flag in (False, True)}
        if not sides[False] or not sides[True]:
            continue
        peak = {flag: max((b for r in runs for b in r["peak_allocated_bytes"]), default=None)
                for flag, runs in sides.items()}
        step = {flag: statistics.fmean(mean_step_s(r) for r in runs) for flag, runs in sides.items()}
        fitting = {flag: max((r["largest_fitting"] for r in runs if r["largest_fitting"]), default=None)
                   for flag, runs in sides.items()}
        saved = peak[False] - peak[True] if peak[False] is not None and peak[True] is not None else None
        extra = step[True] - step[False]
        rows.append({
            "per_device_batch": batch, "runs_without": len(sides[False]), "runs_with": len(sides[True]),
            "peak_without_bytes": peak[False], "peak_with_bytes": peak[True],
            "memory_saved_fraction": saved / peak[False] if saved is not None else None,
            "step_without_s": step[False], "step_with_s": step[True], "step_extra_fraction": extra / step[False],
            "mib_saved_per_extra_ms": (saved / MIB) / (extra * MS_PER_S) if saved is not None and extra > 0 else None,
            "largest_batch_without": fitting[False], "largest_batch_with": fitting[True],
        })
    return pd.DataFrame(rows)


# NVML's utilization.gpu is the share of its own sample period (1/6 s to 1 s by product) with a kernel running: in a
# timed window of a few seconds its edges (warm-up, evaluation, teardown) weigh on the mean. Below this the
# table marks the window short (an H100 measured 71.9 % SM activity over a 1.1 s window of a setting that the
# preset now times longer).
SHORT_WINDOW_S = 10.0


def utilization_frame(records: List[Mapping[str, Any]], labels: Mapping[str, str]) -> pd.DataFrame:
    """One row per configuration; timed_s: the mean over its runs of the timed epochs' total time (the window the
    telemetry numbers cover), short_window: timed_s < SHORT_WINDOW_S."""
    rows = []
    by_configuration: Dict[str, List[Mapping[str, Any]]] = {}
    for record in records:
        by_configuration.setdefault(record["config_key"], []).append(record)
    for key, runs in by_configuration.items():
        runs = [r for r in runs if r["samples_per_epoch"]]  # results written before samples_per_epoch: no rate
        samples_per_s = [r["samples_per_epoch"] / statistics.fmean(r["epoch_time_s"][i] for i in r["timed"])
                         for r in runs]
        timed_s = _mean([sum(r["epoch_time_s"][i] for i in r["timed"]) for r in runs])
        rows.append({"setting": labels.get(key, "") or "(the only configuration)", "runs": len(runs),
                     "samples_per_s_mean": _mean(samples_per_s), "samples_per_s_std": _std(samples_per_s),
                     "timed_s": timed_s, "short_window": bool(timed_s is not None and timed_s < SHORT_WINDOW_S),
                     "util_gpu_mean": _mean(_known(runs, "util_gpu_mean")),
                     "sm_activity_mean": _mean(_known(runs, "sm_activity_mean"))})
    return pd.DataFrame(rows)


def closest_to_full_use(frame: pd.DataFrame) -> Optional[Dict[str, Any]]:
    """The row with the highest SM activity (utilization.gpu where no row has SM activity); None without either."""
    for column in ("sm_activity_mean", "util_gpu_mean"):
        known = frame.dropna(subset=[column]) if column in frame else frame.iloc[0:0]
        if not known.empty:
            return {**known.loc[known[column].idxmax()].to_dict(), "by": column}
    return None


__all__ = ["CHECKPOINTING_KEYS", "PRECISION_KEYS", "SHORT_WINDOW_S", "groups", "precision_frame", "checkpointing_frame",
           "utilization_frame", "closest_to_full_use"]
