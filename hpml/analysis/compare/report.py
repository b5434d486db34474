"""`hpml compare BASELINE CANDIDATE [CANDIDATE ...]`: which side is faster, by how much, and how sure.

Each side is a sweep or a folder of sweeps. Results are matched by the work they measured (analysis.compare.match),
each study's headline numbers (analysis.compare.metrics) are compared configuration by configuration with a 95 %
interval (analysis.stats). The unit of that interval is the launch (a sweep folder) where both sides hold at least
two launches of the configuration: each launch's geometric mean is one value, since repeats of one launch share what
a launch shares (the machine's state, its neighbours, the build) and launches of one preset differ by more than
their repeats say (docs/results/compare/). With one launch on a side the repeats are the unit, and the interval adds
the spread of launches (--launch-sd, as measured: a known variance component), which no repeat can sample. and the tables (Markdown, CSV, LaTeX) and a forest plot (the ratio and its
interval per configuration and metric) are written to --out (default: <candidate>_vs_<baseline>/ beside the
candidate). Results that match nothing on the other side are listed, not dropped; a result a metric cannot use is
left out of that metric everywhere (cell, ratio, CSV) and named (compare.usable). --fail-on-regression PCT exits 1
when any headline number is worse by more than PCT % with confidence, and says in one line when it could not decide
(no interval), exiting as --undecided says (gate); the exit status is 0 otherwise, whatever the verdicts (2 for bad
input, one line, before anything is read when --out cannot be written).
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from hpml.analysis.compare.match import known_keys, match_items, match_key, side_labels
from hpml.analysis.compare.metrics import HEADLINES, Metric, applies
from hpml.analysis.compare.usable import SideValues, side_values
from hpml.analysis.registry import RESULT_CHECKS
from hpml.analysis.results import MALFORMED, load_results
from hpml.analysis.stats import Ratio, compare_values, differing_labels, geometric_mean, olympic_mean, regressed
from hpml.contract.cli_args import OneLineParser, folder_argument
from hpml.contract.folders import output_folder_error
from hpml.report_kit.latex import latex_table
from hpml.report_kit.sections import markdown_table

# The spread of a launch's mean around its configuration's, relative: launches of one preset on one machine differ
# by more than their repeats say (docs/results/compare/, the A/A launches). Measured there; 0 turns it off.
LAUNCH_SD_PCT = 3.0

HEADERS = ["configuration", "metric", "baseline (mean ± sd, n)", "candidate (mean ± sd, n)",
           "ratio cand/base [95 % CI]", "verdict", "repeats a side for ±{d:g} %"]


class CompareError(Exception):
    """Bad input: one line."""


@dataclass
class Row:
    candidate: str
    configuration: str
    workload: str
    metric: Metric
    base: List[Optional[float]]
    cand: List[Optional[float]]
    result: Ratio
    note: str = ""
    # time to accuracy with a run that did not converge: the olympic means (baseline, candidate) its ratio is of,
    # shown in the cells and the CSV in place of the converged runs' means
    olympic: Optional[Tuple[float, float]] = None


def load_side(path: str) -> Tuple[List[Dict[str, Any]], List[str]]:
    """(the side's ok results, a line for each kind of result left out: unreadable or damaged ones, and those that
    did not end ok), so that nothing a side holds is dropped without a line."""
    if not Path(path).exists():
        raise CompareError(f"{path}: no such folder")
    loaded = load_results(path, RESULT_CHECKS)
    if loaded.files_found == 0:
        raise CompareError(f"{path}: no result.json under it: not a sweep or a folder of sweeps")
    docs = [doc for doc in loaded.rows if doc["status"] == "ok"]
    if not docs:
        unread = f", {len(loaded.problems)} not read (first: {loaded.problems[0]})" if loaded.problems else ""
        raise CompareError(f"{path}: no ok result among its {loaded.files_found}{unread}; hpml status says why")
    left_out = []
    if loaded.problems:
        shown = "; ".join(str(problem) for problem in loaded.problems[:3])
        more = f"; and {len(loaded.problems) - 3} more" if len(loaded.problems) > 3 else ""
        left_out.append(f"{path}: {len(loaded.problems)} result(s) not read: {shown}{more}")
    ended = Counter(doc["status"] for doc in loaded.rows if doc["status"] != "ok")
    if ended:
        left_out.append(f"{path}: {sum(ended.values())} result(s) not ok (" +
                        ", ".join(f"{status} {n}" for status, n in sorted(ended.items())) + "): `hpml status` says why")
    return docs, left_out


def grouped(docs: Sequence[Mapping[str, Any]], ignore: Sequence[str], by: Sequence[str]) -> Dict[Tuple[str, str], dict]:
    groups: Dict[Tuple[str, str], dict] = {}
    for doc in docs:
        items = match_items(doc["config"], ignore, by)
        entry = groups.setdefault((doc["identity"]["workload"], match_key(items)), {"items": items, "docs": []})
        entry["docs"].append(doc)
    return groups


def _positive(values: Sequence[Optional[float]]) -> List[float]:
    return [v for v in values if v is not None and math.isfinite(v) and v > 0]


def launch_of(doc: Mapping[str, Any]) -> str:
    """The launch a result belongs to: its sweep folder (<sweep>/points/<i>/result.json), or its sweep's name."""
    path = doc.get("path")
    return str(Path(path).parents[2]) if path else str(doc["identity"]["sweep"])


