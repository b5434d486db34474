"""The train workload's report sections: the tables of analysis.train.tables as rounded Markdown/LaTeX cells
(their frames, full precision, are the CSVs), and speedup.png. Formatting only: every number comes from
analysis.train.tables.

The epoch-time table (scaling.csv) is the one table of epoch time, speedup, efficiency and throughput: one row
per (configuration, batch, resource shape).
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Tuple

import pandas as pd

from hpml.analysis.stats import EFFICIENCY_RULES, differing_labels, efficiency_header
from hpml.analysis.train import tables as tt
from hpml.analysis.train.many import combined_section, many_groups
from hpml.analysis.train.plots import speedup_png
from hpml.contract.units import GIB
from hpml.report_kit.numbers import is_missing, mean_std, ms, number
from hpml.report_kit.sections import Figure, Section, Table

SCALING_LINES = {
    "weak": "weak scaling (per-device batch fixed, the data set per epoch fixed: N devices share it)",
    "strong": "strong scaling (global batch fixed, split over the devices)",
}


def _table_section(name: str, title: str, intro: str, headers: List[str], body: List[List[Any]],
                   frame: pd.DataFrame) -> Section:
    return Section(title, markdown=intro, tables=[Table(name, headers, body, frame)], level=3)





def group_labels(runs: List[Dict[str, Any]]) -> Dict[str, str]:
    """For each study group, the config items that differ from the other groups of its sweep."""
    labels: Dict[str, str] = {}
    by_sweep: Dict[str, Dict[str, Dict[str, Any]]] = {}
    for run in runs:
        by_sweep.setdefault(run["sweep"], {})[run["group_key"]] = run["group_items"]
    for groups in by_sweep.values():
        labels.update(differing_labels(groups))
    return labels


def _groups(frame: pd.DataFrame) -> List[Tuple[Tuple[str, str], pd.DataFrame]]:
    return list(frame.groupby(["sweep", "group_key"], sort=True))


def time_sections(table: pd.DataFrame, labels: Dict[str, str]) -> List[Section]:
    if many_groups(table):
        return [combined_section("scaling", "Epoch time and speedup", TIME_INTRO_MANY, ["scaling"] + TIME_HEADERS
                                 + [EFFICIENCY_MANY], lambda r: [r["scaling"]] + _time_row(r), table, labels)]
    sections = []
    for (sweep, key), rows in _groups(table):
        first = rows.iloc[0]
        fixed = "per-device batch" if first["scaling"] == "weak" else "global batch"
        base = int(rows["baseline_devices"].min()) if rows["baseline_devices"].notna().any() else "—"
        intro = (f"{SCALING_LINES[first['scaling']]}; baseline: for each {fixed}, its smallest N (N = {base}, "
                 f"fewest nodes first), same parallel mode ({first['parallel']}) and configuration. Speedup = "
                 "t_base / t_N of the epoch time; never across batch sizes. Epoch times: mean ± sample std "
                 "(ddof=1; 0 when n = 1) of the timed epochs pooled over repeats (n), epoch 1 dropped; an epoch "
                 "lasts as long as its slowest rank; total = wall clock, train = h2d + forward + backward + "
                 "optimizer (data loading excluded). Step time: rank 0's steps of the timed epochs. Throughput: "
                 "samples of the timed epochs / their total time.")
        headers = TIME_HEADERS + [efficiency_header(first["scaling"], "step time")]
        body = [_time_row(r) for r in rows.to_dict("records")]
        name = f"{sweep} · {first['parallel']} · {first['model']} · {first['precision']}"
        sections.append(_table_section("scaling", f"Epoch time and speedup: {name} {labels.get(key, '')}".rstrip(),
                                       intro, headers, body, rows))
    return sections


TIME_INTRO_MANY = ("Weak scaling: per-device batch fixed; strong scaling: global batch fixed. Baseline: for each "
                   "configuration and fixed batch, its smallest N (fewest nodes first), same parallel mode. "
                   "Speedup = t_base / t_N of the epoch time; never across batch sizes. Epoch times: mean ± "
                   "sample std (ddof=1; 0 when n = 1) of the timed epochs pooled over repeats (n), epoch 1 dropped; "
                   "total = wall clock, train = h2d + forward + backward + optimizer. Step time: rank 0's steps "
                   "of the timed epochs. Throughput: samples of the timed epochs / their total time.")
EFFICIENCY_MANY = f"efficiency (weak: step time {EFFICIENCY_RULES['weak']}; strong: {EFFICIENCY_RULES['strong']})"
TIME_HEADERS = ["per-device batch", "N", "nodes × workers/node", "global batch", "runs",
                "total epoch [s] (mean ± std, n)", "train epoch [s]", "step time [ms] (mean / median, n)",
                "throughput [samples/s]", "speedup (total)", "speedup (train)"]  # + the efficiency column


def _time_row(r: Dict[str, Any]) -> List[Any]:
    shape = f"{r['nodes']} × {r['workers_per_node']}"
    if not r["fits"]:
        return [r["per_device_batch"], r["devices"], shape, r["global_batch"],
                f"0 ({r['oom_runs']} oom)", "does not fit (out of memory)", "—", "—", "—", "—", "—", "—"]
    train = ("—" if is_missing(r["train_time_mean_s"])
             else mean_std(r["train_time_mean_s"], r["train_time_std_s"], ".3f", n=r["n"]))
    return [r["per_device_batch"], r["devices"], shape, r["global_batch"], r["runs"],
            mean_std(r["epoch_time_mean_s"], r["epoch_time_std_s"], ".3f", n=r["n"]), train,
            f"{ms(r['step_mean_s'])} / {ms(r['step_median_s'])} (n={r['step_n']})",
            f"{r['samples_per_s']:.1f}", number(r["speedup"], ".2f"), number(r["train_speedup"], ".2f"),
            number(r["efficiency"] * 100, ".1f") + " %"]


# What the phase "data" measures on each data path (measurements.data_placement; workloads/train/phases.py)
DATA_PHASE_LINES = {
    "host": "host path (DataLoader): data is host time around next(loader), the wait for the next batch of "
            "per-sample CPU transforms; h2d is the copy to the device",
    "device": "device path (the split resident on the device): data is device time between CUDA events (perf_counter "
              "on a CPU) of slicing the epoch's permutation and augmenting there; h2d is close to 0 (a no-op copy: "
              "the batch is already on the device)",
}


def phase_intro(paths: List[str]) -> str:
    """The phase table's text, saying what "data" means on each data path its rows ran."""
    data = "; ".join(DATA_PHASE_LINES[path] for path in paths)
    return ("Mean time per step of each phase, rank 0, timed epochs (n steps, repeats pooled); one row per data "
            f"path, never pooled. {data[0].upper()}{data[1:]}. The other phases are device time between CUDA "
            "events (GPU) or perf_counter (CPU). train step = h2d + forward + backward + optimizer.")


