"""One hpml process runs a sweep's points at a time: `hpml launch` and `hpml resume` hold <sweep>/.hpml.lock.

Two resumes of one sweep started together each read the same states and each reran the same unfinished
point, both in the point's folder at once (two points running on a machine meant for one, and the later run
overwriting the earlier one's finished result.json); a resume while the launch still ran reran the points the
launch had not started yet. The lock is an flock(2) on a file in the sweep folder: the kernel drops it when its
holder dies however it dies (SIGKILL included), so a stale lock never blocks a resume. The holder writes its
host and pid into the file, to name it in the refusal. The local jobs are started without the descriptor
(subprocess closes it), so a point job never keeps the lock after its launcher.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import socket
from pathlib import Path
from typing import Iterator

from hpml.launcher.errors import LaunchError

LOCK_FILE = ".hpml.lock"


def _holder(fd: int) -> str:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        text = os.read(fd, 200).decode(errors="replace").strip()
    except OSError:
        text = ""
    return f" ({text})" if text else ""


@contextlib.contextmanager
def sweep_lock(sweep_dir: Path, verb: str) -> Iterator[None]:
    """Holds the sweep's lock for the block; LaunchError (one line, nothing touched) when another hpml holds it."""
    path = Path(sweep_dir) / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
    except OSError as error:
        raise LaunchError(f"cannot {verb} {sweep_dir}: its lock file {path.name} cannot be opened "
                          f"({error.strerror or error})") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            if error.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise LaunchError(f"cannot {verb} {sweep_dir}: its lock file {path.name} cannot be locked "
                                  f"({error.strerror or error})") from None
            raise LaunchError(f"cannot {verb} {sweep_dir}: another hpml launch or resume is running its points"
                              f"{_holder(fd)}; wait for it to end (`hpml status {sweep_dir}`), or stop it "
                              "and resume") from None
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"hpml {verb} on {socket.gethostname()}, pid {os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock
