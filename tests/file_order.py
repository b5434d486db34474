"""Part 1 of tests/run.sh hands its test files to the pytest-xdist workers heaviest first (issue 41).

Under `--dist loadfile` a file's tests run on one worker, and xdist hands out the files in the order of the collection
(with `--no-loadscope-reorder`; by default it puts the files with the most tests first). hpml's heaviest files are
those that launch sweeps and they have few tests, so by the number of tests they came last, and the run ended with
one worker alone in a heavy file while the other core idled. Longest first, the run ends with light files on both.

tests/file_seconds.txt (under the rootdir) says what each file took: seconds, then the file's path, one a line,
heaviest first. A file it does not list (a new one) goes first, as if it were the heaviest: a light file first costs
nothing, a heavy one last costs its length. The order is the only use of the list: a stale list can make the order
worse, never a test wrong. `python -m tests.file_order REPORT.xml` writes it again from a run's `--junitxml` report.
"""

from __future__ import annotations

import math
import sys
import xml.etree.ElementTree as ElementTree
from collections import defaultdict
from pathlib import Path
from typing import Dict, List

import pytest

SECONDS = Path("tests") / "file_seconds.txt"  # under the rootdir


def recorded_seconds(text: str) -> Dict[str, float]:
    """{test file path as pytest names it (tests/test_x.py): seconds} from file_seconds.txt's text; a line that is
    not `SECONDS PATH` (a comment, #, aside) is a ValueError naming it."""
    seconds = {}
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip() and not line.startswith("#"):
            took, _, path = line.strip().partition(" ")
            try:
                value = float(took)
            except ValueError:
                value = math.nan
            if not path.strip() or not math.isfinite(value):
                raise ValueError(f"line {number} is not 'SECONDS PATH': {line!r}")
            seconds[path.strip()] = value
    return seconds


def heaviest_first(items: List[pytest.Item], seconds: Dict[str, float]) -> List[pytest.Item]:
    """items with their files in order of seconds (unlisted files first), each file's tests in their own order."""
    def weight(item: pytest.Item) -> float:
        return -seconds.get(item.nodeid.split("::", 1)[0], float("inf"))

    return sorted(items, key=weight)  # sorted is stable: a file's tests keep their order, as do equal files


@pytest.hookimpl(trylast=True)  # after the other hooks have kept or dropped items: only the order changes
def pytest_collection_modifyitems(config: pytest.Config, items: List[pytest.Item]) -> None:
    listed = config.rootpath / SECONDS
    try:
        seconds = recorded_seconds(listed.read_text()) if listed.is_file() else {}
    except (ValueError, OSError) as unusable:  # one line, as any bad input here; the tests themselves are fine
        raise pytest.UsageError(f"{listed}: {unusable} (tests/file_order.py; write it again with python -m "
                                "tests.file_order REPORT.xml)") from None
    items[:] = heaviest_first(items, seconds)


def seconds_per_file(report: str) -> Dict[str, float]:
    """{tests/test_x.py: seconds} from a pytest --junitxml report: each test's time (its setup, with a module
    fixture's, its call and its teardown), summed over the file's tests."""
    seconds: Dict[str, float] = defaultdict(float)
    for case in ElementTree.parse(report).iter("testcase"):  # ParseError (a SyntaxError) if it is no XML
        path = case.get("classname", "").split(".")  # tests.test_x or tests.test_x.TestClass
        module = next((i for i, part in enumerate(path) if part.startswith("test_")), None)
        if module is not None:
            seconds["/".join(path[:module + 1]) + ".py"] += float(case.get("time", 0))
    return dict(seconds)


def file_seconds_text(seconds: Dict[str, float], command: str) -> str:
    header = ("# seconds each test file took, heaviest first (tests/file_order.py): from the --junitxml report of a\n"
              "# run of tests/run.sh's part 1 (its first pytest command, with --junitxml=REPORT.xml added), by\n"
              f"#   {command}\n")
    return header + "".join(f"{took:.1f} {path}\n" for path, took in
                            sorted(seconds.items(), key=lambda kv: (-kv[1], kv[0])))


if __name__ == "__main__":  # python -m tests.file_order REPORT.xml [OUT (default tests/file_seconds.txt)]
    if len(sys.argv) not in (2, 3) or not Path(sys.argv[1]).is_file():
        sys.exit("usage: python -m tests.file_order REPORT.xml [OUT]: REPORT.xml a pytest --junitxml report, OUT "
                 f"the list to write (default {SECONDS}); got {sys.argv[1:]}")
    out = Path(sys.argv[2] if len(sys.argv) == 3 else SECONDS)
    try:
        measured = seconds_per_file(sys.argv[1])
    except (ElementTree.ParseError, ValueError) as unreadable:
        sys.exit(f"{sys.argv[1]}: not a pytest --junitxml report ({unreadable}); nothing written")
    if not measured:
        sys.exit(f"{sys.argv[1]}: no test of a tests/test_*.py file in it; nothing written")
    out.write_text(file_seconds_text(measured, " ".join(["python -m tests.file_order", *sys.argv[1:]])))
    print(f"wrote {out}")
