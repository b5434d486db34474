"""One point's time series: utilization.gpu (top) and utilization.memory (bottom) against seconds since the
point's sampling began (the earliest node's start: one clock for every node), one line per GPU (host and
CUDA index), GPM SM activity dashed beside utilization.gpu where the GPU gives it, every phase edge a thin
vertical line, the timed window shaded. Nulls are gaps, not 0.

`timeline` keeps only what is drawn, so the raw columns of a point can be dropped once its numbers are taken:
a line of more than MAX_POINTS_PER_LINE samples becomes the mean of each run of k consecutive samples, with
the run's min-max band shaded (a spike stays visible). The axes are ~1,000 pixels wide, and drawing an hour
at 100 ms (36,000 samples) for 8 GPUs as raw lines took 7.5 s per PNG.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from hpml.analysis.telemetry.series import Sidecar
from hpml.report_kit.figures import save

MAX_POINTS_PER_LINE = 2000


class Binned(NamedTuple):
    t: np.ndarray  # each run's mean time
    mean: np.ndarray  # each run's mean of the values NVML gave; NaN where it gave none
    low: np.ndarray
    high: np.ndarray


def binned(t: np.ndarray, values: np.ndarray, k: int) -> Binned:
    """Runs of k consecutive samples (the last one shorter) -> their mean time, mean, min and max; nulls
    (NaN) left out, a run of nulls stays NaN (a gap)."""
    pad = (-len(values)) % k
    runs = np.concatenate([values, np.full(pad, np.nan)]).reshape(-1, k)
    times = np.concatenate([t, np.full(pad, np.nan)]).reshape(-1, k)
    given = ~np.isnan(runs)
    counts = given.sum(axis=1)
    empty = counts == 0
    mean = np.where(empty, np.nan, np.where(given, runs, 0.0).sum(axis=1) / np.maximum(counts, 1))
    low = np.where(empty, np.nan, np.where(given, runs, np.inf).min(axis=1))
    high = np.where(empty, np.nan, np.where(given, runs, -np.inf).max(axis=1))
    t_mean = np.nansum(times, axis=1) / (~np.isnan(times)).sum(axis=1)
    return Binned(t_mean, mean, low, high)


@dataclass
class Trace:
    """One GPU as drawn: its label, the run length k (1: raw samples) and its lines."""

    label: str
    k: int
    util_gpu: Binned
    util_mem: Binned
    sm_activity: Optional[Binned]  # None when the GPU gave no SM activity


@dataclass
class Timeline:
    traces: List[Trace]
    spans: List[Tuple[float, float]]  # the timed window, merged intervals
    edges: List[float]  # every phase's start and end


def _merged(spans: List[Tuple[float, float]]) -> List[Tuple[float, float]]:
    merged: List[Tuple[float, float]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def timeline(sidecars: Sequence[Sidecar]) -> Optional[Timeline]:
    """What the PNG shows; None when no GPU has two samples (one dot shows no course over time)."""
    if not any(len(gpu.columns["t_s"]) >= 2 for sidecar in sidecars for gpu in sidecar.gpus):
        return None
    origin = min(sidecar.t0_unix for sidecar in sidecars)  # nodes start apart: one clock for all
    traces, spans, edges = [], [], set()
    for sidecar in sorted(sidecars, key=lambda s: s.node_rank):
        offset = sidecar.t0_unix - origin
        last = max((float(gpu.columns["t_s"][-1]) for gpu in sidecar.gpus if len(gpu.columns["t_s"])), default=0.0)
        spans += [(phase.start_s + offset, (last if phase.end_s is None else phase.end_s) + offset)
                  for phase in sidecar.timed_phases if phase.start_s is not None]
        edges |= {edge + offset for phase in sidecar.phases for edge in (phase.start_s, phase.end_s)
                  if edge is not None}
        for gpu in sorted(sidecar.gpus, key=lambda g: g.cuda_index):
            t, c = gpu.columns["t_s"] + offset, gpu.columns
            k = max(1, -(-len(t) // MAX_POINTS_PER_LINE))
            sm = None if np.isnan(c["sm_activity"]).all() else binned(t, c["sm_activity"], k)
            traces.append(Trace(f"{sidecar.host} cuda:{gpu.cuda_index}", k, binned(t, c["util_gpu"], k),
                                binned(t, c["util_mem"], k), sm))
    return Timeline(traces, _merged(spans), sorted(edges))


def _line(ax, line: Binned, k: int, style: str, color, label: Optional[str]) -> None:
    if k > 1:
        ax.fill_between(line.t, line.low, line.high, color=color, alpha=0.12, lw=0)
    ax.plot(line.t, line.mean, style, color=color, lw=1, label=label)


def draw_timeline(lines: Timeline, title: str, path: Path) -> bool:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(11, 6.4))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax in (top, bottom):
        for start, end in lines.spans:
            ax.axvspan(start, end, color="tab:green", alpha=0.08, lw=0)
        if lines.edges:
            ax.vlines(lines.edges, 0, 1, transform=ax.get_xaxis_transform(), colors="0.6", lw=0.5)
    for i, trace in enumerate(lines.traces):
        color = colors[i % len(colors)]
        _line(top, trace.util_gpu, trace.k, "-", color, trace.label)
        if trace.sm_activity is not None:
            _line(top, trace.sm_activity, trace.k, "--", color, None)
        _line(bottom, trace.util_mem, trace.k, "-", color, None)
    if any(trace.sm_activity is not None for trace in lines.traces):
        top.plot([], [], "--", color="0.3", lw=1, label="dashed: GPM SM activity (%)")
    k = max(trace.k for trace in lines.traces)
    top.set_ylabel("utilization.gpu (%)")
    bottom.set_ylabel("utilization.memory (%)")
    bottom.set_xlabel("seconds since sampling began")
    for ax in (top, bottom):
        ax.set_ylim(-2, 102)
        ax.grid(alpha=0.3)
    top.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))  # outside: never over a line
    top.set_title(f"{title}\nshaded: timed window; grey lines: phase edges"
                  + (f"; lines: means of runs of {k} samples, bands: their min-max" if k > 1 else ""),
                  fontsize="medium")
    return save(plt, fig, path)
