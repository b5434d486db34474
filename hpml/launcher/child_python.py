"""The Python command of every process hpml starts (the local runner's and a SLURM job's submitit child, torchrun,
the report job): `python -P`, so that the folder it starts in is not put first on the import path.

`python -m X` puts the current folder first on sys.path. A course or project repository often holds folders named
hpml/, submitit/ or hydra/; run from there, the child imported the user's package instead of the library (every
local point failed with the user's own import error). `-P` (Python 3.11+, hpml's floor) leaves the current folder
out and keeps PYTHONPATH, so a checkout on PYTHONPATH still imports as before. The workers inherit PYTHONSAFEPATH=1
from the point job (point_job.PointJob.environment), the same switch as an environment variable; so does submitit's
local controller (`python -m submitit.local._local`, whose command takes no python of ours): safe_path_environment.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
from typing import Iterator, List

SAFE_PATH_FLAG = "-P"


def python_argv(python: str = sys.executable) -> List[str]:
    """[python, -P]: the start of a command line that runs a module without the current folder on sys.path."""
    return [python, SAFE_PATH_FLAG]


def python_shell(python: str = sys.executable) -> str:
    """python_argv as one shell word list (submitit's `python` parameter is pasted into its command as text)."""
    return shlex.join(python_argv(python))


@contextlib.contextmanager
def safe_path_environment() -> Iterator[None]:
    """PYTHONSAFEPATH=1 in this process's environment while it starts a Python child whose command line hpml does not
    write (submitit's local controller): the child inherits it; the previous value comes back afterwards."""
    before = os.environ.get("PYTHONSAFEPATH")
    os.environ["PYTHONSAFEPATH"] = "1"
    try:
        yield
    finally:
        if before is None:
            del os.environ["PYTHONSAFEPATH"]
        else:
            os.environ["PYTHONSAFEPATH"] = before