def launch_values(side: SideValues) -> List[float]:
    """One value per launch: the geometric mean of its results' values."""
    by_launch: Dict[str, List[float]] = {}
    for doc, value in zip(side.docs, side.values):
        by_launch.setdefault(launch_of(doc), []).append(value)
    return [geometric_mean(kept) for kept in by_launch.values()]


def compare_metric(metric: Metric, base_side: SideValues, cand_side: SideValues, difference: float,
                   launch_sd: float = 0.0) -> Tuple[Ratio, list, list, str, Optional[Tuple[float, float]]]:
    """(the comparison, the baseline's and candidate's values, a note, the olympic means where the ratio is theirs).
    launch_sd: compare_values' launch component, added where a side holds one launch."""
    base, cand = base_side.values, cand_side.values
    if not metric.time_to_accuracy:
        b_launches, c_launches = launch_values(base_side), launch_values(cand_side)
        if len(b_launches) >= 2 and len(c_launches) >= 2:
            result = compare_values(b_launches, c_launches, metric.better, difference)
            return result, base, cand, f"unit: launch ({len(b_launches)} vs {len(c_launches)} launches)", None
        result = compare_values(base, cand, metric.better, difference, launch_sd)
        return result, base, cand, f"unit: repeat, launch sd {launch_sd * 100:g} % added" if launch_sd else "", None
    # MLPerf: a run that did not converge counts as the slowest; olympic means; the converged fraction beside it
    b_conv, c_conv = _positive(base), _positive(cand)
    missed = (len(base) - len(b_conv), len(cand) - len(c_conv))
    note = f"converged {len(b_conv)}/{len(base)} vs {len(c_conv)}/{len(cand)}"
    if missed == (0, 0):
        result = compare_values(b_conv, c_conv, metric.better, difference, launch_sd)
    else:
        result = Ratio(None, None, None, "no interval (a run did not converge)", None)
    b_ol, c_ol = olympic_mean(b_conv, missed[0]), olympic_mean(c_conv, missed[1])
    olympic = None
    if b_ol and c_ol:  # MLPerf's score; the ratio column stays the geometric means' when it has an interval
        note += f"; olympic means {b_ol:.4g} {metric.unit} vs {c_ol:.4g} {metric.unit} (ratio {c_ol / b_ol:.4f})"
        if result.ratio is None:
            result.ratio, olympic = c_ol / b_ol, (b_ol, c_ol)
    fraction = converged_fraction_verdict(len(b_conv), len(base), len(c_conv), len(cand))
    return result, base, cand, note + (f"; {fraction}" if fraction else ""), olympic


def converged_fraction_verdict(b_ok: int, b_n: int, c_ok: int, c_n: int) -> str:
    """Fisher's exact test of the two converged fractions, said when it resolves a difference at 5 %."""
    if (b_ok, b_n) == (c_ok, c_n) or min(b_n, c_n) == 0:
        return ""
    from scipy.stats import fisher_exact

    p = fisher_exact([[c_ok, c_n - c_ok], [b_ok, b_n - b_ok]]).pvalue
    if p >= 0.05:
        return f"converged fractions differ, not resolved (Fisher p = {p:.2f})"
    return f"converged fraction {'better' if c_ok / c_n > b_ok / b_n else 'worse'} (Fisher p = {p:.3f})"


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


