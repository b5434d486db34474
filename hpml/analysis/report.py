"""`hpml report DIR [--out OUTDIR]`: every registered workload's tables from every result.json under DIR.

Prints the Markdown report and writes OUTDIR/report.md with one CSV (full precision) and one LaTeX file per
table and the figures (OUTDIR defaults to DIR/report/). The report's order: the title, each workload's
sections (analysis.registry's order), the GPU telemetry of every result of any workload and status
(analysis.telemetry), the results left out of every table and why, then the problems (results that could
not be read, points with no result). Unusable or missing results are listed, not fatal: the exit status is 0
as long as DIR holds at least one result.json; 2, with one line, when DIR does not exist or holds none.

This module names no workload: analysis.registry says which report and which extra checks each has.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Sequence, Tuple

from hpml.analysis import telemetry
from hpml.analysis.registry import REPORTS, RESULT_CHECKS
from hpml.analysis.results import (
    MALFORMED,
    LoadedResults,
    Problem,
    WorkloadResults,
    load_results,
    where,
)
from hpml.analysis.write_aside import write_sections_aside
from hpml.contract.cli_args import OneLineParser, folder_argument
from hpml.contract.collector import cycle_collection_paused
from hpml.contract.folders import output_folder_error
from hpml.report_kit.sections import Section, cap_figures, report_markdown

REPORT_MD = "report.md"
KEPT: List["Report"] = []  # the last report main made (see main)

LeftOut = Tuple[Dict[str, Any], str]  # a result read but in no table, and why


class ReportError(Exception):
    """Nothing to report on; main turns it into one `hpml: error:` line."""


@dataclass
class Report:
    loaded: LoadedResults
    sections: List[Section]  # every workload's, in the registry's order
    left_out: List[LeftOut]  # results read but in no table: not ok, no registered report, unreadable
    markdown: str
    telemetry: List[Section] = field(default_factory=list)  # GPU telemetry of every result, after the workloads'


def left_out_section(left_out: Sequence[LeftOut]) -> Section:
    lines = []
    for doc, why in left_out:
        ident = doc["identity"]
        lines.append(f"- `{doc.get('path')}` (point {ident['point']}, repeat {ident['repeat']}): {why}")
    return Section(f"Results not in a table ({len(left_out)})", markdown="\n".join(lines))


def problems_section(problems: Sequence[Problem]) -> Section:
    if not problems:
        return Section("Problems (0)", markdown="Every result.json could be read; no point is missing one.")
    lines = [f"- `{problem.path}`: {problem.message}" for problem in problems]
    return Section(f"Problems ({len(problems)})",
                   markdown="Results that could not be read, are missing, or that no table shows; the tables "
                            "above do not include them.\n\n" + "\n".join(lines))


def guarded(part: Callable[[WorkloadResults], List[Section]], results: WorkloadResults,
            problems: List[Problem]) -> List[Section]:
    """part(results); where a damaged result breaks it (a value of the wrong type, out of range: MALFORMED), the
    results that break it on their own are left out with the error and the part is built again without them.
    A part that still fails (results that only break it together, e.g. values of two types to sort) is one
    Problem and no section: a report is never lost to one result.json."""
    try:
        return part(results)
    except MALFORMED as error:
        first = error
    what = f"{part.__module__.rsplit('.', 1)[-1]} section of the {results.workload} report"
    for doc in results.ok:
        try:
            part(WorkloadResults(results.workload, [doc]))
        except MALFORMED as error:
            results.leave_out(doc, f"breaks the {what} ({type(error).__name__}: {error})")
    left_out = {id(doc) for doc, _ in results.unreadable}
    results.docs = [doc for doc in results.docs if id(doc) not in left_out]
    try:
        return part(results)
    except MALFORMED as error:
        first = error
    problems.append(Problem(Path(results.docs[0]["path"]).parent if results.docs and results.docs[0].get("path")
                            else Path("."), f"the {what} was not built: its results together raise "
                                            f"{type(first).__name__}: {first}"))
    return []


def workload_sections(rows: Sequence[Dict[str, Any]]) -> Tuple[List[Section], List[LeftOut], List[Problem]]:
    """Each registered workload's sections of its results (its report's parts in order); the results no table
    shows, with why; and, as problems, ok results that their workload's report put in no table without saying
    why (a safety net: a point must never vanish from a report, issue 25)."""
    by_workload: Dict[str, List[Dict[str, Any]]] = {}
    for row in rows:
        by_workload.setdefault(row["identity"]["workload"], []).append(row)
    sections: List[Section] = []
    unshown: List[Problem] = []
    left_out: Dict[int, str] = {}
    for row in rows:
        if row["status"] != "ok":
            left_out[id(row)] = f"{row['status']}: {row['reason'] or 'no reason given'}"
        elif row["identity"]["workload"] not in REPORTS:
            left_out[id(row)] = f"no report section for workload {row['identity']['workload']!r}"
    for name, parts in REPORTS.items():
        if name not in by_workload:
            continue
        results = WorkloadResults(name, by_workload[name])
        for part in parts:
            sections += guarded(part, results, unshown)
        left_out.update((id(doc), why) for doc, why in results.unreadable)
        unshown += [Problem(Path(where(doc)), f"read and ok, but no table of the {name} report shows it")
                    for doc in results.ok if id(doc) not in results.tabulated and id(doc) not in left_out]
    return sections, [(row, left_out[id(row)]) for row in rows if id(row) in left_out], unshown


def build_report(root: str | Path) -> Report:
    """Reads and analyses; writes nothing. Raises ReportError when there is nothing to report on."""
    root = Path(root)
    if not root.is_dir():
        raise ReportError(f"{root} is not a directory; give a sweep directory (or a folder of sweeps)")
    try:
        with os.scandir(root):
            pass
    except OSError as error:  # else it would read as a folder with no result in it
        raise ReportError(f"{root} cannot be read ({error.strerror or error}); give a folder you may read")
    loaded = load_results(root, RESULT_CHECKS)
    if loaded.files_found == 0:
        raise ReportError(f"no result.json under {root}; if it is a sweep still running, see "
                          f"`hpml status {root}`")
    sections, left_out, unshown = workload_sections(loaded.rows)
    gpu_telemetry = telemetry.sections(loaded.rows)
    cap_figures(sections + gpu_telemetry)  # the first few of each kind, however many configurations and points
    closing = ([left_out_section(left_out)] if left_out else []) + [problems_section(loaded.problems + unshown)]
    body = (sections or [Section("No ok results to tabulate", level=2)]) + gpu_telemetry
    markdown = report_markdown(f"hpml scaling report: {root}", body + closing)
    return Report(loaded=loaded, sections=sections, left_out=left_out, markdown=markdown, telemetry=gpu_telemetry)


def write_report(report: Report, out_dir: Path) -> List[Path]:
    """report.md, the tables (CSV, LaTeX) and the figures; a child process writes a share of them meanwhile
    (analysis.write_aside: two cores, about the time of the longer share)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    md_path = out_dir / REPORT_MD
    md_path.write_text(report.markdown)
    return [md_path] + write_sections_aside(report.sections + report.telemetry, out_dir)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = OneLineParser(
        prog="hpml report", description="Scaling tables (Markdown, CSV, LaTeX) from every result.json under DIR.")
    parser.add_argument("dir", type=folder_argument, help="a sweep directory, or a folder holding sweeps")
    parser.add_argument("--out", type=folder_argument, default=None,
                        help=f"where to write {REPORT_MD}, the CSV and LaTeX tables and the figures "
                             "(default: DIR/report/)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    out_dir = args.out or args.dir / "report"
    problem = output_folder_error("--out", out_dir, "the report") if args.dir.is_dir() else None  # a missing DIR is said below
    if problem:
        print(f"hpml: error: {problem}", file=sys.stderr)
        return 2
    # `hpml report` is one short process: the collector stays paused while the tables are built and written
    # too, where each of its passes would walk every loaded document again (docs/results/report-speed.md).
    with cycle_collection_paused():
        try:
            report = build_report(args.dir)
        except ReportError as error:
            print(f"hpml: error: {error}", file=sys.stderr)
            return 2
        print(report.markdown, end="")
        try:
            written = write_report(report, out_dir)
        except OSError as error:  # the disk filled, the folder went away meanwhile: one line, not a traceback
            print(f"hpml: error: writing the report to {out_dir} failed: {error.strerror or error}", file=sys.stderr)
            return 2
        # Everything loaded is moved out of the collector's sight before it runs again: its first pass would
        # walk every document (1.4 s over 10,000 results) to find no cycle. Reference counting still frees them.
        gc.freeze()
    print(f"\nhpml: wrote {', '.join(str(path) for path in written)}", file=sys.stderr)
    # Freeing the report object by object takes ~0.2 s over 10,000 results; the `hpml` command exits without
    # freeing (launcher.cli.entry), so the last report is kept here rather than freed as main returns. A caller
    # in the same process (the tests) frees the previous one on its next call.
    KEPT[:] = [report]
    return 0


if __name__ == "__main__":
    sys.exit(main())
