"""The paleo workload's report sections: per sweep, the network summary (forward vs the sum of its layers,
PPP, PALEO's total and its error), the platform peaks, the reference GPU's time per image, why the layer sum
differs from the forward; per result, the layer table and its chart. Formatting only: the numbers come from
analysis.paleo.tables. Files: paleo_summary, paleo_peaks, paleo_reference, paleo_layers (.csv, .tex) and
paleo_<sweep>_<point>.png.
"""

from __future__ import annotations

import functools
from typing import Any, Dict, List, Sequence

import pandas as pd

from hpml.analysis.paleo.plots import layers_plot
from hpml.analysis.paleo.tables import (
    LAYER_COLUMNS,
    REFERENCE_PRECISIONS,
    SOURCES,
    PointTables,
    identity_columns,
    label,
    precision_text,
)
from hpml.analysis.stats import natural_key
from hpml.report_kit.numbers import NO_NUMBER_SHORT, ms, number, percent, si
from hpml.report_kit.sections import Figure, Section, Table

PALEO_NOTE = (
    "PALEO (Qi, Sparks and Talwalkar, ICLR 2017): a layer's predicted time = FLOPs / (PPP × peak FLOP/s) + "
    "bytes / memory bandwidth, with bytes = input + parameter + output bytes (each read or written once). "
    "PPP (platform percent of peak) achieved = FLOPs / (measured time × peak); the prediction uses "
    "workload.ppp. Error = (predicted − measured) / measured. FLOPs = 2 × the MACs that "
    "torch.utils.flop_counter counts (convolutions and matrix products; not biases, normalisation, "
    "activations or pooling). Two peaks: published (conf/hardware/gpu_peaks.py, dense, for the run's matmul "
    "dtype) and measured in the same run (an n³ matmul in that dtype and a device copy, medians). Times are "
    "medians over the repetitions, [min, max] beside them. GB = 1e9 B, TFLOP/s = 1e12 FLOP/s."
)

WHY_GPU = (
    "Why the sum of the layer times differs from the whole forward on a GPU: the per-layer timing "
    "synchronizes the device before and after every layer call, so (1) every layer pays the host's launch "
    "latency in full: the GPU sits idle from the start event until the layer's first kernel arrives (the "
    "dispatch through PyTorch takes microseconds per kernel), whereas in the whole forward the host queues "
    "layer k+1's kernels while layer k runs and the latency hides behind the work, except where the kernels "
    "are shorter than their launches (small batches); (2) no two layers overlap: one layer's last kernel and "
    "the next one's first never share the GPU; (3) every layer adds two events, two synchronizes and two "
    "Python hooks. All three make the sum longer than the forward; the excess per layer call is in the "
    "table. Ops that run outside every leaf module (ResNet's residual additions, torch.flatten) are in the "
    "forward and in no layer, which works the other way."
)
WHY_CPU = (
    "On the CPU every op runs synchronously on the calling thread and its intra-op thread pool, so a layer's "
    "time is its own without any synchronize. The sum differs from the forward by the hooks' own cost (two "
    "Python calls and two clock reads per layer call), by the ops outside every leaf module (in the forward, "
    "in no layer), and by cache and thread-pool effects: with several threads (resources.cpus_per_worker) "
    "each layer starts and joins its parallel region in both measurements alike, but the clock reads between "
    "layers let the pool's threads go idle."
)

# PALEO's tables print 4 significant digits and the short dash (report_kit.numbers)
ms_4g = functools.partial(ms, fmt=".4g", missing=NO_NUMBER_SHORT)
number_4g = functools.partial(number, fmt=".4g", missing=NO_NUMBER_SHORT)
percent_text = functools.partial(percent, missing=NO_NUMBER_SHORT)


def spread_text(median: float, low: float, high: float, n: int | None = None) -> str:
    """median [min, max] in ms, and (n=...) when n is given."""
    text = f"{ms_4g(median)} [{ms_4g(low)}, {ms_4g(high)}]"
    return text + (f" (n={n})" if n is not None else "")


def has_published(points: Sequence[PointTables]) -> bool:
    return any(point.peaks["published"] is not None for point in points)


def summary_table(points: Sequence[PointTables]) -> Table:
    sources = SOURCES if has_published(points) else ("measured",)
    headers = ["point", "model", "batch", "dtype", "device", "forward ms median [min, max]", "Σ layers ms",
               "Σ / forward", "excess per call µs", "FLOPs"]
    headers += [f"network PPP ({s})" for s in sources] + [f"PALEO ms ({s}), error" for s in sources]
    rows, frames = [], []
    for point in points:
        s, ident = point.summary, point.identity
        excess = (s["layer_sum_s"] - s["forward_median_s"]) / s["layer_calls"]
        row = [ident["point"], ident["model"], ident["batch"], precision_text(point), ident["device_name"],
               spread_text(s["forward_median_s"], s["forward_min_s"], s["forward_max_s"], s["n"]),
               ms_4g(s["layer_sum_s"]), f"{s['layer_sum_over_forward']:.2f}", f"{excess * 1e6:.1f}",
               si(s["flops"])]
        row += [percent_text(s[f"network_ppp_{source}"]) for source in sources]
        row += [f"{ms_4g(s[f'predicted_s_{source}'])} ({percent_text(s[f'error_{source}'], signed=True)})"
                for source in sources]
        rows.append(row)
        frames.append({**identity_columns(point), "device": ident["device_name"], "peak_dtype": ident["peak_dtype"],
                       "ppp_used": ident["ppp"], **s, "excess_per_call_s": excess})
    return Table("paleo_summary", headers, rows, pd.DataFrame(frames))


