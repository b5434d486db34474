"""The synthetic workload's report sections: throughput, scaling and cost per configuration, Horovod's
numbers next to ours, all-reduce implementations compared, DDP vs Horovod-style side by side; and the
throughput plot. Formatting only: every number comes from analysis.synthetic.tables, which recomputes from
the raw arrays. Files: synthetic_scaling.csv, synthetic_protocol.csv, synthetic_comparison.csv,
synthetic_paired.csv (and .tex), synthetic_throughput.png.
"""

from __future__ import annotations

import math
from typing import Any, List, Mapping

import pandas as pd

from hpml.analysis.stats import SCALING_MODES_TEXT, efficiency_header, natural_key
from hpml.analysis.synthetic.plots import throughput_plot
from hpml.report_kit.numbers import mean_std
from hpml.report_kit.sections import Figure, Section, Table

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
PAIRED_NOTE = (
    "workload.paired_rounds > 0: after the protocol both methods ran in one process on copies of the same model, "
    "one iteration of each per round, the order alternating (workloads/paired.py). Per round, each method's "
    "images/s summed over ranks; the ratio is taken round by round, so a drift of the host hits both alike."
)
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


def scaling_section(table: pd.DataFrame) -> Section:
    base = table.iloc[0]
    price = ("no GPU-hour price (pricing=none)" if base["price_name"] == "none"
             else f"{base['price_name']}: ${base['gpu_hour_usd']:.2f} per GPU-hour")
    headers = ["N", "nodes × workers/node", "batch per worker", "global batch", "images/s median [min, max] (n)",
               "CV", "ideal images/s", f"speedup (vs N = {base['world_size']})", efficiency_header(base["scaling"]),
               "Horovod total (mean ± 1.96σ)", f"time per epoch ({base['epoch_images']} images)",
               "cost per epoch", f"cost of {base['train_epochs']} epochs"]
    rows = [[row["world_size"], f"{row['nodes']} × {row['workers_per_node']}", row["per_worker_batch"],
             row["global_batch"], rate_text(row), f"{row['throughput_cv']:.2%}", f"{row['ideal_throughput']:.1f}",
             f"{row['speedup']:.2f}", f"{row['efficiency']:.1%}", mean_std(row["horovod_total_mean"],
                                                                           row["horovod_total_pm"], ".1f"),
             duration_text(row["epoch_time_s"]), money_text(row["epoch_cost_usd"]), money_text(row["train_cost_usd"])]
            for row in table.to_dict("records")]
    title = f"{base['model']}, {SCALING_MODES_TEXT[base['scaling']]}" + (f": {base['label']}" if base["label"] else "")
    return Section(title, markdown=f"baseline N = {base['world_size']}; {price}",
                   tables=[Table("synthetic_scaling", headers, rows, table)], level=3)


def protocol_section(table: pd.DataFrame) -> Section:
    headers = ["configuration", "N", "batch per worker", "Horovod per GPU, device clock (mean ± 1.96σ)",
               "Horovod per GPU, its host clock (mean ± 1.96σ)", "Horovod total", "ours: images/s median "
               "[min, max] (n)", "CV", "Horovod total / ours"]
    rows = [[row["label"] or "–", row["world_size"], row["per_worker_batch"],
             mean_std(row["horovod_per_gpu_mean"], row["horovod_per_gpu_pm"], ".1f"),
             mean_std(row["horovod_host_per_gpu_mean"], row["horovod_host_per_gpu_pm"], ".1f"),
             mean_std(row["horovod_total_mean"], row["horovod_total_pm"], ".1f"), rate_text(row),
             f"{row['throughput_cv']:.2%}", f"{row['horovod_total_vs_ours']:.3f}"] for row in table.to_dict("records")]
    return Section("Horovod's numbers and ours",
                   markdown="Horovod's script times each iteration on the host without synchronizing the device "
                            "and reports rank 0 × N; its host-clock column shows what it would print.",
                   tables=[Table("synthetic_protocol", headers, rows, table)], level=3)


