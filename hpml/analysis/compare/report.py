"""`hpml compare BASELINE CANDIDATE [CANDIDATE ...]`: which side is faster, by how much, and how sure.

Each side is a sweep or a folder of sweeps. Results are matched by the work they measured (analysis.compare.match),
each study's headline numbers (analysis.compare.metrics) are compared configuration by configuration with a 95 %
interval (analysis.stats). The unit of that interval is the launch (a sweep folder) where both sides hold at least
two launches of the configuration: each launch's geometric mean is one value, since repeats of one launch share what
a launch shares (the machine's state, its neighbours, the build) and launches of one preset differ by more than
their repeats say (docs/results/compare/). With one launch on a side the repeats are the unit, and the interval adds
the spread of launches (--launch-sd, as measured: a known variance component), which no repeat can sample. The
tables (Markdown, CSV, LaTeX) and a forest plot (the ratio and its interval per configuration and metric) are written
to --out (default: <candidate>_vs_<baseline>/ beside the candidate). Results that match nothing on the other side are
listed, not dropped; a result a metric cannot use is left out of that metric everywhere (cell, ratio, CSV) and named
(compare.usable). --fail-on-regression PCT exits 1 when any headline number is worse by more than PCT % with
confidence, and says in one line when it could not decide (no interval), exiting as --undecided says (gate); the
exit status is 0 otherwise, whatever the verdicts (2 for bad input, one line, before anything is read when --out
cannot be written).

This module is the command line and the run; the comparisons are analysis.compare.comparisons, what is written
analysis.compare.outputs, the exit status of --fail-on-regression analysis.compare.gate.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Optional, Sequence

from hpml.analysis.compare.comparisons import CompareError, build_rows, load_side
from hpml.analysis.compare.gate import UNDECIDED, gate
from hpml.analysis.compare.match import known_keys, side_labels
from hpml.analysis.compare.outputs import write_outputs
from hpml.contract.cli_args import OneLineParser, folder_argument
from hpml.contract.folders import output_folder_error

# The spread of a launch's mean around its configuration's, relative: launches of one preset on one machine differ
# by more than their repeats say (docs/results/compare/, the A/A launches). Measured there; 0 turns it off.
LAUNCH_SD_PCT = 3.0


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
