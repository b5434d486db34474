"""What a folder of results holds, taken in one walk: every result.json to read, every manifest.json, and every
point that a sweep's points/ folder has.

The report must account for every point a sweep knows (issue 25): a point listed in the manifest or present
as points/<n>/ is either read into a row or named as a problem, whatever sits at its result's path. So the
walk collects each entry *named* result.json, not only regular files: a directory, a FIFO, a socket, a device
or a broken link under that name is handed to the reader, which refuses it in one line that says what it is
(contract.jsonio), instead of being skipped as "not a file" and vanishing from the report.

os.scandir, one pass: its entries carry their type from the directory listing, so telling folders from files
costs no stat call per entry (10,000 points: tens of thousands of entries). Paths stay strings (sorted as
pathlib sorts them: by their parts): pathlib objects cost more than the walk itself over 10,000 results.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Set

from hpml.contract.sweep_layout import ATTEMPTS_DIR, MANIFEST_FILE, POINTS_DIR, RESULT_FILE


@dataclass
class Inventory:
    """results: the path of every entry named result.json (of any kind), sorted. manifests: every
    manifest.json's path, sorted. point_folders: sweep folder -> the point numbers its points/ folder has a
    folder for."""

    results: List[str] = field(default_factory=list)
    manifests: List[str] = field(default_factory=list)
    point_folders: Dict[str, Set[int]] = field(default_factory=dict)


def path_order(path: str) -> List[str]:
    """Sort key: the order of pathlib.Path ("a/b" before "a-2/b"), at the cost of a split."""
    return path.split(os.sep)


def take_inventory(root: Path) -> Inventory:
    """One walk of root. Links to folders are not followed (a loop, or a link to / , must not make the walk
    endless), a folder that is itself named result.json is reported, not entered: what it holds is not a
    sweep's layout, and a point's attempts/ (the runs `hpml resume` moved aside) is not entered either."""
    found = Inventory()
    pending = [str(root)]
    while pending:
        folder = pending.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:  # unreadable or vanished while walking: os.walk skips these too
            continue
        in_points = os.path.basename(folder) == POINTS_DIR
        numbered: Set[int] = set()
        for entry in entries:
            if entry.name == RESULT_FILE:
                found.results.append(entry.path)
            elif entry.name == MANIFEST_FILE:
                found.manifests.append(entry.path)
            elif entry.is_dir(follow_symlinks=False) and not _earlier_attempts(entry, folder):
                pending.append(entry.path)
            if in_points and entry.name.isdigit() and _is_dir(entry):
                numbered.add(int(entry.name))  # a linked point folder counts too (its result is read by path)
        if numbered:
            found.point_folders[os.path.dirname(folder)] = numbered
    found.results.sort(key=path_order)
    found.manifests.sort(key=path_order)
    return found


def _earlier_attempts(entry: os.DirEntry, folder: str) -> bool:
    """A point's attempts/ folder (points/<n>/attempts/): the earlier runs `hpml resume` moved aside. The point's
    own result is its measurement; an earlier ok result read too would count the point twice in every mean."""
    parent = os.path.dirname(folder)
    return entry.name == ATTEMPTS_DIR and os.path.basename(folder).isdigit() and os.path.basename(parent) == POINTS_DIR


def _is_dir(entry: os.DirEntry) -> bool:
    """Whether the entry is a folder, following a link; a link loop or an unreadable link is not one."""
    try:
        return entry.is_dir()
    except OSError:
        return False
