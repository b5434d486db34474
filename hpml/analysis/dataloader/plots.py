"""samples/s against num_workers, one panel per group: one line per (pin_memory, persistent_workers, prefetch)
combination, each starting from the 0-worker point of the same pin_memory (without workers the other two options do
not exist); the device path as a horizontal line; the default marked with a star, the fastest setting with a ring.
Error bars: ± the sample std of the per-epoch rates. Drawing only: the numbers are analysis.dataloader.tables'.
"""

from __future__ import annotations

from pathlib import Path
from typing import List

import pandas as pd

from hpml.analysis.dataloader.runs import DEVICE, HOST
from hpml.report_kit.figures import panels, save

LINE_KEYS = ["pin_memory", "persistent_workers", "prefetch_factor"]


def line_label(pin: bool, persistent: bool, prefetch) -> str:
    return f"pin_memory={pin}, persistent={persistent}, prefetch={int(prefetch)}"


def lines(table: pd.DataFrame) -> List[tuple]:
    """(label, rows sorted by workers) per combination of the options of the host settings with workers."""
    host = table[table["placement"] == HOST]
    with_workers, without = host[host["workers"] > 0], host[host["workers"] == 0]
    drawn = []
    for (pin, persistent, prefetch), rows in with_workers.groupby(LINE_KEYS, sort=True):
        start = without[without["pin_memory"] == pin]
        drawn.append((line_label(pin, persistent, prefetch), pd.concat([start, rows]).sort_values("workers")))
    if not drawn:  # only 0-worker settings: one dot per pin_memory value
        drawn = [(f"pin_memory={pin}", rows) for pin, rows in without.groupby("pin_memory", sort=True)]
    return drawn


def worth_a_plot(table: pd.DataFrame) -> bool:
    """A trend needs two worker counts."""
    return table[table["placement"] == HOST]["workers"].nunique() >= 2


def draw_panel(ax, table: pd.DataFrame) -> None:
    host = table[table["placement"] == HOST]
    counts = sorted(int(w) for w in host["workers"].unique())
    position = {count: i for i, count in enumerate(counts)}  # evenly spaced: 0, 1, 2, 4, 8, 16
    for label, rows in lines(table):
        x = [position[int(w)] for w in rows["workers"]]
        ax.errorbar(x, rows["samples_per_s_mean"], yerr=rows["samples_per_s_std"], marker="o", markersize=3,
                    capsize=2, label=label)
    for row in table[table["placement"] == DEVICE].to_dict("records"):
        ax.axhline(row["samples_per_s_mean"], color="black", linestyle="--",
                   label="device path (no DataLoader)" + (", fastest" if row["fastest"] else ""))
    for row in host[host["default"]].to_dict("records"):
        ax.plot(position[int(row["workers"])], row["samples_per_s_mean"], "*", color="red", markersize=14,
                label="default (PyTorch's)", zorder=5)
    for row in host[host["fastest"]].to_dict("records"):
        ax.plot(position[int(row["workers"])], row["samples_per_s_mean"], "o", markersize=14, fillstyle="none",
                color="green", label="fastest", zorder=5)
    first = table.iloc[0]
    ax.set_xticks(range(len(counts)))
    ax.set_xticklabels([str(c) for c in counts])
    ax.set_xlabel("num_workers (DataLoader worker processes)")
    ax.set_ylabel("samples/s (mean ± std over timed epochs)")
    ax.set_title(f"{first['sweep']}: {first['dataset']}, {first['hardware']}, {first['cpus']} CPUs", fontsize="medium")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="x-small")


def workers_plot(tables: List[pd.DataFrame], path: Path) -> bool:
    """False, drawing nothing, when no group has two worker counts."""
    drawn = [table for table in tables if worth_a_plot(table)]
    if not drawn:
        return False
    plt, fig, axes = panels(len(drawn))
    for ax, table in zip(axes, drawn):
        draw_panel(ax, table)
    return save(plt, fig, path)