def phase_sections(table: pd.DataFrame, labels: Dict[str, str]) -> List[Section]:
    if many_groups(table):
        return [combined_section("train_phases", "Where a step's time goes",
                                 phase_intro(list(dict.fromkeys(table["data_placement"]))), PHASE_HEADERS,
                                 _phase_row, table, labels)]
    sections = []
    for (sweep, key), rows in _groups(table):
        intro = phase_intro(list(dict.fromkeys(rows["data_placement"])))
        body = [_phase_row(r) for r in rows.to_dict("records")]
        parallel = rows.iloc[0]["parallel"]
        sections.append(_table_section("train_phases", f"Where a step's time goes: {sweep} · {parallel} "
                                       f"{labels.get(key, '')}".rstrip(), intro, PHASE_HEADERS, body, rows))
    return sections


PHASE_HEADERS = (["data path", "per-device batch", "N", "steps (n)"] + [f"{p} [ms]" for p in tt.PHASES]
                 + ["train step [ms]", "train epoch [s]", "total epoch [s]"])


def _phase_row(r: Dict[str, Any]) -> List[Any]:
    return ([r["data_placement"], r["per_device_batch"], r["devices"], r["step_n"]]
            + [ms(r[f"{p}_mean_s"]) for p in tt.PHASES]
            + [ms(r["train_step_mean_s"]), f"{r['train_time_mean_s']:.3f}", f"{r['epoch_time_mean_s']:.3f}"])


