"""The batch size x GPU count study's tables (docs/studies/batch-gpu-scaling.md): pure, pandas out, no I/O.

Every number is recomputed from the raw arrays of the train workload's results (schema v1, with the
study's keys: measurements.train_time_s, phase_time_s, comm_probe, ...); `derived` is never read.

Definitions
- N is the number of devices a run trained on: workers x dp_devices (DDP: one GPU per worker; DP: one
  worker over dp_devices GPUs; on CPU one "device" per worker).
- A study group is a configuration without its batch and its device count: config.workload.* and any
  other group, except resources.*, sweep.*, cluster.*, workload.dp_devices, workload.batch_size and the
  measurements made before or after the timed epochs (NOT_GROUP: probes, profiler, overhead check). Rows
  compare runs of one group; speedups compare rows of one group and one batch only (never across batch
  sizes), against the smallest N of that batch (normally N = 1): the baseline.
- Epoch 1 of every run is warm-up and dropped. "total" epoch time: measurements.epoch_time_s (slowest
  rank, wall clock); "train": measurements.train_time_s (slowest rank's sum of h2d+forward+backward+
  optimizer: data loading excluded). Repeats (sweep.repeat) are pooled: n counts timed epochs over all
  runs of a row; mean ± sample std (ddof=1; 0 when n = 1).
- speedup = t_base / t_N (total epoch time; train speedup likewise from train time). Efficiency: weak
  scaling (per-device batch fixed): t_base / t_N of the mean step time (rank 0, epochs 2..); strong
  scaling (global batch fixed): speedup / (N / N_base).
- Communication (DDP): exposed comm per step = median synced step - median no_sync step of the probe
  (pooled over runs); per epoch = that x steps per epoch. NCCL kernel time per step from the profiler when
  measured. Bandwidth (Patarasuk & Yuan, analysis.bandwidth): gradient bytes S all-reduced per step,
  ring model T = 2(N-1)/N * S / B at the link's per-direction peak B; measured busbw = 2(N-1)/N * S / T_meas
  with T_meas the NCCL kernel time per step (else the exposed comm time, a lower bound of the all-reduce
  time, so its busbw and utilization are upper bounds); utilization = busbw / peak.
"""

from __future__ import annotations

import json
import math
import statistics
from typing import Any, Dict, Iterable, List, Mapping, Optional

import pandas as pd

from analysis.bandwidth import algbw, busbw, ring_allreduce_time, ring_utilization
from analysis.scaling import configuration_items
from analysis.schema import timed_values

PHASES = ("data", "h2d", "forward", "backward", "optimizer")
NOT_GROUP = ("workload.dp_devices", "workload.batch_size", "workload.max_batch_probe", "workload.comm_probe_steps",
             "workload.profile_comm_steps", "workload.overhead_check_steps", "workload.overhead_check_rounds")
LARGE_BATCH_EPOCH = 5  # the study reports the 5th epoch's loss and accuracy (Goyal et al.'s warm-up span)


def sample_std(values: List[float]) -> float:
    return statistics.stdev(values) if len(values) > 1 else 0.0


def is_study_result(row: Mapping[str, Any]) -> bool:
    """A train result of this study: ok with the phase arrays, or out of memory."""
    if row["identity"]["workload"] != "train":
        return False
    if row["status"] == "oom":
        return True
    return row["status"] == "ok" and "train_time_s" in row["measurements"]


