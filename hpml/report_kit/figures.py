"""What every report figure shares: matplotlib with the Agg backend (no display), imported only when a
figure is drawn, the rule that a line needs two points to be worth a plot, and the rules that keep a figure
readable however many sweeps a report covers (issue 25; docs/decisions.md, "Hardening (issue 25)"):

- at most MAX_LINES lines in a plot: past that, the plot draws a summary instead, per x value the median
  over the lines and a band from their min to their max, and its title says how many lines it summarizes
  (every line's numbers stay in the report's CSV);
- at most MAX_PANELS panels (one per sweep) in a figure: the first ones in sorted order, and the figure's
  title says how many sweeps were left out (the CSV has them all).
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, List, Sequence, Tuple

import pandas as pd

MAX_LINES = 12  # distinct colours and a legend that still fits in one plot
MAX_PANELS = 4  # side by side at 6.4 inches each: a wide figure, still one screen


def worth_drawing(lines: Iterable[pd.DataFrame], x: str) -> bool:
    """Whether some line has two distinct x values or more (a single dot shows no trend)."""
    return any(line[x].nunique() >= 2 for line in lines)


def panels(count: int):
    """(pyplot, figure, axes) with `count` panels side by side."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, count, figsize=(6.4 * count, 4.8), squeeze=False)
    return plt, fig, list(axes[0])


def save(plt, fig, path: Path) -> bool:
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def first_panels(names: Sequence) -> Tuple[List, str]:
    """The panels to draw (the first MAX_PANELS), and a note for the figure's title ("" when all fit)."""
    kept = list(names)[:MAX_PANELS]
    if len(kept) == len(names):
        return kept, ""
    return kept, f"first {len(kept)} of {len(names)} sweeps drawn; every sweep is in the CSV"


def summary_line(ax, points: pd.DataFrame, x: str, y: str, lines: int, label: str, **style) -> None:
    """Per x value: the median of y over the points of `lines` lines (a line with markers) and the band from
    their min to max. One groupby over all the points: a groupby per line costs seconds over 5,000 lines."""
    values = points.groupby(x)[y]
    stats = pd.DataFrame({"median": values.median(), "low": values.min(), "high": values.max()}).sort_index()
    drawn = ax.plot(stats.index, stats["median"], marker="o", label=f"{label}: median of {lines} lines", **style)
    ax.fill_between(stats.index, stats["low"], stats["high"], alpha=0.2, color=drawn[0].get_color(),
                    label=f"{label}: min to max")
