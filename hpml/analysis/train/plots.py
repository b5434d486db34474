"""Speedup vs device count for the batch size x devices study, with the ideal line. PNG only.

One line per (study group, fixed batch: per device for weak scaling, global for strong) from
analysis.train.tables' time table (its `speedup` column: total epoch time, t_base / t_N); rows that do not
fit are left out. Nothing is drawn unless some line has two points or more (one dot is no scaling curve). The dashed line is ideal
scaling, N / N_base. Past report_kit.figures.MAX_LINES lines, one summary per scaling mode instead (median and
min-max band per device count). matplotlib's Agg backend: no display needed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict

import pandas as pd

from hpml.report_kit import figures

LINE_KEYS = ["group_key", "scaling", "fixed_batch"]


def speedup_png(table: pd.DataFrame, path: Path, labels: Dict[str, str], title: str) -> bool:
    """Writes the plot; False (and no file) when no line has two points."""
    rows = table[table["fits"] & table["speedup"].notna()]
    if rows.empty or rows.groupby(LINE_KEYS)["devices"].nunique().max() < 2:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.4), dpi=120)
    count = len(rows.drop_duplicates(LINE_KEYS))
    if count > figures.MAX_LINES:  # 5,000 sweeps drew 5,000 lines nobody could tell apart: summarize
        for scaling, members in rows.groupby("scaling", sort=True):
            figures.summary_line(ax, members, "devices", "speedup", len(members.drop_duplicates(LINE_KEYS)),
                                 f"{scaling} scaling")
        title = f"{title}\n{count} lines summarized (every line in scaling.csv)"
    for (group, scaling, batch), line in rows.groupby(LINE_KEYS, sort=True) if count <= figures.MAX_LINES else []:
        line = line.sort_values("devices")
        batch_text = f"batch {batch}/device" if scaling == "weak" else f"global batch {batch}"
        name = " ".join(part for part in (labels.get(group, ""), batch_text) if part)
        ax.plot(line["devices"], line["speedup"], marker="o", label=name)
    base, top = int(rows["baseline_devices"].min()), int(rows["devices"].max())
    ideal = list(range(base, top + 1))
    ax.plot(ideal, [n / base for n in ideal], linestyle="--", color="black", label="ideal (N / N_base)")
    ax.set_xlabel("devices N (GPUs; CPU workers on a machine without GPUs)")
    ax.set_ylabel("speedup of the epoch time vs N_base")
    ax.set_title(title, fontsize=10)
    ax.set_xticks(sorted({int(n) for n in rows["devices"]}))
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    return figures.save(plt, fig, path)