def comparison_section(table: pd.DataFrame) -> Section:
    first = table.iloc[0]
    headers = ["backend", "NCCL algorithm", "data parallel", "fusion / bucket [MiB]", "fp16 all-reduce",
               "images/s median [min, max] (n)", "CV", "Horovod total (mean ± 1.96σ)", "vs fastest", "vs DDP"]
    rows = [[row["backend"], row["nccl_algo"], row["data_parallel"], f"{row['fusion_threshold_mb']:g}",
             "yes" if row["fp16_allreduce"] else "no", rate_text(row), f"{row['throughput_cv']:.2%}",
             mean_std(row["horovod_total_mean"], row["horovod_total_pm"], ".1f"), f"{row['vs_fastest']:.1%}",
             "–" if math.isnan(row["vs_ddp"]) else f"{row['vs_ddp']:.1%}"] for row in table.to_dict("records")]
    setup = f" ({first['setup']})" if first["setup"] else ""
    return Section(f"All-reduce implementations compared: N = {first['world_size']} ({first['nodes']} × "
                   f"{first['workers_per_node']}){setup}",
                   markdown="Fastest first. vs DDP: against the DDP row with the same backend, algorithm, bucket "
                            "size and compression.",
                   tables=[Table("synthetic_comparison", headers, rows, table)], level=3)


def paired_section(table: pd.DataFrame) -> Section:
    headers = ["point", "configuration", "N", "nodes × workers/node", "batch per worker", "fusion / bucket [MiB]",
               "fp16 all-reduce", "rounds", "DDP images/s (median)", "Horovod-style images/s (median)",
               "Horovod-style / DDP: median [min, max]"]
    rows = [[row["point"], row["label"] or "–", row["world_size"], f"{row['nodes']} × {row['workers_per_node']}",
             row["per_worker_batch"], f"{row['fusion_threshold_mb']:g}", "yes" if row["fp16_allreduce"] else "no",
             row["rounds"], f"{row['ddp_median']:.1f}", f"{row['horovod_median']:.1f}",
             f"{row['ratio_median']:.4f} [{row['ratio_min']:.4f}, {row['ratio_max']:.4f}]"]
            for row in table.to_dict("records")]
    return Section("DDP vs Horovod-style, side by side in one process", markdown=PAIRED_NOTE,
                   tables=[Table("synthetic_paired", headers, rows, table)], level=3)


def synthetic_sections(scaling: pd.DataFrame, protocol: pd.DataFrame, comparison: pd.DataFrame,
                       paired: pd.DataFrame) -> List[Section]:
    """Per sweep: a heading, a scaling section per configuration (batch sizes by value), Horovod's numbers,
    the comparisons and the paired runs when there are any; [] without rows."""
    sections: List[Section] = []
    for sweep in sorted(scaling["sweep"].unique(), key=natural_key):
        table = scaling[scaling["sweep"] == sweep]
        sections.append(Section(f"{sweep} · synthetic", markdown=SYNTHETIC_NOTE))
        configurations = sorted(table.groupby(["label", "scaling"], sort=False),
                                key=lambda item: (natural_key(item[0][0]), item[0][1]))
        sections += [scaling_section(config.reset_index(drop=True)) for _, config in configurations]
        sections.append(protocol_section(protocol[protocol["sweep"] == sweep]))
        mine = comparison[comparison["sweep"] == sweep]
        for _, group in mine.groupby(["setup", "world_size", "nodes"], sort=True):
            sections.append(comparison_section(group.reset_index(drop=True)))
        if not paired[paired["sweep"] == sweep].empty:
            sections.append(paired_section(paired[paired["sweep"] == sweep]))
    if sections:
        sections[0].figures.append(Figure("synthetic_throughput.png", lambda path: throughput_plot(scaling, path)))
    return sections
