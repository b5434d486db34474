"""One result's layers as bars, in call order: FLOPs per layer call (top), and measured time next to PALEO's
prediction with each peak (bottom). Drawing only: the numbers are analysis.paleo.tables'."""

from __future__ import annotations

from pathlib import Path

from hpml.analysis.paleo.tables import SOURCES, PointTables, label
from hpml.contract.rates import GFLOP
from hpml.report_kit.figures import save

MAX_NAMED_TICKS = 60  # beyond this many layer calls the names would overlap: the axis shows indices only


def layers_plot(point: PointTables, path: Path) -> bool:
    """False, drawing nothing, for a model of one layer call (no comparison to see)."""
    layers = point.layers
    if len(layers) < 2:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    index = [row["index"] for row in layers]
    width = max(6.4, 0.16 * len(layers))
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(width, 7.2), sharex=True)
    top.bar(index, [row["flops"] / GFLOP for row in layers], color="tab:gray")
    top.set_ylabel("GFLOPs (2 × MACs)")
    top.set_title(label(point)[0])
    sources = [s for s in SOURCES if point.peaks[s] is not None]
    bar = 0.8 / (1 + len(sources))
    bottom.bar([i - 0.4 + bar / 2 for i in index], [row["time_median_s"] * 1e3 for row in layers], width=bar,
               label="measured (median)", color="tab:blue")
    for k, (source, color) in enumerate(zip(sources, ("tab:orange", "tab:green"))):
        bottom.bar([i - 0.4 + bar * (k + 1.5) for i in index], [row[f"predicted_s_{source}"] * 1e3 for row in layers],
                   width=bar, label=f"PALEO, {source} peaks (PPP {point.identity['ppp']:g})", color=color)
    bottom.set_yscale("log")
    bottom.set_ylabel("time per layer call [ms]")
    bottom.legend(fontsize="small")
    if len(layers) <= MAX_NAMED_TICKS:
        bottom.set_xticks(index)
        bottom.set_xticklabels([row["name"] for row in layers], rotation=90, fontsize="x-small")
    else:
        bottom.set_xlabel("layer call (in call order)")
    for ax in (top, bottom):
        ax.grid(alpha=0.3, axis="y")
    return save(plt, fig, path)
