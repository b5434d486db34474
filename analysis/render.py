"""Scaling tables as Markdown and CSV. Formatting only: every number comes from analysis.scaling.

Markdown rounds for reading (epoch time in s to 3 decimals, step time in ms to 2, efficiency in %);
the CSV keeps full precision and the machine-readable column names of analysis.scaling.SCALING_COLUMNS.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, List, Mapping, Sequence

import pandas as pd

from analysis.results import Problem

SCALING_MODE_LINES = {
    "weak": "weak scaling (per-worker batch fixed)",
    "strong": "strong scaling (global batch fixed)",
}
EFFICIENCY_HEADERS = {
    "weak": "efficiency (step time t_base / t_N)",
    "strong": "efficiency (speedup / (N / N_base))",
}
STATISTICS_NOTE = (
    "Epoch time: mean ± sample std (ddof=1; 0 when n = 1) of the n timed epochs, pooled over the runs "
    "(repeats) of a row; epoch 1 of every run is warm-up and not counted; an epoch lasts as long as its "
    "slowest rank. Step time: rank 0's steps of the timed epochs. Speedup: baseline epoch time / this "
    "row's. Throughput: samples of the timed epochs / their total time."
)


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def shape_text(row: Mapping[str, Any]) -> str:
    return f"{row['nodes']} × {row['workers_per_node']}"


def configuration_section(table: pd.DataFrame) -> str:
    """One configuration's rows: the scaling-mode and baseline line, then the table."""
    base = table.iloc[0]  # analysis.scaling puts each configuration's baseline first
    scaling = base["scaling"]
    baseline = (f"baseline: N = {base['world_size']} ({base['nodes']} node(s) × {base['workers_per_node']} "
                f"worker(s) per node, epoch time {base['epoch_time_mean_s']:.3f} s)")
    headers = ["N (workers)", "nodes × workers/node", "per-worker batch", "global batch", "runs",
               "epoch time [s] (mean ± std, n)", "step time [ms] (mean / median, n)",
               "throughput [samples/s]", f"speedup (vs N = {base['world_size']})",
               EFFICIENCY_HEADERS[scaling]]
    rows = [[
        row["world_size"], shape_text(row), row["per_worker_batch"], row["global_batch"], row["runs"],
        f"{row['epoch_time_mean_s']:.3f} ± {row['epoch_time_std_s']:.3f} (n={row['n']})",
        f"{row['step_time_mean_s'] * 1e3:.2f} / {row['step_time_median_s'] * 1e3:.2f} (n={row['step_n']})",
        f"{row['samples_per_s']:.1f}", f"{row['speedup']:.2f}", f"{row['efficiency'] * 100:.1f} %",
    ] for _, row in table.iterrows()]
    return f"{SCALING_MODE_LINES[scaling]}; {baseline}\n\n{markdown_table(headers, rows)}\n"


def scaling_markdown(table: pd.DataFrame) -> str:
    """Every study (sweep and workload) with a heading, and a sub-heading per configuration when the study
    has several (naming only what differs between them)."""
    if table.empty:
        return "No ok results to tabulate.\n"
    sections = [STATISTICS_NOTE + "\n"]
    for (sweep, workload), study in table.groupby(["sweep", "workload"], sort=True):
        sections.append(f"## {sweep} · {workload}\n")
        for (label, _, _), config in study.groupby(["config_label", "config_key", "fixed_batch"], sort=True):
            if label:
                sections.append(f"### {label}\n")
            sections.append(configuration_section(config))
    return "\n".join(sections)


def untabulated_markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    """Results that were read but are in no table: not ok (with the workload's reason), or of a workload
    that has no scaling table."""
    lines = [f"## Results not in a table ({len(rows)})\n"]
    for row in rows:
        ident = row["identity"]
        why = (f"{row['status']}: {row['reason'] or 'no reason given'}" if row["status"] != "ok"
               else f"workload {ident['workload']!r} has no scaling table")
        lines.append(f"- `{row['path']}` (point {ident['point']}, repeat {ident['repeat']}): {why}")
    return "\n".join(lines) + "\n"


def problems_markdown(problems: Sequence[Problem]) -> str:
    lines = [f"## Problems ({len(problems)})\n",
             "Results that could not be read or are missing; the tables above do not include them.\n"]
    lines += [f"- `{problem.path}`: {problem.message}" for problem in problems]
    return "\n".join(lines) + "\n"


def report_markdown(source: str, table: pd.DataFrame, untabulated: Sequence[Mapping[str, Any]],
                    problems: Sequence[Problem], sections: Sequence[str] = ()) -> str:
    """The whole report: tables first (the scaling tables, then other studies' `sections`, each Markdown
    with its own headings), then what was left out and why."""
    sections = [section for section in sections if section]
    parts: List[str] = [f"# hpml scaling report: {source}\n"]
    if not table.empty or not sections:  # "no results" only when no section has any either
        parts.append(scaling_markdown(table))
    parts += sections
    if untabulated:
        parts.append(untabulated_markdown(untabulated))
    parts.append(problems_markdown(problems) if problems
                 else "## Problems (0)\n\nEvery result.json could be read; no point is missing one.\n")
    return "\n".join(parts)


def write_csv(table: pd.DataFrame, path: Path) -> Path:
    """The scaling table with full precision, one row per configuration and resource shape."""
    path.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(path, index=False)
    return path
