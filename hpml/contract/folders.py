"""Whether a folder or file a command is about to write can be written, asked before anything is read or written:
the one check of every verb that writes (launch, resume, report, compare, evaluate, data, model-stats).

A path under a file (`--out results.csv/report`), a file where the folder should be, a parent the user may not
write, a read-only mount: each used to end in a traceback after the work was done (`hpml report --out /etc/passwd`,
a sweep.root under a file, `hpml compare A B --out` under a file). `folder_problem` says why in words, or None when
the folder exists and is writable or can be created; `write_problem` says why an existing folder or file may not be
written: os.access (this user's permissions, a read-only mount) and then a real write that leaves nothing behind
(root, whom permissions do not stop, on a file system that refuses writes). `output_folder_error` is the one line a
verb prints for its output folder. `empty_path_problem` refuses an empty path option (`--root ''`), which Path reads
as the current directory.
"""

from __future__ import annotations

import os
import stat
import tempfile
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
        why = write_problem(candidate)
        if why is not None:
            return (f"{path} is not writable{why}" if candidate == path
                    else f"{path} cannot be made: {candidate} is not writable{why}")
        return None
    return None


def write_problem(path: Path) -> Optional[str]:
    """'' when this user may not write the existing folder or file `path` by its permissions, ': <reason>' when a
    real write fails (a read-only file system, a full disk, ...), None when it can be written. The probe of a folder
    is a temporary file, removed at once; a file is opened for appending, which changes nothing in it."""
    folder = os.path.isdir(path)
    if not os.access(path, os.W_OK | (os.X_OK if folder else 0)):
        return ""
    try:
        if folder:
            handle, probe = tempfile.mkstemp(dir=path, prefix=".hpml-write-check-")
            os.close(handle)
            os.unlink(probe)
        elif stat.S_ISREG(os.stat(path).st_mode):  # a FIFO or a terminal is not opened: that could block
            with open(path, "ab"):
                pass
    except OSError as error:
        return f": {error.strerror or error}"
    return None


def output_folder_error(option: str, path: Path, what: str) -> Optional[str]:
    """The one line (without `hpml: error: `) a verb prints when its output folder cannot be written, or None."""
    problem = folder_problem(path)
    return f"{option}: {problem}; give a folder to write {what} in" if problem else None


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