def peaks_table(points: Sequence[PointTables]) -> Table:
    headers = ["point", "device", "dtype", "published TFLOP/s", "measured TFLOP/s", "measured / published",
               "published GB/s", "measured copy GB/s", "measured / published"]
    rows, frames = [], []
    for point in points:
        s, ident = point.summary, point.identity
        published_tflops, published_GBps = s["peak_tflops_published"], s["peak_GBps_published"]
        measured_tflops, measured_GBps = s["peak_tflops_measured"], s["peak_GBps_measured"]
        rows.append([ident["point"], ident["device_name"], precision_text(point), number_4g(published_tflops),
                     number_4g(measured_tflops), percent_text(measured_tflops / published_tflops),
                     number_4g(published_GBps), number_4g(measured_GBps), percent_text(measured_GBps / published_GBps)])
        frames.append({**identity_columns(point), "device": ident["device_name"], "peak_dtype": ident["peak_dtype"],
                       "published_tflops": published_tflops, "measured_tflops": measured_tflops,
                       "published_GBps": published_GBps, "measured_GBps": measured_GBps,
                       "measured_label": point.peaks["measured"].label,
                       "published_label": point.peaks["published"].label if point.peaks["published"] else None})
    return Table("paleo_peaks", headers, rows, pd.DataFrame(frames))



def reference_table(points: Sequence[PointTables]) -> Table:
    """One row per model and input size (the answer does not depend on the batch or the run's dtype)."""
    seen: Dict[tuple, Dict[str, Any]] = {}
    for point in points:
        key = (point.identity["model"], point.identity["image_size"], point.reference["reference_gpu"])
        seen.setdefault(key, {"model": key[0], "image_size": key[1], **point.reference})
    headers = ["model", "input", "FLOPs per image", "reference GPU"] + [
        f"{precision} ms per image ({where})" for precision in REFERENCE_PRECISIONS for where in ("board", "one device")]
    rows = []
    for row in seen.values():
        cells = [row["model"], f"3×{row['image_size']}×{row['image_size']}", si(row["flops_per_image"]),
                 row["reference_name"]]
        for precision in REFERENCE_PRECISIONS:
            for where in ("board", "device"):
                cells.append(f"{ms_4g(row[f'{precision}_s_per_image_{where}'])} at "
                             f"{number_4g(row[f'{precision}_tflops_{where}'])} TFLOP/s")
        rows.append(cells)
    return Table("paleo_reference", headers, rows, pd.DataFrame(list(seen.values())))


def layer_table(point: PointTables) -> Table:
    sources = [s for s in SOURCES if point.peaks[s] is not None]
    headers = ["#", "layer", "type", "FLOPs", "bytes", "measured ms median [min, max]"]
    for source in sources:
        headers += [f"PALEO ms ({source})", f"PPP ({source})", f"error ({source})"]
    rows = []
    for r in point.layers:
        row = [r["index"], r["name"], r["type"], si(r["flops"]), si(r["bytes"]),
               spread_text(r["time_median_s"], r["time_min_s"], r["time_max_s"])]
        for source in sources:
            row += [ms_4g(r[f"predicted_s_{source}"]), percent_text(r[f"ppp_{source}"]),
                    percent_text(r[f"error_{source}"], signed=True)]
        rows.append(row)
    frame = pd.DataFrame([{**identity_columns(point), **r} for r in point.layers])
    return Table("paleo_layers", headers, rows, frame[LAYER_COLUMNS])


def point_section(point: PointTables) -> Section:
    heading, stem = label(point)
    n = point.layers[0]["n"]
    text = (f"{len(point.layers)} leaf-module calls in call order; measured: median [min, max] of {n} "
            f"repetitions, each layer synchronized before and after; PALEO at PPP = {point.identity['ppp']:g}.")
    return Section(heading, markdown=text, tables=[layer_table(point)],
                   figures=[Figure(f"paleo_{stem}.png", lambda path: layers_plot(point, path))], level=3)


def paleo_sections(points: List[PointTables]) -> List[Section]:
    """Sections of every result's tables; [] when there are none."""
    sections: List[Section] = []
    for sweep in sorted({p.identity["sweep"] for p in points}, key=natural_key):
        mine = sorted((p for p in points if p.identity["sweep"] == sweep),
                      key=lambda p: (p.identity["point"] if p.identity["point"] is not None else -1,
                                     p.identity["repeat"], str(p.identity["path"])))
        devices = {p.identity["device_type"] for p in mine}
        why = "\n\n".join(text for device, text in (("cuda", WHY_GPU), ("cpu", WHY_CPU)) if device in devices)
        sections.append(Section(f"{sweep} · paleo", markdown=PALEO_NOTE,
                                tables=[summary_table(mine), peaks_table(mine)], after=why))
        sections.append(Section(
            "inference time per image at the reference GPU's published peaks",
            markdown=("The study's estimate: FLOPs of one image / the published peak FLOP/s, in single (fp32) "
                      "and double (fp64) precision; no PPP and no memory term (the fastest the arithmetic could "
                      "go). A K80 board holds two GK210 GPUs and CUDA shows each as one device: one image's "
                      "forward runs on one device, at half the board's peak."),
            tables=[reference_table(mine)], level=3))
        sections += [point_section(point) for point in mine]
    return sections
