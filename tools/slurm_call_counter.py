"""Counts the calls a process makes to SLURM's commands, against the real scheduler: a folder of shims, put first
on PATH, each of which appends one line (time, command, arguments) to a log and then execs the real binary.
Nothing is mocked: every counted call reaches slurmctld (or slurmdbd, for sacct) as it would without the shim.

Used by tests/test_slurm_unattended.py and docs/results/slurm_polling/measure.py (issue 35, item 2).
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections import Counter
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

COMMANDS = ("squeue", "sacct", "sbatch", "scontrol", "scancel", "sinfo")


def counting_path(folder: Path, log: Path, commands: Sequence[str] = COMMANDS) -> str:
    """Writes one shim per command into `folder`; returns the PATH to give the counted process (the shims
    first, then the PATH of this process, where the real commands are)."""
    folder.mkdir(parents=True, exist_ok=True)
    for command in commands:
        real = shutil.which(command)
        if real is None:
            continue
        shim = folder / command
        shim.write_text("#!/bin/sh\n"
                        f'printf "%s {command} %s\\n" "$(date +%s.%N)" "$*" >> {shlex.quote(str(log))}\n'
                        f'exec {shlex.quote(real)} "$@"\n')
        shim.chmod(0o755)
    return f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"


def read_calls(log: Path) -> List[Tuple[float, str, str]]:
    """(time, command, arguments) of each call, in order."""
    if not log.exists():
        return []
    calls = []
    for line in log.read_text().splitlines():
        when, _, rest = line.partition(" ")
        command, _, args = rest.partition(" ")
        calls.append((float(when), command, args))
    return calls


def counts(calls: Sequence[Tuple[float, str, str]], since: float = 0.0) -> Dict[str, int]:
    return dict(Counter(command for when, command, _ in calls if when >= since))