def build_rows(base_docs, candidates: Mapping[str, List[Mapping[str, Any]]], ignore, by,
               difference: float, launch_sd: float = 0.0) -> Tuple[List[Row], List[str]]:
    """(the comparisons, the lines for what matched nothing)."""
    base_groups = grouped(base_docs, ignore, by)
    rows: List[Row] = []
    unmatched: List[str] = []
    left_out: List[str] = []
    for name, docs in candidates.items():
        cand_groups = grouped(docs, ignore, by)
        common = sorted(set(base_groups) & set(cand_groups))
        if not common:
            raise CompareError(nothing_in_common(name, base_groups, cand_groups))
        labels = differing_labels({key: base_groups[key]["items"] for key in common}, strip="")
        for key in common:
            workload = key[0]
            metrics = HEADLINES.get(workload)
            if metrics is None:
                unmatched.append(f"{name}: workload {workload} has no headline numbers to compare "
                                 f"({len(base_groups[key]['docs'])} + {len(cand_groups[key]['docs'])} results)")
                continue
            b, c = base_groups[key]["docs"], cand_groups[key]["docs"]
            for metric in metrics:
                if not any(applies_or_unreadable(metric, doc) for doc in b + c):
                    continue
                base_side, cand_side = side_values(metric, measuring(metric, b)), side_values(metric, measuring(metric, c))
                configuration = labels[key] or workload
                left_out += [f"{side}: {where}: {metric.name} of {configuration} left out: {why}"
                             for side, values in (("baseline", base_side), (name, cand_side))
                             for where, why in values.left_out]
                result, base, cand, note, olympic = compare_metric(metric, base_side, cand_side, difference, launch_sd)
                rows.append(Row(name, configuration, workload, metric, base, cand, result, note, olympic))
        for key in sorted(set(base_groups) - set(cand_groups)):
            unmatched.append(f"only in the baseline: {len(base_groups[key]['docs'])} {key[0]} result(s) of {key[1]}")
        for key in sorted(set(cand_groups) - set(base_groups)):
            unmatched.append(f"only in {name}: {len(cand_groups[key]['docs'])} {key[0]} result(s) of {key[1]}")
    return rows, unmatched + left_out


def measuring(metric: Metric, docs: Sequence[Mapping[str, Any]]) -> List[Mapping[str, Any]]:
    """The results that can have the metric at all: one without NVML telemetry or a price has no energy or cost to
    target, which is no miss (a time-to-accuracy metric's `measured`)."""
    return [doc for doc in docs if metric.measured is None or metric.measured(doc)]


def applies_or_unreadable(metric: Metric, doc: Mapping[str, Any]) -> bool:
    """Whether a result measures this metric, or should and cannot be read (then it is named as left out)."""
    try:
        return applies(metric, doc)
    except MALFORMED:
        return True


def nothing_in_common(name: str, base_groups: Mapping, cand_groups: Mapping) -> str:
    base_items = next(iter(base_groups.values()))["items"]
    cand_items = next(iter(cand_groups.values()))["items"]
    differ = sorted(k for k in set(base_items) | set(cand_items) if base_items.get(k) != cand_items.get(k))
    shown = ", ".join(f"{k} ({base_items.get(k)} vs {cand_items.get(k)})" for k in differ[:3])
    more = f" and {len(differ) - 3} more" if len(differ) > 3 else ""
    return (f"the baseline and {name} have no configuration in common: they differ in {shown}{more}; "
            "--ignore KEY leaves a key out of the match")


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
    kept = _positive(values)
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


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = OneLineParser(prog="hpml compare", description=__doc__.splitlines()[0])
    folder = lambda text: str(folder_argument(text))  # noqa: E731 - an empty path is no sweep (nor the cwd)
    parser.add_argument("baseline", type=folder)
    parser.add_argument("candidates", nargs="+", metavar="candidate", type=folder)
    parser.add_argument("--ignore", action="append", default=[], metavar="KEY", help="leave KEY out of the match")
    parser.add_argument("--by", action="append", default=[], metavar="KEY", help="match by KEY too")
    parser.add_argument("--out", default=None, type=folder, help="folder for the tables and the plot")
    parser.add_argument("--fail-on-regression", type=float, default=None, metavar="PCT",
                        help="exit 1 when a headline number is worse by more than PCT %% with 95 %% confidence")
    parser.add_argument("--undecided", choices=UNDECIDED, default=None,
                        help="what the gate does when a headline number has no interval to decide by (one result a "
                             "side, a run that did not converge): fail, exit 1 (default), or pass")
    parser.add_argument("--difference", type=float, default=2.0, metavar="PCT",
                        help="the difference the repeats-needed column resolves (default 2 %%)")
    parser.add_argument("--launch-sd", type=float, default=LAUNCH_SD_PCT, metavar="PCT",
                        help="the spread of a launch's mean (relative sd) added where a side holds one launch "
                             f"(default {LAUNCH_SD_PCT:g} %%, measured; 0: none)")
    args = parser.parse_args(argv)
    bounds = (("--difference", args.difference, 0 < args.difference < 100, "a percentage above 0 and below 100"),
              ("--fail-on-regression", args.fail_on_regression,
               args.fail_on_regression is None or 0 <= args.fail_on_regression < math.inf, "a percentage >= 0"),
              ("--launch-sd", args.launch_sd, 0 <= args.launch_sd < 100, "a percentage from 0 to below 100"))
    for option, value, ok, allowed in bounds:  # a NaN fails every comparison, so it is refused here too
        if not ok:
            parser.error(f"{option} {value:g} is not allowed: {allowed}")
    if args.undecided is not None and args.fail_on_regression is None:
        parser.error(f"--undecided {args.undecided} is not allowed without --fail-on-regression PCT (it says what "
                     "that gate does when it cannot decide)")
    args.undecided = args.undecided or UNDECIDED[0]
    return args


