"""Whether the process that runs a point is alive, where this host can tell (runner_alive): the pid in a point's
state.json, or the `hpml launch` whose children run a local sweep's points. Asked by `hpml status` for every
backend (a backend names such processes through Backend.runners); moved out of the SLURM states module, which
is the scheduler's half.
"""

from __future__ import annotations

import datetime as _dt
import os
import socket
from pathlib import Path
from typing import Mapping, Optional, Sequence

# A process that started this much later than its state.json says it did is another one that got the pid.
PID_REUSE_SLACK_S = 2.0


def process_alive(pid: object) -> bool:
    """Whether a process with this id exists. Only ids > 0: os.kill(0 or -n) would ask a process group."""
    if type(pid) is not int or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except PermissionError:  # alive, owned by another user
        return True
    return not is_zombie(pid)


def is_zombie(pid: int) -> bool:
    """A process that has exited but not been reaped yet (state Z in /proc/<pid>/stat): it runs nothing, so
    it is dead for status (a SIGKILLed point job stays one until init reaps it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2:][:1] == "Z"  # the state follows the command name in parentheses


def process_started_at(pid: int) -> Optional[float]:
    """When a process started (seconds since the epoch), from Linux's /proc; None where it cannot say."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])  # field 22, after the command's ")"
        with open("/proc/stat") as f:
            boot = next(int(line.split()[1]) for line in f if line.startswith("btime "))
    except (OSError, ValueError, IndexError, StopIteration):
        return None
    return boot + ticks / os.sysconf("SC_CLK_TCK")


def _started_after(pid: int, started_at: object) -> bool:
    """True when the process `pid` began clearly after `started_at` (ISO-8601), so it is not the runner."""
    try:
        recorded = _dt.datetime.fromisoformat(str(started_at)).timestamp()
    except ValueError:
        return False
    began = process_started_at(pid)
    return began is not None and began > recorded + PID_REUSE_SLACK_S


def runner_alive(records: Sequence[Mapping]) -> Optional[bool]:
    """Whether the process that runs a point lives: the first record of this host with a pid decides (the
    point's state.json, then, on a local sweep, the launcher's, whose children run the points). None when
    none can tell, e.g. the point ran on another host."""
    for record in records:
        host, pid = record.get("host"), record.get("pid")
        if host == socket.gethostname() and type(pid) is int:
            return process_alive(pid) and not _started_after(pid, record.get("started_at"))
    return None
