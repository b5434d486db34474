"""busbw against the message size (log2 axis), one line per result (N, impl), the link's per-direction peak
as a horizontal dotted line; one panel per sweep (the first report_kit.figures.MAX_PANELS). Drawing only: the
numbers are analysis.allreduce.tables'.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Tuple

import pandas as pd

from hpml.contract.units import GIB, KIB, MIB
from hpml.report_kit.figures import first_panels, panels, save, worth_drawing


def size_text(nbytes: int) -> str:
    """A message size in the largest binary unit that divides it: 1048576 -> "1 MiB"."""
    for unit, factor in (("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if nbytes >= factor and nbytes % factor == 0:
            return f"{nbytes // factor} {unit}"
    return f"{nbytes} B"


def _size_ticks(sizes: List[int]) -> Tuple[List[int], List[str]]:
    ticks = sizes if len(sizes) <= 8 else sizes[::max(1, len(sizes) // 8)]
    return ticks, [size_text(int(s)) for s in ticks]


LINE_KEYS = ["world_size", "impl", "point", "repeat"]


def busbw_plot(table: pd.DataFrame, path: Path) -> bool:
    """table: analysis.allreduce.tables.allreduce_table(...).rows. False, drawing nothing, when no line
    has two message sizes."""
    if not worth_drawing((line for _, line in table.groupby(["sweep"] + LINE_KEYS)), "bytes"):
        return False
    sweeps, note = first_panels(sorted(table["sweep"].unique()))
    plt, fig, axes = panels(len(sweeps))
    for ax, sweep in zip(axes, sweeps):
        rows = table[table["sweep"] == sweep]
        for (n, impl, point, repeat), point_rows in rows.groupby(LINE_KEYS, sort=True):
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
    if note:
        fig.suptitle(note, fontsize="small")
    return save(plt, fig, path)
