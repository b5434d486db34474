"""Histograms of one run's weights and activations, a panel per layer, from the counts the worker kept (equal
bins from the tensor's min to its max). Marked on each: the tensor's range [min, max] (grey, dashed), mean ± k
sigma (blue, dotted; the k of the run), and the quantization range ±r that 127 maps to (red): one value per tensor,
or the narrowest and the widest channel's with per-channel weights. Activations on a log count axis: after a ReLU
most values are 0. Drawing only."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Dict, List

from hpml.report_kit.figures import save

COLUMNS = 3  # panels per row


def _grid(count: int):
    """(pyplot, figure, axes) with `count` panels, COLUMNS to a row; the unused ones hidden."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = math.ceil(count / COLUMNS)
    fig, axes = plt.subplots(rows, COLUMNS, figsize=(4.4 * COLUMNS, 3.4 * rows), squeeze=False)
    flat = [ax for row in axes for ax in row]
    for ax in flat[count:]:
        ax.set_visible(False)
    return plt, fig, flat[:count]


def _panel(ax, summary: Dict[str, Any], title: str, ranges: List[float], k: float, log: bool) -> None:
    hist = summary["histogram"]
    counts = hist["counts"]
    width = (hist["hi"] - hist["lo"]) / len(counts)
    ax.bar([hist["lo"] + (i + 0.5) * width for i in range(len(counts))], counts, width=width, color="tab:gray",
           alpha=0.6)
    for x in (summary["min"], summary["max"]):
        ax.axvline(x, color="dimgray", linestyle="--", linewidth=1)
    for x in (summary["mean"] - k * summary["std"], summary["mean"] + k * summary["std"]):
        ax.axvline(x, color="tab:blue", linestyle=":", linewidth=1.2)
    for r in sorted({min(ranges), max(ranges)}):
        for x in (-r, r):
            ax.axvline(x, color="tab:red", linewidth=1)
    if log:
        ax.set_yscale("log")
    ax.set_title(f"{title}\n[{summary['min']:.3g}, {summary['max']:.3g}], σ={summary['std']:.3g}", fontsize="small")
    ax.tick_params(labelsize="x-small")


def _legend(ax, k: float) -> None:
    from matplotlib.lines import Line2D

    ax.legend([Line2D([], [], color="dimgray", linestyle="--"), Line2D([], [], color="tab:blue", linestyle=":"),
               Line2D([], [], color="tab:red")], ["[min, max]", f"mean ± {k:g}σ", "±r (127)"], fontsize="x-small")


def weights_png(run: Dict[str, Any], path: Path, title: str) -> bool:
    layers = run["layers"]
    k = run["workload"]["sigma_k"]
    plt, fig, axes = _grid(len(layers))
    for ax, layer in zip(axes, layers):
        _panel(ax, layer["weight"], f"{layer['name']} weights", layer["weight_range"], k, log=False)
    _legend(axes[0], k)
    fig.suptitle(title, fontsize="small")
    return save(plt, fig, path)


def activations_png(run: Dict[str, Any], path: Path, title: str) -> bool:
    k = run["workload"]["sigma_k"]
    tensors = [("input image", run["input"], [run["input"]["range"]])]
    tensors += [(f"{layer['name']} output", layer["output"], [layer["output_range"]]) for layer in run["layers"]]
    plt, fig, axes = _grid(len(tensors))
    for ax, (name, summary, ranges) in zip(axes, tensors):
        _panel(ax, summary, name, ranges, k, log=not math.isclose(summary["min"], summary["max"]))
    _legend(axes[0], k)
    fig.suptitle(title, fontsize="small")
    return save(plt, fig, path)
