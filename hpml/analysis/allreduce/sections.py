"""The allreduce workload's report sections: per result, busbw by message size; per sweep, hpml's timed
loop against a bare all_reduce loop. Formatting only: the numbers come from analysis.allreduce.tables.
Files: allreduce.csv, allreduce_vs_raw.csv (and .tex), allreduce_busbw.png.
"""

from __future__ import annotations

import math
from typing import List

import pandas as pd

from hpml.analysis.allreduce.plots import busbw_plot, size_text
from hpml.analysis.stats import natural_key
from hpml.report_kit.sections import Figure, Section, Table

ALLREDUCE_NOTE = (
    "nccl-tests' definitions: time = mean over the timed iterations of the slowest rank's iteration time "
    "(impl=raw: the slowest rank's loop / iterations), ± population std (ddof=0) over iterations; "
    "algbw = bytes / time; busbw = algbw × 2(n−1)/n (0 for one rank); utilization = busbw / the link's "
    "per-direction peak (conf/hardware/). GB = 1e9 bytes."
)


def point_section(rows: pd.DataFrame) -> Section:
    first = rows.iloc[0]
    peak = "no link peak (hardware=none)" if first["link"] == "none" else f"link {first['link']}"
    headers = ["size", "time [µs] (mean ± std, n)", "algbw [GB/s]", "busbw [GB/s]", "utilization", "sum"]
    table = [[size_text(row["bytes"]),
              f"{row['time_s'] * 1e6:.1f}" + ("" if math.isnan(row["time_std_s"]) else
                                              f" ± {row['time_std_s'] * 1e6:.1f}") + f" (n={row['iters']})",
              f"{row['algbw_GBps']:.3f}", f"{row['busbw_GBps']:.3f}",
              "–" if math.isnan(row["utilization"]) else f"{row['utilization']:.1%}",
              "ok" if row["correct"] else "WRONG"] for row in rows.to_dict("records")]
    return Section(f"point {first['point']}: N = {first['world_size']}, impl={first['impl']}, {first['dtype']}, "
                   f"{peak}", tables=[Table("allreduce", headers, table, rows)], level=3)


def impl_comparison(rows: pd.DataFrame) -> pd.DataFrame:
    """busbw of impl=hpml next to impl=raw (the bare loop) for each world size, dtype and size of a sweep."""
    keys = ["sweep", "world_size", "dtype", "bytes"]
    best = rows.groupby(keys + ["impl"], sort=True)["busbw_GBps"].median().unstack("impl")
    if not {"hpml", "raw"} <= set(best.columns):
        return pd.DataFrame()
    both = best.dropna(subset=["hpml", "raw"]).reset_index()
    return both.assign(ratio=both["hpml"] / both["raw"])


def impl_section(mine: pd.DataFrame) -> Section:
    table = [[row["world_size"], row["dtype"], size_text(row["bytes"]), f"{row['hpml']:.3f}", f"{row['raw']:.3f}",
              f"{row['ratio']:.1%}"] for row in mine.to_dict("records")]
    return Section("hpml's timed loop vs a bare all_reduce loop (impl=raw)",
                   markdown="busbw in GB/s (median over repeats); hpml / raw below 100 % is the cost of timing "
                            "every iteration.",
                   tables=[Table("allreduce_vs_raw", ["N", "dtype", "size", "busbw hpml", "busbw raw", "hpml / raw"],
                                 table, mine)], level=3)


def allreduce_sections(rows: pd.DataFrame) -> List[Section]:
    """rows: analysis.allreduce.tables.allreduce_table(...).rows; [] when it has none."""
    if rows.empty:
        return []
    sections: List[Section] = []
    side_by_side = impl_comparison(rows)
    for sweep in sorted(rows["sweep"].unique(), key=natural_key):
        sweep_rows = rows[rows["sweep"] == sweep]
        sections.append(Section(f"{sweep} · allreduce", markdown=ALLREDUCE_NOTE))
        # One section per result file: two launches under one sweep name both have a point 0.
        for _, point in sweep_rows.groupby(["point", "repeat", "path"], sort=True, dropna=False):
            sections.append(point_section(point))
        mine = side_by_side[side_by_side["sweep"] == sweep] if not side_by_side.empty else side_by_side
        if not mine.empty:
            sections.append(impl_section(mine))
    sections[0].figures.append(Figure("allreduce_busbw.png", lambda path: busbw_plot(rows, path)))
    return sections
