"""Whether a folder a command is about to write can be made, asked before anything is read or written.

A path under a file (`--out results.csv/report`), a file where the folder should be, a parent the user may not
write: each used to end in a traceback after the work was done (`hpml report --out /etc/passwd`, a sweep.root
under a file). `folder_problem` says why in words, or None when the folder exists and is writable or can be
created; it creates nothing. `empty_path_problem` refuses an empty path option (`--root ''`), which Path reads as
the current directory.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Optional


def folder_problem(path: Path) -> Optional[str]:
    """Why `path` cannot be (or become) a writable folder; None when it can. The nearest of the path and its
    parents that exists decides; a folder on the way this user may not look inside is a problem too."""
    path = Path(os.path.abspath(path))
    for candidate in (path, *path.parents):
        try:
            mode = os.stat(candidate).st_mode
        except (FileNotFoundError, NotADirectoryError):  # not there (yet), or under a file: look further up
            continue
        except PermissionError:  # a folder on the way may not be looked inside: the nearest one that can be seen
            blocked = next((p for p in candidate.parents if _visible(p)), Path("/"))
            return f"{path} cannot be reached: no permission to look inside {blocked}"
        except OSError as error:
            return f"{path} cannot be reached: {error.strerror}"
        if not stat.S_ISDIR(mode):
            return (f"{path} exists and is not a folder" if candidate == path
                    else f"{candidate} is a file, so {path} cannot be made under it")
        if not os.access(candidate, os.W_OK | os.X_OK):
            return (f"{path} is not writable" if candidate == path
                    else f"{path} cannot be made: {candidate} is not writable")
        return None
    return None


def empty_path_problem(option: str, text: Optional[str]) -> Optional[str]:
    """One line when an option's path is empty or blank (Path('') is the current directory: `hpml data digits
    --root ''` wrote into wherever it ran); None when it names a path or was not given."""
    if text is not None and not text.strip():
        return f"{option}={text!r} is not allowed: a folder path (give . for the current directory)"
    return None


def _visible(path: Path) -> bool:
    try:
        os.stat(path)
        return True
    except OSError:
        return False
