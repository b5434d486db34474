"""What `hpml compare` writes to its folder: compare.md, compare.csv and compare.tex (one table per candidate) and
the forest plot (compare_forest.png); each side's cell and CSV columns show the numbers its ratio used."""

from __future__ import annotations

import csv
import math
import statistics
from pathlib import Path
from typing import Any, List, Optional, Sequence, Tuple

from hpml.analysis.compare.comparisons import Row, positive_values
from hpml.analysis.stats import Ratio
from hpml.report_kit.latex import latex_table
from hpml.report_kit.sections import markdown_table

HEADERS = ["configuration", "metric", "baseline (mean ± sd, n)", "candidate (mean ± sd, n)",
           "ratio cand/base [95 % CI]", "verdict", "repeats a side for ±{d:g} %"]


def spread_text(values: Sequence[Optional[float]]) -> str:
    """mean ± sd (n) of the values a comparison used; None among them is a run that did not converge (time to
    accuracy), counted as the slowest by the ratio and named here."""
    kept = [v for v in values if v is not None]
    missing = len(values) - len(kept)
    tail = f", {missing} not converged" if missing else ""
    if not kept:
        return f"– (n=0{tail})"
    sd = f" ± {statistics.stdev(kept):.4g}" if len(kept) > 1 else ""
    return f"{statistics.fmean(kept):.4g}{sd} (n={len(kept)}{tail})"


def ratio_text(result: Ratio) -> str:
    if result.ratio is None:
        return "–"
    interval = f" [{result.low:.4f}, {result.high:.4f}]" if result.low is not None else " (no interval)"
    return f"{result.ratio:.4f}{interval}"


def side_cells(row: Row) -> Tuple[str, str]:
    """The baseline's and the candidate's cells: the numbers the ratio is of (mean ± sd, n of the values used; the
    olympic means, with every run counted, where a run that did not converge made the ratio theirs)."""
    if row.olympic is None:
        return spread_text(row.base), spread_text(row.cand)
    base, cand = (f"olympic mean {mean:.4g} (n={len(values)}, {sum(v is None for v in values)} not converged)"
                  for mean, values in zip(row.olympic, (row.base, row.cand)))
    return base, cand


def csv_side(row: Row, side: int) -> Tuple[int, Any]:
    """(n, mean) of a side as its cell shows them, for compare.csv."""
    values = (row.base, row.cand)[side]
    if row.olympic is not None:
        return len(values), row.olympic[side]
    kept = positive_values(values)
    return len(kept), statistics.fmean(kept) if kept else ""


def table_cells(rows: Sequence[Row]) -> List[List[str]]:
    return [[row.configuration, f"{row.metric.name} [{row.metric.unit}] ({row.metric.better} is better)",
             *side_cells(row), ratio_text(row.result),
             row.result.verdict + (f"; {row.note}" if row.note else ""),
             str(row.result.repeats_needed) if row.result.repeats_needed else "–"] for row in rows]


MAX_FOREST_ROWS = 40  # a plot of 20,000 rows took 2 minutes and showed nothing: the most telling ones, the CSV all
VERDICT_ORDER = {"worse": 0, "better": 1, "no difference resolved": 2}


def forest_rows(rows: Sequence[Row]) -> List[Row]:
    """The rows the forest plot shows: worse ones first, then better, then unresolved, each by the size of the
    difference; at most MAX_FOREST_ROWS."""
    shown = [row for row in rows if row.result.ratio is not None]
    shown.sort(key=lambda row: (VERDICT_ORDER.get(row.result.verdict, 3), -abs(math.log(row.result.ratio))))
    return shown[:MAX_FOREST_ROWS]


def forest_plot(rows: Sequence[Row], path: Path) -> bool:
    shown = forest_rows(rows)
    if not shown:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 0.45 * len(shown) + 1.5))
    for y, row in enumerate(reversed(shown)):
        r = row.result
        color = {"better": "tab:green", "worse": "tab:red"}.get(r.verdict, "tab:gray")
        if r.low is not None:
            ax.plot([r.low, r.high], [y, y], color=color, linewidth=2)
        ax.plot([r.ratio], [y], "o", color=color)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_yticks(range(len(shown)))
    ax.set_yticklabels([f"{row.configuration[:40]} · {row.metric.name}" for row in reversed(shown)], fontsize=8)
    ax.set_xlabel("candidate / baseline (95 % CI; log scale; green better, red worse)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def write_outputs(rows: Sequence[Row], unmatched: Sequence[str], labels: Sequence[str], names: Sequence[str],
                  out: Path, difference: float) -> str:
    out.mkdir(parents=True, exist_ok=True)
    headers = [h.format(d=difference * 100) for h in HEADERS]
    header = [f"# hpml compare: {names[0]} (baseline) vs {', '.join(names[1:])}", "",
              "Sides: " + "; ".join(f"{n}: {label or 'no provenance differs'}" for n, label in zip(names, labels)),
              "", "Ratio: candidate / baseline of the geometric means; 95 % interval from Welch's t on the logarithms "
              "of the launches' geometric means where both sides hold two or more launches of the configuration, "
              "else of the repeats, with the spread of launches (--launch-sd) added to the difference's variance since no "
              "repeat of one launch samples it (none with one repeat a side); verdict from the whole interval and "
              "the metric's direction. Time to accuracy: MLPerf's olympic means, a run that did not converge counted as the "
              "slowest, with the converged fractions (Fisher's exact test).", ""]
    parts = {}
    for name in names[1:]:
        mine = [row for row in rows if row.candidate == name]
        parts[name] = table_cells(mine)
        header += [f"## {name}", "", markdown_table(headers, parts[name]), ""]
    plotted = len(forest_rows(rows))
    header += [f"Forest plot (compare_forest.png): {plotted} of the {len(rows)} comparisons"
               + (", the worse, then the better, each largest difference first (compare.csv holds all)"
                  if plotted < len(rows) else ""), ""]
    if unmatched:
        header += ["## Not compared", ""] + [f"- {line}" for line in unmatched] + [""]
    text = "\n".join(header)
    (out / "compare.md").write_text(text)
    with open(out / "compare.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["candidate", "configuration", "workload", "metric", "unit", "better", "baseline_n",
                         "baseline_mean", "candidate_n", "candidate_mean", "ratio", "ci_low", "ci_high", "verdict",
                         "repeats_needed", "note"])
        for row in rows:  # the n and mean of each side as its cell shows them: those its ratio used
            writer.writerow([row.candidate, row.configuration, row.workload, row.metric.name, row.metric.unit,
                             row.metric.better, *csv_side(row, 0), *csv_side(row, 1), row.result.ratio,
                             row.result.low, row.result.high,
                             row.result.verdict, row.result.repeats_needed, row.note])
    (out / "compare.tex").write_text("\n".join(
        latex_table(headers, cells, f"hpml compare: {name} against {names[0]}", f"tab:compare-{index}")
        for index, (name, cells) in enumerate(parts.items())))
    forest_plot(rows, out / "compare_forest.png")
    return text