def comm_sections(table: pd.DataFrame, labels: Dict[str, str]) -> List[Section]:
    sections = []
    for (sweep, key), rows in _groups(table):
        intro = ("DDP compute vs communication, measured after training on one batch on the device: "
                 "forward+backward steps under no_sync() (compute only) and synced, alternating blocks. "
                 "Step times: median [min, max] (n steps, repeats pooled). Exposed comm = median synced - "
                 "median no_sync (communication backward did not hide); per epoch = × steps per epoch. "
                 "NCCL kernel time: torch.profiler, kernels named *nccl*, per step (GPU only; overlapped or not).")
        headers = ["per-device batch", "N", "steps/epoch", "compute step [ms]", "synced step [ms]",
                   "exposed comm/step [ms]", "compute/epoch [s]", "exposed comm/epoch [s]", "comm share",
                   "NCCL kernels/step [ms]", "NCCL kernels/epoch [s]"]
        body = [[r["per_device_batch"], r["devices"], r["steps_per_epoch"],
                 f"{ms(r['compute_step_median_s'])} [{ms(r['compute_step_min_s'])}, {ms(r['compute_step_max_s'])}] "
                 f"(n={r['probe_n']})",
                 f"{ms(r['synced_step_median_s'])} [{ms(r['synced_step_min_s'])}, {ms(r['synced_step_max_s'])}] "
                 f"(n={r['probe_n']})",
                 ms(r["exposed_comm_step_s"]), f"{r['compute_epoch_s']:.3f}", f"{r['exposed_comm_epoch_s']:.3f}",
                 f"{r['exposed_comm_share'] * 100:.1f} %", ms(r["nccl_kernel_step_s"]),
                 number(r["nccl_kernel_epoch_s"], ".3f")] for r in rows.to_dict("records")]
        sections.append(_table_section("train_comm", f"Compute vs communication: {sweep} {labels.get(key, '')}".rstrip(),
                                intro, headers, body, rows))
    return sections


def bandwidth_sections(table: pd.DataFrame, labels: Dict[str, str]) -> List[Section]:
    if table.empty:
        return []
    intro = ("Gradient all-reduce per step (Patarasuk & Yuan ring): S = gradient bytes; ring model "
             "T = 2(N-1)/N · S / B at the link's per-direction peak B (conf/hardware, latency term left out); "
             "busbw = 2(N-1)/N · S / T_measured; utilization = busbw / peak. T_measured is the NCCL kernel "
             "time per step when profiled, else the exposed comm time (a lower bound, so busbw and utilization "
             "are then upper bounds). GB = 1e9 bytes.")
    headers = ["study", "per-device batch", "N", "gradient [MB]", "link", "peak [GB/s]", "ring model [ms]",
               "measured [ms]", "measured from", "busbw [GB/s]", "utilization"]
    body = [[f"{r['sweep']} {labels.get(r['group_key'], '')}".rstrip(), r["per_device_batch"], r["devices"],
             f"{r['gradient_bytes'] / 1e6:.1f}", r["link"], number(r["link_peak_GBps"], ".0f"), ms(r["ring_model_s"]),
             ms(r["measured_s"]), r["measured_from"], number(r["busbw_GBps"], ".2f"),
             number(r["utilization"] * 100 if r["utilization"] == r["utilization"] else math.nan, ".1f") + " %"]
            for r in table.to_dict("records")]
    return [_table_section("train_bandwidth", "Bandwidth utilization of the gradient all-reduce", intro, headers, body,
                    table)]


def large_batch_sections(table: pd.DataFrame, labels: Dict[str, str]) -> List[Section]:
    if table.empty:
        return []
    intro = (f"Training loss and accuracy of epoch {tt.LARGE_BATCH_EPOCH}, for the setups whose runs reached it: "
             "mean ± sample std over the runs (repeats). lr target = lr × global batch / lr_base_batch when "
             "lr_scaling=linear (Goyal et al.); warm-up rises linearly per step from lr to it.")
    headers = ["study", "parallel", "per-device batch", "N", "global batch", "lr", "lr scaling", "warm-up [epochs]",
               "lr target", "epoch", "runs", "loss", "accuracy"]
    body = [[f"{r['sweep']} {labels.get(r['group_key'], '')}".rstrip(), r["parallel"], r["per_device_batch"],
             r["devices"], r["global_batch"], f"{r['lr']:g}", r["lr_scaling"], f"{r['warmup_epochs']:g}",
             number(r["lr_target"], ".4g"), r["epoch"], r["runs"], f"{r['loss_mean']:.4f} ± {r['loss_std']:.4f}",
             f"{r['accuracy_mean'] * 100:.2f} ± {r['accuracy_std'] * 100:.2f} %"] for r in table.to_dict("records")]
    return [_table_section("train_large_batch", f"Large batches: loss and accuracy at epoch {tt.LARGE_BATCH_EPOCH}", intro, headers, body, table)]


