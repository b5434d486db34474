"""Only regular files are read: an image or a model.pt that is a FIFO would block the read forever, a device
(/dev/zero, /dev/urandom) never ends, a socket cannot be opened and a directory is no file.

open_regular opens without blocking (O_NONBLOCK: a FIFO's open waits for a writer otherwise) and checks the
opened file itself (fstat), so a path swapped for a FIFO between a look and the open is still refused.
"""

from __future__ import annotations

import os
import stat
from typing import BinaryIO

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


class NotReadable(Exception):
    """The path is no regular file, or cannot be opened; str() is the reason, one line."""


def one_line(error: BaseException) -> str:
    """The error's type and the first line of its message (200 characters at most; an OSError's without the
    path, which the caller names)."""
    message = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
    lines = message.strip().splitlines()
    return type(error).__name__ + (f": {lines[0][:200]}" if lines else "")


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _reason(error: OSError) -> str:
    return f"cannot be read ({one_line(error)})"


def regular_file_problem(path) -> str | None:
    """Why `path` (links followed) is not a regular file that can be opened, or None; opens nothing."""
    try:
        mode = os.stat(path).st_mode
    except OSError as error:  # a broken link, a loop of links, no permission to look into its folder
        return _reason(error)
    return None if stat.S_ISREG(mode) else f"not a regular file ({_kind(mode)})"


def open_regular(path) -> BinaryIO:
    """`path` opened for reading in binary, if it is a regular file; NotReadable otherwise."""
    problem = regular_file_problem(path)
    if problem:
        raise NotReadable(problem)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        raise NotReadable(_reason(error)) from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):  # swapped since the look above
        os.close(fd)
        raise NotReadable(f"not a regular file ({_kind(mode)})")
    os.set_blocking(fd, True)  # no effect on a regular file's reads; restored for what reads it
    return os.fdopen(fd, "rb")
