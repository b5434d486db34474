"""Compares the numbers of two report.md files: every number (as printed) of each, counted, and what one
has that the other has not, section by section (issue 10: a re-rendered report must show the same numbers).

    python tools/compare_report_numbers.py OLD_REPORT.md NEW_REPORT.md

Numbers are taken from table rows and text alike, keyed by the heading they sit under (headings' own
numbers included), so a number that moved to another section shows as removed there and added here.
Exit status 0 when the two reports hold the same numbers under the same headings, 1 otherwise.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path
from typing import Dict

NUMBER = re.compile(r"-?\d+(?:[.,]\d+)*(?:e-?\d+)?")


def numbers_by_heading(text: str) -> Dict[str, Counter]:
    sections: Dict[str, Counter] = {}
    heading = "(top)"
    for line in text.splitlines():
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        sections.setdefault(heading, Counter()).update(NUMBER.findall(line))
    return sections


def main(old_path: str, new_path: str) -> int:
    old, new = (numbers_by_heading(Path(p).read_text()) for p in (old_path, new_path))
    same = True
    for heading in sorted(set(old) | set(new)):
        removed = old.get(heading, Counter()) - new.get(heading, Counter())
        added = new.get(heading, Counter()) - old.get(heading, Counter())
        if removed or added:
            same = False
            print(f"## {heading}")
            if removed:
                print(f"  only in {old_path}: {' '.join(sorted(removed.elements()))}")
            if added:
                print(f"  only in {new_path}: {' '.join(sorted(added.elements()))}")
    total_old = sum(old.values(), Counter())
    total_new = sum(new.values(), Counter())
    print(f"numbers anywhere, only in the old report: {' '.join(sorted((total_old - total_new).elements())) or 'none'}")
    print(f"numbers anywhere, only in the new report: {' '.join(sorted((total_new - total_old).elements())) or 'none'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
