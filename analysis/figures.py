"""What every report figure shares: matplotlib with the Agg backend (no display), imported only when a
figure is drawn, and the rule that a line needs two points to be worth a plot."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

import pandas as pd


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
