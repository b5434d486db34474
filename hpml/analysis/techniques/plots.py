"""The training-techniques figures (PNG, matplotlib's Agg backend): the phase profile's pie chart and the
precision study's curves (training loss and held-out top-1 per epoch, one line per precision)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Mapping, Tuple

from hpml.analysis.techniques.profile import PARTS
from hpml.report_kit import figures


def profile_pie(shares: Mapping[str, float], path: Path, title: str) -> bool:
    """Shares of the timed epochs' wall time; a part of 0 or below (a negative "other") is left out."""
    parts = [(part, shares[part]) for part in PARTS if shares[part] > 0]
    if not parts:
        return False
    plt, fig, (ax,) = figures.panels(1)
    ax.pie([value for _, value in parts], labels=[f"{part} {value * 100:.1f} %" for part, value in parts],
           startangle=90, counterclock=False, textprops={"fontsize": 8})
    ax.set_title(title, fontsize=9)
    return figures.save(plt, fig, path)


def _mean_curve(curves: List[List[float]]) -> List[float]:
    """Per index, the mean over the curves long enough to have it."""
    length = max(len(c) for c in curves)
    return [sum(c[i] for c in curves if i < len(c)) / sum(i < len(c) for c in curves) for i in range(length)]


def _mean_by_epoch(runs: List[Mapping[str, Any]]) -> Tuple[List[int], List[float]]:
    """The runs' held-out top-1 averaged per evaluated epoch (a run that stopped early, at its target or its
    time limit, has fewer evaluations: each epoch's mean is over the runs that evaluated it)."""
    by_epoch: Dict[int, List[float]] = {}
    for run in runs:
        for epoch, top1 in zip(run["val_epoch"], run["val_top1"]):
            by_epoch.setdefault(epoch, []).append(top1)
    epochs = sorted(by_epoch)
    return epochs, [sum(by_epoch[e]) / len(by_epoch[e]) for e in epochs]


def precision_curves(by_setting: Dict[str, List[Mapping[str, Any]]], path: Path, title: str) -> bool:
    plt, fig, (loss_ax, top1_ax) = figures.panels(2)
    for setting, runs in by_setting.items():
        loss = _mean_curve([r["train_loss"] for r in runs])
        loss_ax.plot(range(1, len(loss) + 1), loss, marker="o", label=f"{setting} (n={len(runs)})")
        evaluated = [r for r in runs if r["val_top1"]]
        if evaluated:
            epochs, top1 = _mean_by_epoch(evaluated)
            top1_ax.plot(epochs, top1, marker="o", label=f"{setting} (n={len(evaluated)})")
    loss_ax.set(xlabel="epoch", ylabel="training loss (epoch mean; non-finite: not drawn)", title=title)
    top1_ax.set(xlabel="epoch", ylabel="held-out top-1", title=title)
    for ax in (loss_ax, top1_ax):
        ax.title.set_fontsize(9)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    return figures.save(plt, fig, path)
