"""The cuda_vecadd report's sections: per sweep a note and the two charts; per result its device and builds,
then one table per memory mode (K x launch shape), the CPU baseline's and the device copy's. Formatting only:
the numbers come from analysis.cuda_vecadd.tables.
Files: cuda_vecadd_builds, cuda_vecadd_explicit, cuda_vecadd_managed, cuda_vecadd_prefetch, cuda_vecadd_cpu,
cuda_vecadd_copy (.csv, .tex), cuda_vecadd_explicit.png, cuda_vecadd_managed.png.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable, Dict, List, Mapping, Sequence, Tuple

import pandas as pd

from hpml.analysis.cuda_vecadd.plots import time_plot
from hpml.analysis.stats import natural_key
from hpml.contract.units import MS_PER_S
from hpml.report_kit.numbers import NO_NUMBER_SHORT, is_missing, percent, three_digits
from hpml.report_kit.sections import Figure, Section, Table

NOTE = (
    "Each repetition's total = alloc + h2d + kernel + d2h + free (a part the mode lacks counts 0; the host's "
    "fill of the inputs and the exact check of c are outside it): median [min, max] over the n timed "
    "repetitions; the parts are medians; times in ms. Kernel bandwidth = 3 × 4 × K bytes / median kernel time "
    "(GB = 1e9 B); % of peak: of the device's published memory bandwidth (conf/hardware/gpu_peaks.py); % of "
    "copy: of a device-to-device cudaMemcpy moving the same 12 K bytes in the same run (2 × bytes / time).")

MODE_TITLES = {
    "explicit": "explicit copies (cudaMalloc + cudaMemcpy)",
    "managed": "unified memory (cudaMallocManaged): pages migrate on first touch",
    "prefetch": "unified memory prefetched (cudaMemPrefetchAsync to the device and back)",
}
MODE_NOTES = {
    "explicit": "",
    "managed": "kernel: the first run after the host wrote a and b (their pages migrate during it); 2nd run: "
               "the same kernel again, pages resident; d2h: the host reading one float per 4 KiB page of c. "
               "fill: the host writing a and b (not in the total).",
    "prefetch": "h2d and d2h: cudaMemPrefetchAsync of a, b, c to the device and of c back to the host. fill: "
                "the host writing a and b (not in the total).",
}


# The study's tables: milliseconds and GB/s to 3 significant digits (every digit from 1 s, from 100 GB/s on),
# shares to 0.1 %, the short dash where there is no number (report_kit.numbers)
ms_text = functools.partial(three_digits, scale=MS_PER_S, missing=NO_NUMBER_SHORT)
rate_text = functools.partial(three_digits, wide_from=100, missing=NO_NUMBER_SHORT)
share_text = functools.partial(percent, missing=NO_NUMBER_SHORT)


def total_text(row: Mapping[str, Any]) -> str:
    return (f"{ms_text(row['total_median_s'])} [{ms_text(row['total_min_s'])}, {ms_text(row['total_max_s'])}] "
            f"(n={row['n']})")


Column = Tuple[str, Callable[[Mapping[str, Any]], str]]
K = ("K [M]", lambda r: f"{r['K_m']:g}")
SHAPE = ("shape", lambda r: r["shape"])
TOTAL = ("total [ms]", total_text)
ALLOC = ("alloc", lambda r: ms_text(r["alloc_median_s"]))
FILL = ("fill", lambda r: ms_text(r["fill_median_s"]))
H2D = ("h2d", lambda r: ms_text(r["h2d_median_s"]))
KERNEL = ("kernel", lambda r: ms_text(r["kernel_median_s"]))
SECOND_RUN = ("kernel, 2nd run", lambda r: ms_text(r["kernel_resident_median_s"]))
D2H = ("d2h", lambda r: ms_text(r["d2h_median_s"]))
FREE = ("free", lambda r: ms_text(r["free_median_s"]))
GBPS = ("kernel GB/s", lambda r: rate_text(r["kernel_GBps"]))
SECOND_GBPS = ("2nd run GB/s", lambda r: rate_text(r["resident_GBps"]))
PEAK = ("% of peak", lambda r: share_text(r["of_peak"]))
COPY = ("% of copy", lambda r: share_text(r["of_copy"]))
SUM = ("sum", lambda r: "ok" if r["mismatches"] == 0 else f"WRONG ({r['mismatches']})")

MODE_COLUMNS: Dict[str, Sequence[Column]] = {
    "explicit": (K, SHAPE, TOTAL, ALLOC, H2D, KERNEL, D2H, FREE, GBPS, PEAK, COPY, SUM),
    "managed": (K, SHAPE, TOTAL, ALLOC, FILL, KERNEL, SECOND_RUN, D2H, FREE, GBPS, SECOND_GBPS, PEAK, COPY, SUM),
    "prefetch": (K, SHAPE, TOTAL, ALLOC, FILL, H2D, KERNEL, D2H, FREE, GBPS, PEAK, COPY, SUM),
    "cpu": (K, TOTAL, ALLOC, ("loop", KERNEL[1]), FREE, ("loop GB/s", GBPS[1]), SUM),
}
SHAPE_ORDER = {"one_thread": 0, "one_block": 1, "many_blocks": 2, "many_blocks_vec4": 3}


def table_of(name: str, columns: Sequence[Column], rows: pd.DataFrame) -> Table:
    records = rows.to_dict("records")
    return Table(name, [header for header, _ in columns], [[cell(r) for _, cell in columns] for r in records], rows)


def version_line(text: str) -> str:
    """The line of `--version` output that names the release (nvcc's 4th), else its first."""
    lines = [line for line in text.splitlines() if line.strip()] or [""]
    return next((line for line in lines if "release" in line), lines[0])


def build_table(info: Mapping[str, Any]) -> Table:
    frame = pd.DataFrame(info["builds"])
    headers = ["path", "compiler", "flags", "arch", "cache key", "cache hit", "compile [s]"]
    rows = [[b["path"], version_line(b["compiler_version"]), " ".join(b["flags"]), b["arch"], b["cache_key"][:12],
             "yes" if b["cache_hit"] else "no", f"{b['compile_s']:.2f}"] for b in info["builds"]]
    return Table("cuda_vecadd_builds", headers, rows, frame.assign(sweep=info["sweep"], point=info["point"]))


def bar_text(rows: pd.DataFrame) -> str:
    """The many-blocks kernels with explicit copies at the largest K against the copy and the peak (the
    issue's bar: many_blocks at 100 M >= 90 % of the copy)."""
    sentences = []
    for shape in ("many_blocks", "many_blocks_vec4"):
        mine = rows[(rows["shape"] == shape) & (rows["memory"] == "explicit")]
        if mine.empty:
            continue
        row = mine.sort_values("K_m").iloc[-1]
        text = (f"{shape}, explicit, K = {row['K_m']:g} M: kernel {rate_text(row['kernel_GBps'])} GB/s = "
                f"{share_text(row['of_copy'])} of the device-to-device copy ({rate_text(row['copy_GBps'])} GB/s)")
        if not math.isnan(row["of_peak"]):
            text += f" and {share_text(row['of_peak'])} of the published {rate_text(row['peak_GBps'])} GB/s"
        sentences.append(text + ".")
    return " ".join(sentences)


def point_text(info: Mapping[str, Any], rows: pd.DataFrame) -> str:
    """The device, its published peak, the programs' wall times and the bar sentence of one result."""
    if is_missing(info["cc"]):
        parts = ["CPU point: the C++ baseline only."]
    else:
        peak = info["peak"]
        parts = [f"Device: {info['device']} (compute capability {info['cc']}).",
                 "Published peak: " + (f"{peak['name']}, {peak['memory_GBps']:,.0f} GB/s ({peak['source']})" if peak
                                       else "none (the device is not in conf/hardware/gpu_peaks.py)") + "."]
    walls = [f"{what} {info[key]:.1f} s" for what, key in (("GPU grid", "gpu_wall_s"), ("CPU baseline", "cpu_wall_s"))
             if not is_missing(info[key])]
    parts.append("Program wall time: " + ", ".join(walls) + ".")
    return " ".join(parts + [bar_text(rows)]).strip()


def point_sections(info: Mapping[str, Any], rows: pd.DataFrame, copies: pd.DataFrame) -> List[Section]:
    sections = [Section(f"point {info['point']}: {info['device']}", markdown=point_text(info, rows),
                        tables=[build_table(info)], level=3)]
    order = rows.assign(_shape=rows["shape"].map(SHAPE_ORDER)).sort_values(["K_m", "_shape"], kind="stable")
    for mode, title in MODE_TITLES.items():
        mine = order[order["memory"] == mode].drop(columns="_shape")
        if not mine.empty:
            sections.append(Section(title, markdown=MODE_NOTES[mode],
                                    tables=[table_of(f"cuda_vecadd_{mode}", MODE_COLUMNS[mode], mine)], level=4))
    cpu = order[order["shape"] == "cpu"].drop(columns="_shape")
    if not cpu.empty:
        sections.append(Section("CPU baseline (C++ loop, one thread, -O3)",
                                tables=[table_of("cuda_vecadd_cpu", MODE_COLUMNS["cpu"], cpu)], level=4))
    if not copies.empty:
        copy_columns: Sequence[Column] = (
            K, ("bytes copied", lambda r: f"{r['bytes']:,}"),
            ("copy GB/s (read + written), median [min, max] (n)",
             lambda r: f"{rate_text(r['copy_GBps'])} [{rate_text(r['copy_min_GBps'])}, "
                       f"{rate_text(r['copy_max_GBps'])}] (n={r['n']})"))
        sections.append(Section("device-to-device copy (the kernel's bytes, cudaMemcpy)",
                                tables=[table_of("cuda_vecadd_copy", copy_columns, copies.sort_values("K_m"))],
                                level=4))
    return sections


def cuda_vecadd_sections(infos: pd.DataFrame, rows: pd.DataFrame, copies: pd.DataFrame) -> List[Section]:
    """infos: one row per result (tables.point_info); rows: tables.case_rows; copies: tables.copy_rows."""
    if rows.empty:
        return []
    sections: List[Section] = []
    for sweep in sorted(infos["sweep"].unique(), key=natural_key):
        sections.append(Section(f"{sweep} · cuda_vecadd", markdown=NOTE))
        for info in infos[infos["sweep"] == sweep].sort_values(["point", "repeat", "result"]).to_dict("records"):
            mine = rows[rows["result"] == info["result"]]
            if not mine.empty:
                sections += point_sections(info, mine, copies[copies["result"] == info["result"]]
                                           if not copies.empty else copies)
    sections[0].figures += [Figure("cuda_vecadd_explicit.png", lambda path: time_plot(rows, ["explicit"], path)),
                            Figure("cuda_vecadd_managed.png",
                                   lambda path: time_plot(rows, ["managed", "prefetch"], path))]
    return sections
