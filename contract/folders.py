"""Whether a folder a command is about to write can be made, asked before anything is read or written.

A path under a file (`--out results.csv/report`), a file where the folder should be, a parent the user may not
write: each used to end in a traceback after the work was done (`hpml report --out /etc/passwd`, a sweep.root
under a file). `folder_problem` says why in words, or None when the folder exists and is writable or can be
created; it creates nothing.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional


def folder_problem(path: Path) -> Optional[str]:
    """Why `path` cannot be (or become) a writable folder; None when it can."""
    path = Path(os.path.abspath(path))
    if path.exists():
        if not path.is_dir():
            return f"{path} exists and is not a folder"
        return None if os.access(path, os.W_OK | os.X_OK) else f"{path} is not writable"
    for ancestor in path.parents:  # the nearest one that exists decides
        if ancestor.exists():
            if not ancestor.is_dir():
                return f"{ancestor} is a file, so {path} cannot be made under it"
            if not os.access(ancestor, os.W_OK | os.X_OK):
                return f"{path} cannot be made: {ancestor} is not writable"
            return None
    return None
