"""The one shape of a report's part, and the one writer of report.md, CSV, LaTeX and PNG files.

Each workload's analysis (analysis/<name>/) turns its results into a list of `Section`s; analysis.report puts
every workload's sections in one list and hands it to `write_sections`. A section is a heading, text, tables
and figures:

    Section("Epoch time and speedup: hw5", markdown="weak scaling; ...",
            tables=[Table("scaling", headers, display_rows, full_precision_frame)],
            figures=[Figure("speedup.png", draw)])

A table's display rows (rounded text) go to report.md and to <name>.tex (booktabs); its frame, full
precision and machine-readable column names, to <name>.csv. Tables of one name (one per configuration, say)
share their files: the CSV holds their frames one after the other, the .tex their tables. A file is written
only when it has rows, and a figure only when its draw function drew something.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Set

import pandas as pd

from hpml.report_kit.latex import latex_table

# Past this many configurations, a table kind that is one table per configuration becomes one table with the
# configuration in its first column (issue 25: 5,000 sweeps made 10,000 tables nobody reads; same CSV rows).
MAX_GROUP_TABLES = 20

# What reading a result's measurements raises when one is missing, of the wrong type or out of range (a damaged
# or hand-edited result.json): the result is left out with the error, the report goes on
MALFORMED = (KeyError, TypeError, ValueError, IndexError, AttributeError, ArithmeticError)


@dataclass
class Table:
    """name: the file stem of its CSV and .tex; headers and rows: what a reader sees (rounded); frame: the
    same rows with full precision (the CSV)."""

    name: str
    headers: List[str]
    rows: List[List[Any]]
    frame: pd.DataFrame


# Figures of one kind (one per configuration or per point: time-to-accuracy curves, telemetry timelines, ...) a
# report draws: the first ones in report order. Each costs ~0.1-0.15 s; a report over 5,000 configurations
# drew 10,000 (issue 25). 24 keeps every figure of the studies as their presets run them (time to accuracy:
# 10 seeds on each of two hardware types, 20 telemetry timelines). The tables keep every number; the sections
# of the others say they were not drawn.
MAX_FIGURES_PER_KIND = 24


@dataclass
class Figure:
    """file: the PNG's name in the report folder; draw(path) writes it and returns True, or returns False
    when there is nothing worth drawing (no line of two points or more). kind: what MAX_FIGURES_PER_KIND counts
    (default: the file name with each run of digits as #, so tta_curves_1.png and tta_curves_2.png are one)."""

    file: str
    draw: Callable[[Path], bool]
    kind: str = ""

    def __post_init__(self) -> None:
        self.kind = self.kind or re.sub(r"\d+", "#", self.file)


@dataclass
class Section:
    """A heading of `level` (2: ##), the text before the tables, the tables, the text after, the figures."""

    title: str
    markdown: str = ""
    tables: List[Table] = field(default_factory=list)
    after: str = ""
    figures: List[Figure] = field(default_factory=list)
    level: int = 2


def cap_figures(sections: Sequence[Section], limit: int = MAX_FIGURES_PER_KIND) -> None:
    """Keeps the first `limit` figures of each kind, in report order; a section whose figure is dropped says so
    after its text, naming the file (its text may still name it as where the figure would be)."""
    totals = Counter(figure.kind for section in sections for figure in section.figures)
    seen: Counter = Counter()
    for section in sections:
        dropped = []
        for figure in section.figures:
            seen[figure.kind] += 1
            if seen[figure.kind] > limit:
                dropped.append(figure)
        if dropped:
            section.figures = [figure for figure in section.figures if figure not in dropped]
            kinds = sorted({figure.kind for figure in dropped})
            note = (f"Not drawn: {', '.join(figure.file for figure in dropped)} (a report draws the first {limit} "
                    f"figures of a kind; {'; '.join(f'{kind}: {totals[kind]}' for kind in kinds)} in this one; "
                    "the tables hold every number).")
            section.after = f"{section.after}\n\n{note}" if section.after else note


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def section_markdown(section: Section) -> str:
    """Heading, text and tables as blocks separated by one blank line."""
    blocks = ["#" * section.level + " " + section.title]
    blocks += [section.markdown.rstrip("\n")] if section.markdown else []
    blocks += [markdown_table(table.headers, table.rows) for table in section.tables]
    blocks += [section.after.rstrip("\n")] if section.after else []
    return "\n\n".join(blocks) + "\n"


def report_markdown(title: str, sections: Sequence[Section]) -> str:
    """The whole report: a level-1 title, then the sections in order."""
    return "\n".join([f"# {title}\n"] + [section_markdown(section) for section in sections])


def _caption(section: Section) -> str:
    return section.title + (". " + " ".join(section.markdown.split()) if section.markdown else "")


def write_sections(sections: Sequence[Section], out_dir: Path) -> List[Path]:
    """<name>.csv and <name>.tex per table name (when it has rows), and each figure that draws; in the order
    of first appearance."""
    return write_tables(sections, out_dir) + draw_figures(sections, out_dir)


def _tables_by_name(sections: Sequence[Section]) -> Dict[str, List[tuple]]:
    by_name: Dict[str, List[tuple]] = {}
    for section in sections:
        for table in section.tables:
            by_name.setdefault(table.name, []).append((section, table))
    return by_name


def table_cells(sections: Sequence[Section]) -> Dict[str, int]:
    """Each table name's CSV cells (rows x columns over its frames): what writing its files costs, roughly."""
    return {name: sum(table.frame.size for _, table in entries) for name, entries in _tables_by_name(sections).items()}


def write_tables(sections: Sequence[Section], out_dir: Path, only: Optional[Set[str]] = None) -> List[Path]:
    """<name>.csv and <name>.tex per table name (when it has rows; only the names in `only` if given), in the
    order of first appearance."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written: List[Path] = []
    for name, entries in _tables_by_name(sections).items():
        if only is not None and name not in only:
            continue
        frames = [table.frame for _, table in entries if not table.frame.empty]
        if not frames:
            continue
        csv_path, tex_path = out_dir / f"{name}.csv", out_dir / f"{name}.tex"
        (frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)).to_csv(csv_path, index=False)
        tex_path.write_text("\n".join(
            latex_table(table.headers, table.rows, caption=_caption(section), label=f"tab:{name}-{i}")
            for i, (section, table) in enumerate(entries)))
        written += [csv_path, tex_path]
    return written


def draw_figures(sections: Sequence[Section], out_dir: Path) -> List[Path]:
    """Each figure that draws (its draw function returns True), in order. A figure that a damaged value breaks
    is one line on stderr and no file; the tables and the other figures are still written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    return [out_dir / figure.file for section in sections for figure in section.figures
            if _drawn(figure, out_dir / figure.file)]


def _drawn(figure: Figure, path: Path) -> bool:
    try:
        return figure.draw(path)
    except MALFORMED as error:
        import matplotlib.pyplot as plt

        plt.close("all")  # the figure the draw left open
        print(f"hpml: {figure.file} not drawn: a value it plots is malformed ({type(error).__name__}: "
              f"{' '.join(str(error).split())})", file=sys.stderr)
        return False
