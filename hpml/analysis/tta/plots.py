"""The time-to-accuracy figures of one configuration (PNG, matplotlib's Agg backend: no display needed).

- curves: validation top-1 against wall-clock since training started (evaluation included), one line per run,
  one colour per hardware, the target as a dashed line, each run's first evaluation at the target circled.
- spread: per hardware, the converged runs' TTA as points over a box (median, quartiles, whiskers at 1.5 IQR):
  filled on the left with evaluation time, hollow on the right without; the x label says how many converged.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Sequence

from hpml.analysis.stats import natural_key
from hpml.report_kit import figures


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _hardware_order(runs: Sequence[Dict[str, Any]]) -> List[str]:
    return sorted({run["hardware"] for run in runs}, key=natural_key)


def curves_png(runs: Sequence[Dict[str, Any]], path: Path, title: str) -> bool:
    """False (no file) when no run has an evaluation."""
    runs = [run for run in runs if run["elapsed_s"]]
    if not runs:
        return False
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.4), dpi=120)
    colours = {hw: f"C{i}" for i, hw in enumerate(_hardware_order(runs))}
    labelled = set()
    for run in sorted(runs, key=lambda r: (natural_key(r["hardware"]), r["path"])):
        hw = run["hardware"]
        ax.plot(run["elapsed_s"], [v * 100 for v in run["top1"]], marker=".", linewidth=1, color=colours[hw],
                alpha=0.8, label=None if hw in labelled else hw)
        labelled.add(hw)
        if run["converged"]:
            ax.plot(run["tta_s"], run["top1"][run["target_index"]] * 100, marker="o", markersize=7, fillstyle="none",
                    color=colours[hw])
    for target in sorted({run["target"] for run in runs if run["target"] is not None}):
        ax.axhline(target * 100, linestyle="--", color="black", linewidth=1, label=f"target {target * 100:g} %")
    ax.set_xlabel("wall-clock since training started [s] (evaluation included)")
    ax.set_ylabel("validation top-1 [%]")
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    return figures.save(plt, fig, path)


def spread_png(runs: Sequence[Dict[str, Any]], path: Path, title: str) -> bool:
    """False (no file) when no run with a target converged."""
    targeted = [run for run in runs if run["target"] is not None]
    if not any(run["converged"] for run in targeted):
        return False
    plt = _pyplot()
    from matplotlib.lines import Line2D

    fig, ax = plt.subplots(figsize=(6.4, 4.4), dpi=120)
    order = _hardware_order(runs)  # the curves' order, so each hardware keeps its colour
    labels = []
    for x, hw in enumerate(order):
        members = [run for run in targeted if run["hardware"] == hw]
        done = [run for run in members if run["converged"]]
        labels.append(f"{hw}\n{len(done)}/{len(members)} converged")
        offsets = [(i - (len(done) - 1) / 2) * 0.03 for i in range(len(done))]  # equal times side by side
        for shift, key, fill in ((-0.2, "tta_s", "full"), (0.2, "tta_train_s", "none")):
            times = [run[key] for run in done]
            if times:
                ax.boxplot(times, positions=[x + shift], widths=0.3, showfliers=False)
                ax.plot([x + shift + o for o in offsets], times, "o", fillstyle=fill, color=f"C{x}")
    ax.set_xticks(range(len(order)))
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_xlim(-0.6, len(order) - 0.4)
    ax.set_ylabel("time to accuracy [s]")
    ax.set_title(title, fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(handles=[Line2D([], [], marker="o", linestyle="", color="black", label="evaluation included (left)"),
                       Line2D([], [], marker="o", linestyle="", fillstyle="none", color="black",
                              label="without evaluation time (right)")], fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return True
