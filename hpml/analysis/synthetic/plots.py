"""images/s (ours: median of the per-iteration sum over ranks) against the number of GPUs, one line per
configuration, its ideal line (baseline x N / N_base) dashed in the same colour, from 0; one panel per sweep
(the first report_kit.figures.MAX_PANELS).
Drawing only: the numbers are analysis.synthetic.tables'.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from hpml.report_kit.figures import first_panels, panels, save, worth_drawing

LINE_KEYS = ["sweep", "label", "scaling"]


def throughput_plot(table: pd.DataFrame, path: Path) -> bool:
    """table: analysis.synthetic.tables.scaling_table. False, drawing nothing, when no configuration was
    run at two GPU counts or more."""
    if not worth_drawing((line for _, line in table.groupby(LINE_KEYS)), "world_size"):
        return False
    sweeps, note = first_panels(sorted(table["sweep"].unique()))
    plt, fig, axes = panels(len(sweeps))
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
    if note:
        fig.suptitle(note, fontsize="small")
    return save(plt, fig, path)
