"""Helpers for tests that run a sweep as a user's terminal would and then signal or inspect its processes
(tests/test_interrupts.py, tests/test_failure_reasons.py, tests/test_provenance.py), or start several at once
(tests/test_compare.py)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Callable, List

from hpml.launcher.torchrun import AGENT
from tests.conftest import HPML, run_hpml


def start_launch(root: Path, *overrides: str) -> subprocess.Popen:
    """`hpml launch` as a terminal would run it: its own process group, which the test then signals."""
    return subprocess.Popen(HPML + ["launch", *overrides], cwd=root, start_new_session=True, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def wait_for(condition: Callable[[], object], timeout: float, what: str) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def sweep_of(root: Path) -> Path | None:
    dirs = [d for d in (root / "sweeps").glob("*") if d.name != "latest"] if (root / "sweeps").exists() else []
    return dirs[0] if dirs else None


def state(sweep: Path, point: int) -> dict:
    try:
        return json.loads((sweep / "points" / str(point) / "state.json").read_text())
    except (OSError, ValueError):
        return {}


def processes_of(sweep: Path) -> List[int]:
    """Every process whose command line names the sweep folder (controller, point job, torchrun, workers)."""
    done = subprocess.run(["pgrep", "-f", str(sweep)], capture_output=True, text=True)
    return [int(pid) for pid in done.stdout.split() if int(pid) != os.getpid()]


def worker_pids(sweep: Path) -> List[int]:
    """The sweep's workers: torchrun forks them (hpml/workloads/fork_entry.py), so each is a process with torchrun's
    command line whose parent has it too (the agent's parent is the point job)."""
    def torchrun(pid: int) -> bool:
        try:
            return AGENT.encode() in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return False

    def parent(pid: int) -> int:
        try:  # /proc/<pid>/stat: "pid (comm) state ppid ...", comm may hold spaces
            return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            return 0

    return [pid for pid in processes_of(sweep) if torchrun(pid) and torchrun(parent(pid))]


def digest(path: Path) -> tuple:
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns


def status_rows(root: Path, sweep: Path) -> List[List[str]]:
    status = run_hpml(["status", str(sweep)], cwd=root)
    return [line.split()[:2] for line in status.stdout.splitlines() if line[:1].isdigit()]
