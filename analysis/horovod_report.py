"""The Horovod-style study's part of `hpml report`: synthetic-benchmark and all-reduce tables, CSVs and plots.

`study_report(rows)` is pure (result rows in, Markdown and frames out); `write_study(study, out_dir)` writes
the CSVs and PNGs. Every number comes from analysis.synthetic and analysis.bandwidth, which recompute from
the raw arrays; this module only formats. Markdown rounds for reading; the CSVs keep full precision.

Files (in the report folder): synthetic_scaling.csv, synthetic_protocol.csv, synthetic_comparison.csv,
synthetic_paired.csv (DDP vs Horovod-style side by side in one process),
synthetic_throughput.png (images/s vs GPUs, with the ideal line), allreduce.csv, allreduce_busbw.png
(busbw vs message size, with the link's peak). A file is written only when it has rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping

import pandas as pd

from analysis.bandwidth import allreduce_table
from analysis.render import markdown_table
from analysis.synthetic import comparison_table, paired_table, protocol_table, scaling_table, synthetic_runs

WORKLOADS = ("synthetic", "allreduce")

SYNTHETIC_NOTE = (
    "Images/s are timed on the device (CUDA events, or perf_counter on CPU) over the timed iterations "
    "(warm-up excluded). **Ours**: per iteration, the sum over ranks of each rank's own rate; the median over "
    "the iterations of a row's runs, [min, max], n iterations; CV = sample std (ddof=1) / mean. "
    "**Horovod's way**: rank 0's mean ± 1.96 × population std (ddof=0) over iterations, × N for the total "
    "(a spread, not a confidence interval). t = median over iterations of the slowest rank's iteration time. "
    "Efficiency: weak scaling t_base / t_N; strong scaling speedup / (N / N_base) with speedup t_base / t_N. "
    "Ideal: baseline images/s × N / N_base. Time per epoch: workload.epoch_images / images/s; cost: hours × "
    "N GPUs × the GPU-hour price of conf/pricing/."
)
ALLREDUCE_NOTE = (
    "nccl-tests' definitions: time = mean over the timed iterations of the slowest rank's iteration time "
    "(impl=raw: the slowest rank's loop / iterations), ± population std (ddof=0) over iterations; "
    "algbw = bytes / time; busbw = algbw × 2(n−1)/n (0 for one rank); utilization = busbw / the link's "
    "per-direction peak (conf/hardware/). GB = 1e9 bytes."
)
PAIRED_NOTE = (
    "workload.paired_rounds > 0: after the protocol both methods ran in one process on copies of the same model, "
    "one iteration of each per round, the order alternating (workloads/paired.py). Per round, each method's "
    "images/s summed over ranks; the ratio is taken round by round, so a drift of the host hits both alike."
)
SCALING_LINES = {"weak": "weak scaling (per-worker batch fixed)", "strong": "strong scaling (global batch fixed)"}
EFFICIENCY_HEADERS = {"weak": "efficiency (t_base / t_N)", "strong": "efficiency (speedup / (N / N_base))"}


@dataclass
class StudyReport:
    markdown: str  # "" when no synthetic or allreduce result was read
    tables: Dict[str, pd.DataFrame] = field(default_factory=dict)  # CSV file name -> full-precision table
    skipped: List[str] = field(default_factory=list)  # results of these workloads that gave no row, why
    throughput: pd.DataFrame = field(default_factory=pd.DataFrame)  # the synthetic scaling table (for the plot)
    bandwidth: pd.DataFrame = field(default_factory=pd.DataFrame)  # the allreduce table (for the plot)


def tabulates(row: Mapping[str, Any]) -> bool:
    """Whether an ok result of this workload appears in this part of the report."""
    return row["status"] == "ok" and row["identity"]["workload"] in WORKLOADS


# --- text helpers -----------------------------------------------------------------------------------------


def size_text(nbytes: int) -> str:
    for unit, factor in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= factor and nbytes % factor == 0:
            return f"{nbytes // factor} {unit}"
    return f"{nbytes} B"


def duration_text(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.2f} h"


def money_text(usd: float) -> str:
    return "–" if math.isnan(usd) else f"${usd:,.2f}"


def rate_text(row: Mapping[str, Any]) -> str:
    return (f"{row['throughput_median']:.1f} [{row['throughput_min']:.1f}, {row['throughput_max']:.1f}] "
            f"(n={row['n']})")


def pm_text(mean: float, pm: float) -> str:
    return f"{mean:.1f} ± {pm:.1f}"


# --- synthetic --------------------------------------------------------------------------------------------


def scaling_section(table: pd.DataFrame) -> str:
    base = table.iloc[0]
    price = ("no GPU-hour price (pricing=none)" if base["price_name"] == "none"
             else f"{base['price_name']}: ${base['gpu_hour_usd']:.2f} per GPU-hour")
    headers = ["N", "nodes × workers/node", "batch per worker", "global batch", "images/s median [min, max] (n)",
               "CV", "ideal images/s", f"speedup (vs N = {base['world_size']})", EFFICIENCY_HEADERS[base["scaling"]],
               "Horovod total (mean ± 1.96σ)", f"time per epoch ({base['epoch_images']} images)",
               "cost per epoch", f"cost of {base['train_epochs']} epochs"]
    rows = [[row["world_size"], f"{row['nodes']} × {row['workers_per_node']}", row["per_worker_batch"],
             row["global_batch"], rate_text(row), f"{row['throughput_cv']:.2%}", f"{row['ideal_throughput']:.1f}",
             f"{row['speedup']:.2f}", f"{row['efficiency']:.1%}", pm_text(row["horovod_total_mean"],
                                                                          row["horovod_total_pm"]),
             duration_text(row["epoch_time_s"]), money_text(row["epoch_cost_usd"]), money_text(row["train_cost_usd"])]
            for _, row in table.iterrows()]
    title = f"### {base['model']}, {SCALING_LINES[base['scaling']]}" + (f": {base['label']}" if base["label"] else "")
    return f"{title}\n\nbaseline N = {base['world_size']}; {price}\n\n{markdown_table(headers, rows)}\n"


def protocol_section(table: pd.DataFrame) -> str:
    headers = ["configuration", "N", "batch per worker", "Horovod per GPU, device clock (mean ± 1.96σ)",
               "Horovod per GPU, its host clock (mean ± 1.96σ)", "Horovod total", "ours: images/s median "
               "[min, max] (n)", "CV", "Horovod total / ours"]
    rows = [[row["label"] or "–", row["world_size"], row["per_worker_batch"],
             pm_text(row["horovod_per_gpu_mean"], row["horovod_per_gpu_pm"]),
             pm_text(row["horovod_host_per_gpu_mean"], row["horovod_host_per_gpu_pm"]),
             pm_text(row["horovod_total_mean"], row["horovod_total_pm"]), rate_text(row),
             f"{row['throughput_cv']:.2%}", f"{row['horovod_total_vs_ours']:.3f}"] for _, row in table.iterrows()]
    return ("### Horovod's numbers and ours\n\nHorovod's script times each iteration on the host without "
            "synchronizing the device and reports rank 0 × N; its host-clock column shows what it would "
            f"print.\n\n{markdown_table(headers, rows)}\n")


def comparison_section(table: pd.DataFrame) -> str:
    first = table.iloc[0]
    headers = ["backend", "NCCL algorithm", "data parallel", "fusion / bucket [MiB]", "fp16 all-reduce",
               "images/s median [min, max] (n)", "CV", "Horovod total (mean ± 1.96σ)", "vs fastest", "vs DDP"]
    rows = [[row["backend"], row["nccl_algo"], row["data_parallel"], f"{row['fusion_threshold_mb']:g}",
             "yes" if row["fp16_allreduce"] else "no", rate_text(row), f"{row['throughput_cv']:.2%}",
             pm_text(row["horovod_total_mean"], row["horovod_total_pm"]), f"{row['vs_fastest']:.1%}",
             "–" if math.isnan(row["vs_ddp"]) else f"{row['vs_ddp']:.1%}"] for _, row in table.iterrows()]
    setup = f" ({first['setup']})" if first["setup"] else ""
    return (f"### All-reduce implementations compared: N = {first['world_size']} ({first['nodes']} × "
            f"{first['workers_per_node']}){setup}\n\nFastest first. vs DDP: against the DDP row with the same "
            f"backend, algorithm, bucket size and compression.\n\n{markdown_table(headers, rows)}\n")


def paired_section(table: pd.DataFrame) -> str:
    headers = ["point", "configuration", "N", "nodes × workers/node", "batch per worker", "fusion / bucket [MiB]",
               "fp16 all-reduce", "rounds", "DDP images/s (median)", "Horovod-style images/s (median)",
               "Horovod-style / DDP: median [min, max]"]
    rows = [[row["point"], row["label"] or "–", row["world_size"], f"{row['nodes']} × {row['workers_per_node']}",
             row["per_worker_batch"], f"{row['fusion_threshold_mb']:g}", "yes" if row["fp16_allreduce"] else "no",
             row["rounds"], f"{row['ddp_median']:.1f}", f"{row['horovod_median']:.1f}",
             f"{row['ratio_median']:.4f} [{row['ratio_min']:.4f}, {row['ratio_max']:.4f}]"]
            for _, row in table.iterrows()]
    return ("### DDP vs Horovod-style, side by side in one process\n\n" + PAIRED_NOTE + "\n\n"
            + markdown_table(headers, rows) + "\n")


def synthetic_markdown(scaling: pd.DataFrame, protocol: pd.DataFrame, comparison: pd.DataFrame,
                       paired: pd.DataFrame) -> str:
    parts = []
    for sweep, table in scaling.groupby("sweep", sort=True):
        parts.append(f"## {sweep} · synthetic\n\n{SYNTHETIC_NOTE}\n")
        for _, config in table.groupby(["label", "scaling"], sort=True):
            parts.append(scaling_section(config.reset_index(drop=True)))
        parts.append(protocol_section(protocol[protocol["sweep"] == sweep]))
        mine = comparison[comparison["sweep"] == sweep]
        for _, group in mine.groupby(["setup", "world_size", "nodes"], sort=True):
            parts.append(comparison_section(group.reset_index(drop=True)))
        if not paired[paired["sweep"] == sweep].empty:
            parts.append(paired_section(paired[paired["sweep"] == sweep]))
    return "\n".join(parts)


# --- allreduce --------------------------------------------------------------------------------------------


def allreduce_point_section(rows: pd.DataFrame) -> str:
    first = rows.iloc[0]
    peak = "no link peak (hardware=none)" if first["link"] == "none" else f"link {first['link']}"
    headers = ["size", "time [µs] (mean ± std, n)", "algbw [GB/s]", "busbw [GB/s]", "utilization", "sum"]
    table = [[size_text(row["bytes"]),
              f"{row['time_s'] * 1e6:.1f}" + ("" if math.isnan(row["time_std_s"]) else
                                              f" ± {row['time_std_s'] * 1e6:.1f}") + f" (n={row['iters']})",
              f"{row['algbw_GBps']:.3f}", f"{row['busbw_GBps']:.3f}",
              "–" if math.isnan(row["utilization"]) else f"{row['utilization']:.1%}",
              "ok" if row["correct"] else "WRONG"] for _, row in rows.iterrows()]
    return (f"### point {first['point']}: N = {first['world_size']}, impl={first['impl']}, {first['dtype']}, "
            f"{peak}\n\n{markdown_table(headers, table)}\n")


def impl_comparison(rows: pd.DataFrame) -> pd.DataFrame:
    """busbw of impl=hpml next to impl=raw (the bare loop) for each world size, dtype and size of a sweep."""
    keys = ["sweep", "world_size", "dtype", "bytes"]
    best = rows.groupby(keys + ["impl"], sort=True)["busbw_GBps"].median().unstack("impl")
    if not {"hpml", "raw"} <= set(best.columns):
        return pd.DataFrame()
    both = best.dropna(subset=["hpml", "raw"]).reset_index()
    return both.assign(ratio=both["hpml"] / both["raw"])


def allreduce_markdown(rows: pd.DataFrame) -> str:
    parts = []
    side_by_side = impl_comparison(rows)
    for sweep, sweep_rows in rows.groupby("sweep", sort=True):
        parts.append(f"## {sweep} · allreduce\n\n{ALLREDUCE_NOTE}\n")
        # One section per result file: two launches under one sweep name both have a point 0.
        for _, point in sweep_rows.groupby(["point", "repeat", "path"], sort=True, dropna=False):
            parts.append(allreduce_point_section(point))
        mine = side_by_side[side_by_side["sweep"] == sweep] if not side_by_side.empty else side_by_side
        if not mine.empty:
            table = [[row["world_size"], row["dtype"], size_text(row["bytes"]), f"{row['hpml']:.3f}",
                      f"{row['raw']:.3f}", f"{row['ratio']:.1%}"] for _, row in mine.iterrows()]
            parts.append("### hpml's timed loop vs a bare all_reduce loop (impl=raw)\n\nbusbw in GB/s (median "
                         "over repeats); hpml / raw below 100 % is the cost of timing every iteration.\n\n"
                         + markdown_table(["N", "dtype", "size", "busbw hpml", "busbw raw", "hpml / raw"], table)
                         + "\n")
    return "\n".join(parts)


# --- the whole part ---------------------------------------------------------------------------------------


def study_report(rows: Iterable[Mapping[str, Any]]) -> StudyReport:
    rows = list(rows)
    runs = synthetic_runs(rows)
    bandwidth = allreduce_table(rows)
    scaling, protocol, comparison, paired = (scaling_table(runs.rows), protocol_table(runs.rows),
                                             comparison_table(runs.rows), paired_table(runs.rows))
    parts = []
    if not scaling.empty:
        parts.append(synthetic_markdown(scaling, protocol, comparison, paired))
    if not bandwidth.rows.empty:
        parts.append(allreduce_markdown(bandwidth.rows))
    skipped = runs.skipped + bandwidth.skipped
    if skipped:
        parts.append(f"## Synthetic and all-reduce results left out ({len(skipped)})\n\n"
                     + "\n".join(f"- `{line}`" for line in skipped) + "\n")
    tables = {"synthetic_scaling.csv": scaling, "synthetic_protocol.csv": protocol,
              "synthetic_comparison.csv": comparison, "synthetic_paired.csv": paired,
              "allreduce.csv": bandwidth.rows}
    return StudyReport(markdown="\n".join(parts), tables={k: v for k, v in tables.items() if not v.empty},
                       skipped=skipped, throughput=scaling, bandwidth=bandwidth.rows)


def write_study(study: StudyReport, out_dir: Path) -> List[Path]:
    from analysis.horovod_plots import busbw_plot, throughput_plot  # matplotlib only when there is something to draw

    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, table in study.tables.items():
        table.to_csv(out_dir / name, index=False)
        written.append(out_dir / name)
    if not study.throughput.empty:
        written.append(throughput_plot(study.throughput, out_dir / "synthetic_throughput.png"))
    if not study.bandwidth.empty:
        written.append(busbw_plot(study.bandwidth, out_dir / "allreduce_busbw.png"))
    return written


__all__ = ["StudyReport", "study_report", "tabulates", "write_study", "size_text", "duration_text"]

