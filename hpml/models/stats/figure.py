"""The bar chart of `hpml model-stats --figure PNG`: FLOPs and parameters per layer, side by side, one bar
per layer call that has either (convolutions, linear layers, normalisations), in forward order."""

from __future__ import annotations

from pathlib import Path

from hpml.contract.rates import GFLOP
from hpml.models.stats.counting import ModelStats
from hpml.models.stats.tables import title
from hpml.report_kit.figures import save

# one bar per label row up to this many layers; more and the labels are thinned out
_LABELLED_LAYERS = 80


def draw_layers(stats: ModelStats, path: Path) -> bool:
    """Writes the PNG; False (nothing drawn) when no layer has FLOPs or parameters."""
    rows = [row for row in stats.rows if row.flops or row.params]
    if not rows:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    height = max(3.0, 0.16 * min(len(rows), _LABELLED_LAYERS) + 1.5)
    fig, (flops_axis, params_axis) = plt.subplots(1, 2, figsize=(12.8, height), sharey=True)
    positions = list(range(len(rows)))
    flops_axis.barh(positions, [row.flops / GFLOP for row in rows], color="tab:blue")
    flops_axis.set_xlabel("GFLOPs (2 x MACs)")
    params_axis.barh(positions, [row.params / 1e6 for row in rows], color="tab:orange")
    params_axis.set_xlabel("parameters [millions]")
    step = max(1, len(rows) // _LABELLED_LAYERS + (len(rows) % _LABELLED_LAYERS > 0))
    flops_axis.set_yticks(positions[::step], [rows[i].name for i in positions[::step]], fontsize=7)
    flops_axis.invert_yaxis()  # the first layer on top
    fig.suptitle(f"{title(stats)}: FLOPs and parameters per layer", fontsize=10)
    return save(plt, fig, path)