def overhead_sections(table: pd.DataFrame) -> List[Section]:
    if table.empty:
        return []
    intro = ("Plain loop (no events) vs instrumented loop (phase events), side by side in one run: blocks "
             "alternate; rate = samples of all workers / block wall time; median [min, max] over the blocks. "
             "overhead = 1 - instrumented / plain (negative: the instrumented blocks were faster).")
    headers = ["result", "model", "precision", "per-device batch", "N", "blocks × steps", "plain [samples/s]",
               "instrumented [samples/s]", "overhead"]
    body = [[r["path"], r["model"], r["precision"], r["per_device_batch"], r["devices"],
             f"{r['blocks']} × {r['steps_per_block']}",
             f"{r['plain_samples_per_s']:.1f} [{r['plain_min']:.1f}, {r['plain_max']:.1f}]",
             f"{r['instrumented_samples_per_s']:.1f} [{r['instrumented_min']:.1f}, {r['instrumented_max']:.1f}]",
             f"{r['overhead'] * 100:.2f} %"] for r in table.to_dict("records")]
    return [_table_section("train_overhead", "Instrumentation overhead", intro, headers, body, table)]


def _batch(value: Any) -> str:
    """A batch size as an integer; "" when there is none (pandas stores a column with a None as NaN floats)."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(int(value))


def batch_probe_sections(table: pd.DataFrame) -> List[Section]:
    if table.empty:
        return []
    intro = ("Largest per-device batch that fits (workload.max_batch_probe): the batch doubles from "
             "workload.batch_size until a plain training step runs out of memory or the limit is reached "
             "(DDP's buckets and DataParallel's replicas not included).")
    headers = ["result", "model", "precision", "tried", "largest that fits", "first out of memory",
               "peak memory of the largest [GiB]"]
    body = [[r["path"], r["model"], r["precision"], ", ".join(str(b) for b in r["tried"]),
             _batch(r["largest_fitting"]) or "none",
             _batch(r["first_oom"]) or f"none up to {_batch(r['limit'])}",
             number(r["largest_peak_memory_bytes"] / GIB if r["largest_peak_memory_bytes"] else None, ".2f")]
            for r in table.to_dict("records")]
    return [_table_section("train_batch_probe", "Largest batch that fits", intro, headers, body, table)]


def train_sections(runs: List[Dict[str, Any]]) -> List[Section]:
    """Every table the runs have data for, each as a level-3 section under one level-2 heading."""
    labels = group_labels(runs)
    time = tt.time_table(runs)
    comm = tt.comm_table(runs)
    tables = (time_sections(time, labels) + phase_sections(tt.phase_table(runs), labels)
              + comm_sections(comm, labels) + bandwidth_sections(tt.bandwidth_table(runs, comm), labels)
              + large_batch_sections(tt.large_batch_table(runs), labels)
              + overhead_sections(tt.overhead_table(runs)) + batch_probe_sections(tt.batch_probe_table(runs)))
    intro = ("Tables also as CSV (full precision) and LaTeX in the report folder: scaling.csv and train_*.csv, "
             "scaling.tex and train_*.tex; speedup plot: speedup.png (when a line has two points or more).")
    intro += "".join(f"\n\n> **Note:** {note}" for note in tt.dataset_notes(runs))
    head = Section("Batch size × devices (workloads.train)", markdown=intro,
                   figures=[Figure("speedup.png", lambda path: speedup_png(
                       time, path, labels, "Speedup vs devices (dashed: ideal); one line per configuration and batch"))])
    return [head] + tables
