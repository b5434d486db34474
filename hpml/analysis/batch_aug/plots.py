"""Validation error against epoch, one line per variant (M, chunks, Cutout) of a group (PNG, matplotlib's Agg).

Each line is the mean over the variant's runs of the validation error (100 - top-1, in %) after each epoch, over
the runs that evaluated at that epoch (a run stops at its target, so late epochs can hold fewer runs: the legend
gives n, the band spans the runs' min to max). Log scale: the errors near a target of a few percent stay apart.
The target's error is the dashed line.
"""

from __future__ import annotations

import statistics
import textwrap
from pathlib import Path
from typing import Any, Callable, Dict, List, Sequence

from hpml.report_kit import figures


def error_curve(runs: Sequence[Dict[str, Any]]) -> Dict[str, List[float]]:
    """{"epoch", "mean", "min", "max", "n"}: the runs' validation error [%] per evaluated epoch, in epoch order."""
    by_epoch: Dict[int, List[float]] = {}
    for run in runs:
        for epoch, top1 in zip(run["eval_epochs"], run["top1"]):
            by_epoch.setdefault(epoch, []).append(100.0 * (1.0 - top1))
    epochs = sorted(by_epoch)
    return {"epoch": epochs, "mean": [statistics.fmean(by_epoch[e]) for e in epochs],
            "min": [min(by_epoch[e]) for e in epochs], "max": [max(by_epoch[e]) for e in epochs],
            "n": [len(by_epoch[e]) for e in epochs]}


def error_png(lines: Dict[str, Sequence[Dict[str, Any]]], target: Any, path: Path, title: str) -> bool:
    """lines: legend label -> the runs of that variant, in legend order. False (no file) when no line has two
    evaluated epochs."""
    curves = {label: error_curve(runs) for label, runs in lines.items()}
    if not any(len(curve["epoch"]) >= 2 for curve in curves.values()):
        return False
    plt, fig, (ax,) = figures.panels(1)
    for index, (label, curve) in enumerate(curves.items()):
        colour = f"C{index}"
        ax.plot(curve["epoch"], curve["mean"], marker=".", linewidth=1.2, color=colour,
                label=f"{label} (n={max(curve['n'])})")
        ax.fill_between(curve["epoch"], curve["min"], curve["max"], color=colour, alpha=0.15, linewidth=0)
    if target is not None:
        ax.axhline(100.0 * (1.0 - target), linestyle="--", color="black", linewidth=1,
                   label=f"target {target * 100:g} % top-1")
    from matplotlib.ticker import LogLocator, MaxNLocator, ScalarFormatter

    ax.set_yscale("log")
    # 1, 2, 3, 5, 10, 20 ... % rather than 2 x 10^0; every minor tick labelled would overlap near each decade
    ax.yaxis.set_minor_locator(LogLocator(base=10, subs=(2.0, 3.0, 5.0)))
    for axis in (ax.yaxis.set_major_formatter, ax.yaxis.set_minor_formatter):
        axis(ScalarFormatter())
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("epoch")
    ax.set_ylabel("validation error [%] (mean over runs; band: min-max)")
    ax.set_title("\n".join(textwrap.wrap(title, 70)), fontsize=10)  # a group's title names its hardware and path
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    return figures.save(plt, fig, path)


def drawer(lines: Dict[str, Sequence[Dict[str, Any]]], target: Any, title: str) -> Callable[[Path], bool]:
    return lambda path: error_png(lines, target, path, title)