def out_folder(args: argparse.Namespace) -> Path:
    """--out, or <candidate>_vs_<baseline>/ beside the last candidate."""
    last = Path(args.candidates[-1]).resolve()
    return Path(args.out) if args.out else last.parent / f"{last.name}_vs_{Path(args.baseline).resolve().name}"


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    out = out_folder(args)
    sides_exist = all(Path(name).exists() for name in (args.baseline, *args.candidates))  # else said by run
    problem = output_folder_error("--out", out, "the comparison") if sides_exist else None
    if problem:  # before any result is read: it failed after all the work, in a traceback that exited 1
        print(f"hpml: error: {problem}", file=sys.stderr)
        return 2
    try:
        return run(args, out)
    except CompareError as error:
        print(f"hpml: error: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # the disk filled, the folder went away meanwhile: one line, not a traceback
        print(f"hpml: error: writing the comparison to {out} failed: {error.strerror or error}", file=sys.stderr)
        return 2


def run(args: argparse.Namespace, out: Path) -> int:
    names = [args.baseline, *args.candidates]
    loaded = {name: load_side(name) for name in names}
    sides = {name: docs for name, (docs, _) in loaded.items()}
    known = known_keys([doc for docs in sides.values() for doc in docs])
    for key in args.by:
        if key not in known:
            raise CompareError(f"--by {key}: no result has this key (e.g. {', '.join(sorted(known)[:3])})")
    for key in args.ignore:  # a mistyped key would silently ignore nothing
        if key not in known and not any(k.startswith(key + ".") for k in known):
            raise CompareError(f"--ignore {key}: no result has this key or group (e.g. "
                               f"{', '.join(sorted(known)[:3])})")
    difference = args.difference / 100
    rows, unmatched = build_rows(sides[args.baseline], {n: sides[n] for n in args.candidates}, args.ignore,
                                 args.by, difference, args.launch_sd / 100)
    unmatched = [line for _, left_out in loaded.values() for line in left_out] + unmatched
    labels, _ = side_labels(list(sides.values()))
    print(write_outputs(rows, unmatched, labels, names, out, difference))
    print(f"hpml: wrote {out}/compare.md, compare.csv, compare.tex, compare_forest.png")
    return 0 if args.fail_on_regression is None else gate(rows, args.fail_on_regression, args.undecided)


UNDECIDED = ("fail", "pass")  # the first is the default (docs/decisions.md: a gate that cannot decide fails)


def gate(rows: Sequence[Row], percent: float, undecided: str) -> int:
    """--fail-on-regression's exit status: 1 when a headline number is worse by more than `percent` with 95 %
    confidence; else, where some number has no interval to decide by, one stderr line that says so and why, and
    1 or 0 as --undecided says; 0 when every number was decided and none regressed."""
    worse = [row for row in rows if regressed(row.result, row.metric.better, percent)]
    if worse:
        print(f"hpml: {len(worse)} headline number(s) worse by more than {percent:g} % with "
              f"95 % confidence: " + "; ".join(f"{r.configuration} {r.metric.name} {ratio_text(r.result)}"
                                               for r in worse), file=sys.stderr)
    open_rows = [row for row in rows if row.result.low is None or row.result.high is None]
    if open_rows or not rows:
        print(f"hpml: the gate could not decide {undecided_text(open_rows, len(rows))}; --undecided {undecided}: "
              + ("exit 1" if undecided == "fail" else "passed anyway"), file=sys.stderr)
    if worse or ((open_rows or not rows) and undecided == "fail"):
        return 1
    return 0


def undecided_text(open_rows: Sequence[Row], total: int) -> str:
    """Which headline numbers the gate could not decide and why, in a few words."""
    if not total:
        return "any headline number: none was compared (see Not compared)"
    why = Counter(row.result.verdict for row in open_rows)
    reasons = "; ".join(f"{count} {UNDECIDED_WHY.get(verdict, verdict)}" for verdict, count in why.items())
    first = open_rows[0]
    return (f"{len(open_rows)} of {total} headline number(s): {reasons} (first: {first.configuration}, "
            f"{first.metric.name})")


UNDECIDED_WHY = {
    "no interval (n = 1)": "with one usable result on a side: no interval (n = 1; more repeats, sweep.repeat, give one)",
    "no values": "with no usable result on a side (see Not compared)",
    "no interval (a run did not converge)": "where a run did not converge: no interval (the olympic means only)",
}
