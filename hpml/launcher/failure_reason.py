"""Why a point failed, as one line: the root cause, not torchrun's banner nor a traceback.

The sources, most specific first:
  1. a worker killed by a signal, from torchrun's failure report ("rank 1 killed by signal 9 (SIGKILL)"):
     the other ranks' errors ("connection closed by peer") and the SIGTERM with which torchrun then stops
     them are only its consequences;
  2. the reason rank 0 wrote into result.json ("RuntimeError: ...", "out of memory: ...");
  3. torchrun's error file (TORCHELASTIC_ERROR_FILE, set per point by point_job.py): the first failed
     worker's exception, as the @record decorator of every workload's main wrote it, also when the worker
     failed before it could write a result (a CUDA call on a machine without CUDA, a bad config);
  4. a worker's exit code from the failure report, or torchrun's own (a signal that killed torchrun itself);
  5. the last line of torchrun's stderr that is not a banner.
The whole stderr stays in points/<n>/logs/; the reason only points at it.
"""

from __future__ import annotations

import os
import re
import signal
import stat
from pathlib import Path
from typing import List, Optional, Tuple

from hpml.contract.jsonio import STATE_LIMIT, load_json
from hpml.contract.result_format import reason_line

TAIL_BYTES = 256 * 1024  # torchrun's failure report is at the end of its stderr

# One entry of torchrun's failure report (torch/distributed/elastic/multiprocessing/errors/__init__.py):
#   rank      : 1 (local_rank: 1)
#   exitcode  : -9 (pid: 4242) SIGKILL
FAILURE_ENTRY = re.compile(r"^\s*rank\s*:\s*(\d+)\s*\(local_rank:[^)]*\)\s*\n\s*exitcode\s*:\s*(-?\d+)", re.M)


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return "unknown signal"


def killed_by(number: int, who: str) -> str:
    return f"{who} killed by signal {number} ({signal_name(number)})"


def read_tail(path: Path, limit: int = TAIL_BYTES) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - limit))
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def worker_failures(stderr: str) -> List[Tuple[int, int]]:
    """(rank, exit code) of each failed worker in torchrun's last failure report, its root cause (first
    observed failure) first; a negative code is a signal."""
    report = stderr[stderr.rfind("Failures:"):] if "Failures:" in stderr else stderr
    others, _, root = report.partition("Root Cause")
    entries = FAILURE_ENTRY.findall(root) + FAILURE_ENTRY.findall(others)
    return [(int(rank), int(code)) for rank, code in entries]


def error_file_message(path: Path) -> Optional[str]:
    """The exception that torchrun's error file records ({"message": {"message": "RuntimeError: ..."}})."""
    try:
        data = load_json(path, STATE_LIMIT)  # bounded: a damaged or huge file is no reason to hang
    except (OSError, ValueError, RecursionError):
        return None
    message = data.get("message") if isinstance(data, dict) else None
    if isinstance(message, dict):
        message = message.get("message")
    return reason_line(message) if isinstance(message, str) and message.strip() else None


def last_meaningful_line(stderr: str) -> Optional[str]:
    """The last stderr line that says something: not a banner of '=' or '-', not a traceback frame."""
    for line in reversed(stderr.splitlines()):
        text = line.strip()
        if not text or set(text) <= set("=-_*[]<> ") or text.startswith(("File \"", "^", "~")):
            continue
        return reason_line(text)
    return None


def failure_reason(returncode: int, result_reason: Optional[str], error_file: Path, stderr_file: Path) -> str:
    """The root cause of a failed point in one line (see the module docstring for the order)."""
    stderr = read_tail(stderr_file)
    failures = worker_failures(stderr)
    # SIGTERM is how torchrun stops the other workers once one failed: a consequence, unless nothing else is
    for rank, code in failures:
        if code < 0 and -code != signal.SIGTERM:
            return killed_by(-code, f"rank {rank}")
    if result_reason:
        return reason_line(result_reason)
    message = error_file_message(error_file)
    if message:
        return message
    if failures:
        rank, code = failures[0]
        return killed_by(-code, f"rank {rank}") if code < 0 else \
            f"rank {rank} exited with code {code}; see {stderr_file}"
    if returncode < 0:
        return killed_by(-returncode, "torchrun")
    return last_meaningful_line(stderr) or f"torchrun exited with code {returncode} and no message"


JOB_LOG_TAIL_BYTES = 64 * 1024
# What srun appends to a job's stderr once its task has failed: consequences, never the cause
SRUN_CONSEQUENCE = re.compile(r"^srun: (error: \S+: tasks? [\d,-]+: (Exited with exit code|Killed)|"
                              r"Terminating (StepId|job step)|Job step aborted)")


def job_log_tail(log: Path) -> Optional[str]:
    """The last 64 KiB of a job's own stderr, only from a regular file: a log replaced by a FIFO or a link to
    /dev/zero is skipped, never waited on. None when it cannot be read."""
    try:
        fd = os.open(log, os.O_RDONLY | os.O_NONBLOCK)
    except (OSError, ValueError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        os.lseek(fd, max(0, os.fstat(fd).st_size - JOB_LOG_TAIL_BYTES), os.SEEK_SET)
        return os.read(fd, JOB_LOG_TAIL_BYTES).decode(errors="replace")
    except OSError:
        return None
    finally:
        os.close(fd)


def job_log_reason(log: Path) -> Optional[str]:
    """Why a job died before its point could say so (an import error, a broken environment, a cluster.setup line
    that failed): the last meaningful line of the job's own stderr (the backend knows where it is: Backend.job_log)."""
    text = job_log_tail(log)
    if text is None:
        return None
    return last_meaningful_line("\n".join(line for line in text.splitlines() if not SRUN_CONSEQUENCE.match(line)))


# slurmstepd's words when it kills a job over its --mem. Where cgroups enforce memory, SLURM says OUT_OF_MEMORY
# itself (most clusters); where the accounting poll does (JobAcctGatherParams=OverMemoryKill), the job ends FAILED
# or CANCELLED and only these lines say why; an older cgroup plugin logs the last one with a FAILED job.
MEMORY_KILL = re.compile(r"^slurmstepd[^:]*: error: (Exceeded (job|step) memory limit|.*exceeded memory limit "
                         r"\(\d+ > \d+\), being killed|Detected \d+ oom[-_]kill event)", re.M)


def memory_limit_kill(log: Path) -> Optional[str]:
    """slurmstepd's line saying it killed the job for its memory, from the job's stderr; None if there is none."""
    found = MEMORY_KILL.search(job_log_tail(log) or "")
    return found.group(0) if found else None


def died_before_start(sweep_dir: Path, log: Path) -> str:
    """The reason of a point whose job ended before the point wrote its state."""
    line = job_log_reason(log)
    where = os.path.relpath(log, sweep_dir)
    return f"the job died before its point started: {line} (log: {where})" if line else \
        f"the job died before its point started and its log ({where}) says nothing"
