"""The study's log-log charts: time against K, one line per GPU launch shape plus the CPU's, two panels (the
whole program; the kernel alone, the CPU's loop), one row of panels per sweep. cuda_vecadd_explicit.png holds
the explicit-copy lines; cuda_vecadd_managed.png the managed ones, solid, and the prefetched ones, dashed.
Error bars: [min, max] over the repetitions. Drawing only: the numbers are analysis.cuda_vecadd.tables'.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import pandas as pd

from hpml.analysis.stats import natural_key
from hpml.report_kit.figures import save, worth_drawing

SHAPE_COLORS = {"one_thread": "tab:red", "one_block": "tab:orange", "many_blocks": "tab:blue",
                "many_blocks_vec4": "tab:green"}
MODE_STYLES = {"explicit": "-", "managed": "-", "prefetch": "--"}
PANELS = (("total", "whole program (alloc + copies + kernel + free)"), ("kernel", "kernel (CPU: the loop)"))


def _line_label(shape: str, memory: str, point: int, several_points: bool) -> str:
    label = "CPU, 1 thread" if shape == "cpu" else f"{shape}" + ("" if memory == "explicit" else f", {memory}")
    return label + (f" (point {point})" if several_points else "")


def time_plot(rows: pd.DataFrame, modes: Sequence[str], path: Path) -> bool:
    """rows: analysis.cuda_vecadd.tables.case_rows of one or more results. False, drawing nothing, when no
    GPU line of these modes has two sizes (a CPU point's report has no chart: its line is in both)."""
    gpu = rows[rows["memory"].isin(list(modes))]
    sweeps = sorted((sweep for sweep, mine in gpu.groupby("sweep")
                     if worth_drawing((line for _, line in mine.groupby(["result", "shape", "memory"])), "K_m")),
                    key=natural_key)  # a sweep of one size (a single cell) gets no panel
    if not sweeps:
        return False
    rows = rows[rows["memory"].isin(list(modes)) | (rows["shape"] == "cpu")]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(sweeps), len(PANELS), figsize=(6.4 * len(PANELS), 4.8 * len(sweeps)),
                             squeeze=False)
    for row_axes, sweep in zip(axes, sweeps):
        mine = rows[rows["sweep"] == sweep]
        several_points = mine["result"].nunique() > 1
        for ax, (part, title) in zip(row_axes, PANELS):
            for (_, shape, memory), line in mine.groupby(["result", "shape", "memory"], sort=True):
                line = line.sort_values("K_m")
                median = line[f"{part}_median_s"] * 1e3
                spread = [median - line[f"{part}_min_s"] * 1e3, line[f"{part}_max_s"] * 1e3 - median]
                ax.errorbar(line["K_m"], median, yerr=spread, capsize=2, markersize=4, marker="o",
                            linestyle=MODE_STYLES.get(memory, "-"), color=SHAPE_COLORS.get(shape, "black"),
                            label=_line_label(shape, memory, line["point"].iloc[0], several_points))
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("K [million floats]")
            ax.set_ylabel("time [ms], median [min, max]")
            ax.set_title(f"{sweep}: {' + '.join(modes)} memory, {title}", fontsize="medium")
            ax.grid(alpha=0.3, which="both")
            ax.legend(fontsize="small")
    return save(plt, fig, path)