def group_items(config: Mapping[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in configuration_items(config).items() if k not in NOT_GROUP}


def devices_of(config: Mapping[str, Any]) -> int:
    res, w = config["resources"], config["workload"]
    per_worker = w.get("dp_devices", 1) if w.get("parallel", "ddp") == "dp" else 1
    return res["nodes"] * res["workers_per_node"] * per_worker


def per_device_batch_of(config: Mapping[str, Any]) -> int:
    w = config["workload"]
    return w["batch_size"] if w["scaling"] == "weak" else w["batch_size"] // devices_of(config)


def run_record(row: Mapping[str, Any]) -> Dict[str, Any]:
    """One study result as a flat record (ok or oom); numbers from the raw arrays."""
    config, m = row["config"], row["measurements"]
    w = config["workload"]
    devices = devices_of(config)
    record: Dict[str, Any] = {
        "path": row["path"], "sweep": row["identity"]["sweep"], "repeat": row["identity"]["repeat"],
        "status": row["status"], "reason": row["reason"],
        "group_key": json.dumps(group_items(config), sort_keys=True),
        "parallel": w.get("parallel", "ddp"), "scaling": w["scaling"], "model": w["model"],
        "precision": w.get("precision", "fp32"), "devices": devices,
        "per_device_batch": per_device_batch_of(config),
        "global_batch": per_device_batch_of(config) * devices,
        "fixed_batch": w["batch_size"],  # what the scaling mode holds fixed: per device (weak), global (strong)
        "lr": w["lr"], "lr_scaling": w.get("lr_scaling", "none"), "warmup_epochs": w.get("warmup_epochs", 0),
        "link": w.get("link", "none"), "link_peak_GBps": w.get("link_peak_GBps"),
        "dataset": m.get("dataset", w.get("dataset")), "dataset_note": m.get("dataset_note"),
        "batch_probe": m.get("batch_probe"),
    }
    if row["status"] != "ok":
        return record
    steps = [s for epoch in timed_values(m["step_time_s"], m) for s in epoch]
    phase_steps = {p: [s for epoch in timed_values(m["phase_time_s"][p], m) for s in epoch] for p in PHASES}
    record.update({
        "steps_per_epoch": m["steps_per_epoch"], "samples_per_epoch": m["samples_per_epoch"],
        "epoch_total_s": timed_values(m["epoch_time_s"], m), "epoch_train_s": timed_values(m["train_time_s"], m),
        "step_s": steps, "phase_steps_s": phase_steps,
        "train_loss": m["train_loss"], "train_accuracy": m["train_accuracy"],
        "lr_target": m.get("lr_target"), "gradient_bytes": m.get("gradient_bytes"),
        "comm_probe": m.get("comm_probe"), "comm_profile": m.get("comm_profile"),
        "overhead_check": m.get("overhead_check"),
    })
    return record


def runs_of(rows: Iterable[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    return [run_record(row) for row in rows if is_study_result(row)]


def _pool(runs: List[Dict[str, Any]], key: str) -> List[float]:
    return [value for run in runs for value in run[key]]


def _row_identity(runs: List[Dict[str, Any]]) -> Dict[str, Any]:
    first = runs[0]
    return {key: first[key] for key in ("sweep", "group_key", "parallel", "scaling", "model", "precision",
                                         "fixed_batch", "per_device_batch", "devices", "global_batch")}


def _by_row(runs: List[Dict[str, Any]]) -> Dict[tuple, List[Dict[str, Any]]]:
    rows: Dict[tuple, List[Dict[str, Any]]] = {}
    for run in runs:
        rows.setdefault((run["sweep"], run["group_key"], run["fixed_batch"], run["devices"]), []).append(run)
    return dict(sorted(rows.items()))


TIME_COLUMNS = [
    "sweep", "group_key", "parallel", "scaling", "model", "precision", "fixed_batch", "per_device_batch",
    "devices", "global_batch", "fits", "runs", "oom_runs", "n", "total_epoch_mean_s", "total_epoch_std_s",
    "train_epoch_mean_s", "train_epoch_std_s", "step_n", "step_mean_s", "samples_per_s",
    "baseline_devices", "speedup", "train_speedup", "efficiency",
]


def time_table(runs: List[Dict[str, Any]]) -> pd.DataFrame:
    """Epoch times and speedup per (study group, per-device batch, N); a row whose runs all ran out of
    memory has fits=False and no times."""
    rows = []
    for _, members in _by_row(runs).items():
        ok = [r for r in members if r["status"] == "ok"]
        row = {**_row_identity(members), "runs": len(ok), "oom_runs": sum(r["status"] == "oom" for r in members),
               "fits": bool(ok)}
        if ok:
            total, train, steps = _pool(ok, "epoch_total_s"), _pool(ok, "epoch_train_s"), _pool(ok, "step_s")
            samples = sum(r["samples_per_epoch"] * len(r["epoch_total_s"]) for r in ok)
            row.update(n=len(total), total_epoch_mean_s=statistics.fmean(total), total_epoch_std_s=sample_std(total),
                       train_epoch_mean_s=statistics.fmean(train), train_epoch_std_s=sample_std(train),
                       step_n=len(steps), step_mean_s=statistics.fmean(steps), samples_per_s=samples / sum(total))
        rows.append(row)
    table = pd.DataFrame(rows, columns=TIME_COLUMNS).astype({"n": "Int64", "step_n": "Int64"})  # NaN: no fit
    return add_speedups(table)


def add_speedups(table: pd.DataFrame) -> pd.DataFrame:
    """Speedup and efficiency against the smallest N that fits of each (group, fixed batch): the per-device
    batch for weak scaling, the global batch for strong scaling."""
    table = table.copy()
    for column in ("baseline_devices", "speedup", "train_speedup", "efficiency"):
        table[column] = math.nan
    for _, index in table.groupby(["sweep", "group_key", "fixed_batch"], sort=False).groups.items():
        rows = table.loc[index].sort_values("devices")
        fitting = rows[rows["fits"]]
        if fitting.empty:
            continue
        base = fitting.iloc[0]
        for i, row in fitting.iterrows():
            speedup = base["total_epoch_mean_s"] / row["total_epoch_mean_s"]
            efficiency = (base["step_mean_s"] / row["step_mean_s"] if row["scaling"] == "weak"
                          else speedup / (row["devices"] / base["devices"]))
            table.loc[i, ["baseline_devices", "speedup", "train_speedup", "efficiency"]] = [
                base["devices"], speedup, base["train_epoch_mean_s"] / row["train_epoch_mean_s"], efficiency]
    table["baseline_devices"] = table["baseline_devices"].astype("Int64")
    return table.sort_values(["sweep", "group_key", "fixed_batch", "devices"], ignore_index=True)


PHASE_COLUMNS = ["sweep", "group_key", "parallel", "per_device_batch", "devices", "step_n"] + \
    [f"{p}_mean_s" for p in PHASES] + ["train_step_mean_s", "total_epoch_mean_s", "train_epoch_mean_s"]


def phase_table(runs: List[Dict[str, Any]]) -> pd.DataFrame:
    """Mean seconds per step of each phase (rank 0, timed epochs, repeats pooled)."""
    rows = []
    for _, members in _by_row(runs).items():
        ok = [r for r in members if r["status"] == "ok"]
        if not ok:
            continue
        phases = {p: [s for r in ok for s in r["phase_steps_s"][p]] for p in PHASES}
        row = {**_row_identity(ok), "step_n": len(phases["data"]),
               **{f"{p}_mean_s": statistics.fmean(phases[p]) for p in PHASES},
               "total_epoch_mean_s": statistics.fmean(_pool(ok, "epoch_total_s")),
               "train_epoch_mean_s": statistics.fmean(_pool(ok, "epoch_train_s"))}
        row["train_step_mean_s"] = sum(row[f"{p}_mean_s"] for p in PHASES[1:])
        rows.append(row)
    return pd.DataFrame(rows, columns=PHASE_COLUMNS)


COMM_COLUMNS = [
    "sweep", "group_key", "per_device_batch", "devices", "runs", "steps_per_epoch", "probe_n",
    "compute_step_median_s", "compute_step_min_s", "compute_step_max_s",
    "synced_step_median_s", "synced_step_min_s", "synced_step_max_s",
    "exposed_comm_step_s", "exposed_comm_epoch_s", "compute_epoch_s", "exposed_comm_share",
    "exposed_comm_step_per_run_s", "nccl_kernel_step_s", "nccl_kernel_epoch_s", "train_epoch_mean_s",
]


def comm_table(runs: List[Dict[str, Any]]) -> pd.DataFrame:
    """Compute vs communication per DDP row that ran the no_sync probe."""
    rows = []
    for _, members in _by_row(runs).items():
        ok = [r for r in members if r["status"] == "ok" and r.get("comm_probe")]
        if not ok:
            continue
        no_sync = [s for r in ok for s in r["comm_probe"]["no_sync_step_s"]]
        synced = [s for r in ok for s in r["comm_probe"]["sync_step_s"]]
        compute, sync = statistics.median(no_sync), statistics.median(synced)
        exposed = sync - compute
        steps = ok[0]["steps_per_epoch"]
        profiles = [r["comm_profile"]["nccl_kernel_s_per_step"] for r in ok if r.get("comm_profile")]
        nccl = statistics.fmean(profiles) if profiles else math.nan
        rows.append({
            **{k: _row_identity(ok)[k] for k in ("sweep", "group_key", "per_device_batch", "devices")},
            "runs": len(ok), "steps_per_epoch": steps, "probe_n": len(synced),
            "compute_step_median_s": compute, "compute_step_min_s": min(no_sync), "compute_step_max_s": max(no_sync),
            "synced_step_median_s": sync, "synced_step_min_s": min(synced), "synced_step_max_s": max(synced),
            "exposed_comm_step_s": exposed, "exposed_comm_epoch_s": exposed * steps,
            "compute_epoch_s": compute * steps, "exposed_comm_share": exposed / sync,
            "exposed_comm_step_per_run_s": [r["comm_probe"]["sync_median_s"] - r["comm_probe"]["no_sync_median_s"]
                                            for r in ok],
            "nccl_kernel_step_s": nccl, "nccl_kernel_epoch_s": nccl * steps,
            "train_epoch_mean_s": statistics.fmean(_pool(ok, "epoch_train_s")),
        })
    return pd.DataFrame(rows, columns=COMM_COLUMNS)


BANDWIDTH_COLUMNS = [
    "sweep", "group_key", "per_device_batch", "devices", "gradient_bytes", "link", "link_peak_GBps",
    "ring_model_s", "measured_s", "measured_from", "algbw_GBps", "busbw_GBps", "utilization",
]


def bandwidth_row(gradient_bytes: int, n: int, peak: Optional[float], nccl_s: float,
                  exposed_s: float) -> Dict[str, Any]:
    """The ring model and the measured utilization of one setup's gradient all-reduce per step."""
    if not math.isnan(nccl_s) and nccl_s > 0:
        measured, source = nccl_s, "NCCL kernel time (profiler)"
    elif exposed_s > 0:
        measured, source = exposed_s, "exposed comm (lower bound: busbw is an upper bound)"
    else:
        measured, source = math.nan, "no positive comm time measured"
    ok = not math.isnan(measured)
    alg = algbw(gradient_bytes, measured) if ok else math.nan
    return {
        "gradient_bytes": gradient_bytes, "link_peak_GBps": peak,
        "ring_model_s": ring_allreduce_time(gradient_bytes, n, peak, 0.0) if peak else math.nan,
        "measured_s": measured, "measured_from": source, "algbw_GBps": alg,
        "busbw_GBps": busbw(alg, n) if ok else math.nan,
        "utilization": ring_utilization(gradient_bytes, measured, n, peak) if ok and peak else math.nan,
    }


def bandwidth_table(runs: List[Dict[str, Any]], comm: pd.DataFrame) -> pd.DataFrame:
    """Gradient all-reduce per step against the ring model, for DDP rows with N > 1 and a comm probe."""
    rows = []
    for row in comm.itertuples():
        if row.devices < 2:
            continue
        run = next(r for r in runs if r["status"] == "ok" and r["sweep"] == row.sweep
                   and r["group_key"] == row.group_key and r["per_device_batch"] == row.per_device_batch and r["devices"] == row.devices)
        rows.append({"sweep": row.sweep, "group_key": row.group_key, "per_device_batch": row.per_device_batch,
                     "devices": row.devices, "link": run["link"],
                     **bandwidth_row(run["gradient_bytes"], row.devices, run["link_peak_GBps"],
                                     row.nccl_kernel_step_s, row.exposed_comm_step_s)})
    return pd.DataFrame(rows, columns=BANDWIDTH_COLUMNS)


LARGE_BATCH_COLUMNS = [
    "sweep", "group_key", "parallel", "per_device_batch", "devices", "global_batch", "lr", "lr_scaling",
    "warmup_epochs", "lr_target", "epoch", "runs", "loss_mean", "loss_std", "accuracy_mean", "accuracy_std",
]


def large_batch_table(runs: List[Dict[str, Any]], epoch: int = LARGE_BATCH_EPOCH) -> pd.DataFrame:
    """The `epoch`-th epoch's mean training loss and accuracy per setup (over repeats); runs shorter than
    that report their last epoch, and the `epoch` column says which."""
    rows = []
    for _, members in _by_row(runs).items():
        ok = [r for r in members if r["status"] == "ok"]
        if not ok:
            continue
        reached = min(len(r["train_loss"]) for r in ok)
        shown = min(epoch, reached)
        losses = [r["train_loss"][shown - 1] for r in ok]
        accuracies = [r["train_accuracy"][shown - 1] for r in ok]
        first = ok[0]
        rows.append({**{k: _row_identity(ok)[k] for k in ("sweep", "group_key", "parallel", "per_device_batch",
                                                          "devices", "global_batch")},
                     "lr": first["lr"], "lr_scaling": first["lr_scaling"], "warmup_epochs": first["warmup_epochs"],
                     "lr_target": first["lr_target"], "epoch": shown, "runs": len(ok),
                     "loss_mean": statistics.fmean(losses), "loss_std": sample_std(losses),
                     "accuracy_mean": statistics.fmean(accuracies), "accuracy_std": sample_std(accuracies)})
    return pd.DataFrame(rows, columns=LARGE_BATCH_COLUMNS)


OVERHEAD_COLUMNS = ["sweep", "path", "model", "precision", "per_device_batch", "devices", "blocks",
                    "steps_per_block", "plain_samples_per_s", "instrumented_samples_per_s",
                    "instrumented_min", "instrumented_max", "plain_min", "plain_max", "overhead"]


def overhead_table(runs: List[Dict[str, Any]]) -> pd.DataFrame:
    """The plain vs instrumented loop check, one row per run that made it (medians over the blocks)."""
    rows = []
    for run in runs:
        check = run.get("overhead_check")
        if run["status"] != "ok" or not check:
            continue
        plain, instrumented = check["plain_samples_per_s"], check["instrumented_samples_per_s"]
        p, i = statistics.median(plain), statistics.median(instrumented)
        rows.append({"sweep": run["sweep"], "path": run["path"], "model": run["model"], "precision": run["precision"],
                     "per_device_batch": run["per_device_batch"], "devices": run["devices"], "blocks": len(plain),
                     "steps_per_block": check["steps_per_block"], "plain_samples_per_s": p,
                     "instrumented_samples_per_s": i, "instrumented_min": min(instrumented),
                     "instrumented_max": max(instrumented), "plain_min": min(plain), "plain_max": max(plain),
                     "overhead": 1 - i / p})
    return pd.DataFrame(rows, columns=OVERHEAD_COLUMNS)


BATCH_PROBE_COLUMNS = ["sweep", "path", "model", "precision", "devices", "start", "limit", "tried",
                       "largest_fitting", "first_oom", "largest_peak_memory_bytes"]


def batch_probe_table(runs: List[Dict[str, Any]]) -> pd.DataFrame:
    rows = []
    for run in runs:
        probe = run.get("batch_probe")
        if not probe:
            continue
        fitting = [t for t in probe["tried"] if t["fits"]]
        rows.append({"sweep": run["sweep"], "path": run["path"], "model": run["model"],
                     "precision": run["precision"], "devices": run["devices"], "start": probe["start"],
                     "limit": probe["limit"], "tried": [t["batch"] for t in probe["tried"]],
                     "largest_fitting": probe["largest_fitting"], "first_oom": probe["first_oom"],
                     "largest_peak_memory_bytes": fitting[-1]["peak_memory_bytes"] if fitting else None})
    return pd.DataFrame(rows, columns=BATCH_PROBE_COLUMNS)


def dataset_notes(runs: List[Dict[str, Any]]) -> List[str]:
    """Distinct notes about the data a study really used (e.g. synthetic in place of CIFAR-10)."""
    return list(dict.fromkeys(r["dataset_note"] for r in runs if r.get("dataset_note")))
