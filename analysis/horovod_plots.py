"""PNG plots of the report (matplotlib, Agg: no display needed). Drawing only: the numbers come from the
tables of analysis.synthetic and analysis.bandwidth.

- throughput_plot: images/s (ours: median of the per-iteration sum over ranks) against the number of GPUs,
  one line per configuration, its ideal line (baseline x N / N_base) dashed in the same colour, from 0;
  one panel per sweep.
- busbw_plot: all-reduce busbw against the message size (log2 axis), one line per point (N, impl), the
  link's per-direction peak as a horizontal dotted line; one panel per sweep.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Tuple

import pandas as pd


def _figure(panels: int):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, panels, figsize=(6.4 * panels, 4.8), squeeze=False)
    return plt, fig, list(axes[0])


def _save(plt, fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def throughput_plot(table: pd.DataFrame, path: Path) -> Path:
    """table: analysis.synthetic.scaling_table."""
    sweeps = sorted(table["sweep"].unique())
    plt, fig, axes = _figure(len(sweeps))
    for ax, sweep in zip(axes, sweeps):
        colors = iter(plt.rcParams["axes.prop_cycle"].by_key()["color"] * 10)
        for (label, scaling), config in table[table["sweep"] == sweep].groupby(["label", "scaling"], sort=True):
            config = config.sort_values("world_size")
            color = next(colors)
            name = f"{scaling}" + (f", {label}" if label else "")
            ax.plot(config["world_size"], config["throughput_median"], "o-", color=color, label=name)
            ax.plot(config["world_size"], config["ideal_throughput"], "--", color=color, alpha=0.6,
                    label=f"ideal ({name})")
        ax.set_ylim(bottom=0)
        ax.set_xlabel("GPUs (workers)")
        ax.set_ylabel("images/s (median of the sum over ranks)")
        ax.set_xticks(sorted(table[table["sweep"] == sweep]["world_size"].unique()))
        ax.set_title(f"{sweep}: synthetic benchmark throughput")
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
    return _save(plt, fig, path)


def _size_ticks(sizes: List[int]) -> Tuple[List[int], List[str]]:
    from analysis.horovod_report import size_text

    ticks = sizes if len(sizes) <= 8 else sizes[::max(1, len(sizes) // 8)]
    return ticks, [size_text(int(s)) for s in ticks]


def busbw_plot(table: pd.DataFrame, path: Path) -> Path:
    """table: analysis.bandwidth.allreduce_table(...).rows."""
    sweeps = sorted(table["sweep"].unique())
    plt, fig, axes = _figure(len(sweeps))
    for ax, sweep in zip(axes, sweeps):
        rows = table[table["sweep"] == sweep]
        for (n, impl, point, repeat), point_rows in rows.groupby(["world_size", "impl", "point", "repeat"],
                                                                 sort=True):
            point_rows = point_rows.sort_values("bytes")
            ax.plot(point_rows["bytes"], point_rows["busbw_GBps"], "o-" if impl == "hpml" else "s--",
                    markersize=3, label=f"N={n}, {impl} (point {point}" + (f", repeat {repeat})" if repeat else ")"))
        peaks = rows.assign(peak=rows["busbw_GBps"] / rows["utilization"]).dropna(subset=["peak"])
        for link, peak in peaks.groupby("link")["peak"].median().items():
            ax.axhline(peak, color="gray", linestyle=":", label=f"{link} peak {peak:.0f} GB/s")
        ax.set_xscale("log", base=2)
        ticks, labels = _size_ticks(sorted(rows["bytes"].unique()))
        ax.set_xticks(ticks)
        ax.set_xticklabels(labels, rotation=45, fontsize="small")
        ax.set_xlabel("message size")
        ax.set_ylabel("busbw [GB/s] = algbw × 2(n−1)/n")
        ax.set_title(f"{sweep}: all-reduce bus bandwidth")
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
    return _save(plt, fig, path)
