"""The probe's report sections: per GPU, measured against published peaks; the matmul timing check.
Formatting only: the numbers come from analysis.probe.tables. Files: probe_peaks.csv, probe_matmul_check.csv
(and .tex).
"""

from __future__ import annotations

import math
from typing import List

import pandas as pd

from hpml.analysis.probe.tables import BAR
from hpml.analysis.stats import natural_key
from hpml.report_kit.sections import Section, Table

PEAKS_NOTE = (
    "Per repetition, TFLOP/s = 2 n³ / t / 1e12 (matmul) and GB/s = bytes moved / t / 1e9 (copy: 2 × the buffer, "
    "triad a = b + s·c: 3 × an array, host transfers: the buffer); median [min, max] over the n repetitions. "
    "Published: conf/hardware/gpu_peaks.py as the run recorded it, dense (no sparsity), per CUDA device; memory "
    "against the memory bandwidth, host transfers against the PCIe x16 link per direction. "
    "% of peak = median / published."
)
CHECK_NOTE = (
    "The probe times each product on its own (one torch.matmul(a, b, out=c) per repetition between CUDA events on "
    "a GPU, perf_counter on the CPU; inputs rotated where they fit in L2); the reference is plain torch.matmul(a, b) "
    "in loops timed by the host's wall clock between device synchronizations. Median TFLOP/s of each; the bar: "
    f"|probe / reference − 1| ≤ {BAR:.0%}."
)


def _rate(value: float) -> str:
    return f"{value:.1f}" if value >= 10 else f"{value:.3g}"


def _optional(value: float, text: str) -> str:
    return "–" if math.isnan(value) else text


def windows(row) -> str:
    """"warm-up ≥ 1 s, timed ≥ 1 s": the seconds the run warmed up and timed at least, where it recorded them."""
    parts = [f"{name} ≥ {row[key]:g} s" for name, key in (("warm-up", "warmup_s"), ("timed", "measure_s"))
             if not math.isnan(row[key])]
    return ", ".join(parts) if parts else "windows counted in repetitions only"


def device_section(rows: pd.DataFrame) -> Section:
    first = rows.iloc[0]
    body = [[r["quantity"], r["unit"], f"{_rate(r['median'])} [{_rate(r['min'])}, {_rate(r['max'])}] (n={r['n']})",
             _optional(r["peak"], _rate(r["peak"])), _optional(r["of_peak"], f"{r['of_peak']:.1%}")]
            for r in rows.to_dict("records")]
    return Section(f"point {first['point']}, rank {first['rank']}: {first['gpu']} (published: {first['published']}; "
                   f"{windows(first)})",
                   tables=[Table("probe_peaks", ["quantity", "unit", "measured median [min, max] (n)", "published",
                                                 "% of peak"], body, rows)], level=3)


def check_section(rows: pd.DataFrame) -> Section:
    body = [[r["point"], r["rank"], r["gpu"], windows(r), r["dtype"], _rate(r["probe_tflops"]),
             _rate(r["reference_tflops"]), f"{r['ratio']:.3f}", "yes" if r["within_bar"] else "NO"]
            for r in rows.to_dict("records")]
    return Section("Matmul timing check: probe vs plain torch.matmul", markdown=CHECK_NOTE,
                   tables=[Table("probe_matmul_check", ["point", "rank", "GPU", "windows", "dtype", "probe TFLOP/s",
                                                        "torch.matmul TFLOP/s", "probe / reference",
                                                        f"within {BAR:.0%}"], body, rows)], level=3)


def probe_sections(peaks: pd.DataFrame, checks: pd.DataFrame) -> List[Section]:
    """peaks, checks: analysis.probe.tables' frames; [] when there is no row."""
    if peaks.empty:
        return []
    sections: List[Section] = []
    for sweep in sorted(peaks["sweep"].unique(), key=natural_key):
        sections.append(Section(f"{sweep} · hardware probe: measured vs published peaks", markdown=PEAKS_NOTE))
        mine = peaks[peaks["sweep"] == sweep]
        for _, device in mine.groupby(["point", "repeat", "path", "rank"], sort=True, dropna=False):
            sections.append(device_section(device))
        sweep_checks = checks[checks["sweep"] == sweep]
        if not sweep_checks.empty:
            sections.append(check_section(sweep_checks))
    return sections
