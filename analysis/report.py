"""`hpml report DIR [--out OUTDIR]`: scaling tables from every result.json under DIR.

Prints the Markdown report (tables, then results left out and problems) and writes OUTDIR/report.md and
OUTDIR/scaling.csv (OUTDIR defaults to DIR/report/). Unusable or missing results are listed, not fatal:
the exit status is 0 as long as DIR holds at least one result.json; 2, with one line, when DIR does not
exist or holds none.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import pandas as pd

from analysis.horovod_report import StudyReport as HorovodStudy
from analysis.horovod_report import study_report, tabulates, write_study as write_horovod_study
from analysis.render import report_markdown, write_csv
from analysis.results import LoadedResults, load_results
from analysis.scaling import is_tabulated, runs_frame, scaling_table
from analysis.train_report import StudyReport, build_study, study_markdown, write_study

REPORT_MD = "report.md"
SCALING_CSV = "scaling.csv"


class ReportError(Exception):
    """Nothing to report on; main turns it into one `hpml: error:` line."""


@dataclass
class Report:
    loaded: LoadedResults
    runs: pd.DataFrame  # one row per tabulated result (analysis.scaling.RUN_COLUMNS)
    table: pd.DataFrame  # the scaling table (analysis.scaling.SCALING_COLUMNS)
    untabulated: List[Dict[str, Any]]  # results read but in no table (not ok, or no scaling table)
    markdown: str
    study: Optional[StudyReport] = None  # the batch size x devices study's tables, when results have them
    horovod: Optional[HorovodStudy] = None  # the synthetic-benchmark and all-reduce tables (issue 5)


def build_report(root: str | Path) -> Report:
    """Reads and analyses; writes nothing. Raises ReportError when there is nothing to report on."""
    root = Path(root)
    if not root.is_dir():
        raise ReportError(f"{root} is not a directory; give a sweep directory (or a folder of sweeps)")
    loaded = load_results(root)
    if loaded.files_found == 0:
        raise ReportError(f"no result.json under {root}; if it is a sweep still running, see "
                          f"`hpml status {root}`")
    runs = runs_frame(loaded.rows)
    table = scaling_table(runs)
    untabulated = [row for row in loaded.rows if not is_tabulated(row)]
    markdown = report_markdown(str(root), table, untabulated, loaded.problems)
    return with_batch_gpu_study(with_horovod_study(Report(loaded=loaded, runs=runs, table=table,
                                                          untabulated=untabulated, markdown=markdown), str(root)))


def with_horovod_study(report: Report, source: str) -> Report:
    """Adds the Horovod-style study (analysis.horovod_report: synthetic-benchmark throughput, scaling, cost
    and all-reduce comparison tables; the all-reduce bandwidth table; their CSVs and PNGs) right after the
    scaling tables; its results leave the "not in a table" list."""
    report.horovod = study_report(report.loaded.rows)
    report.untabulated = [row for row in report.untabulated if not tabulates(row)]
    report.markdown = report_markdown(source, report.table, report.untabulated, report.loaded.problems,
                                      sections=[report.horovod.markdown])
    return report


def with_batch_gpu_study(report: Report) -> Report:
    """Adds the batch size x devices study (analysis.train_report: time, phase, comm, bandwidth,
    large-batch tables as Markdown/CSV/LaTeX, speedup.png) when train results carry its measurements."""
    report.study = build_study(report.loaded.rows)
    if not report.study.empty:
        report.markdown += "\n" + study_markdown(report.study)
    return report


def write_report(report: Report, out_dir: Path) -> List[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    md_path = out_dir / REPORT_MD
    md_path.write_text(report.markdown)
    study_files = write_study(report.study, out_dir) if report.study else []
    horovod_files = write_horovod_study(report.horovod, out_dir) if report.horovod else []
    return [md_path, write_csv(report.table, out_dir / SCALING_CSV)] + study_files + horovod_files


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="hpml report", description="Scaling tables (Markdown, CSV) from every result.json under DIR.")
    parser.add_argument("dir", type=Path, help="a sweep directory, or a folder holding sweeps")
    parser.add_argument("--out", type=Path, default=None,
                        help=f"where to write {REPORT_MD} and {SCALING_CSV} (default: DIR/report/)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        report = build_report(args.dir)
    except ReportError as error:
        print(f"hpml: error: {error}", file=sys.stderr)
        return 2
    print(report.markdown, end="")
    written = write_report(report, args.out or args.dir / "report")
    print(f"\nhpml: wrote {', '.join(str(path) for path in written)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
