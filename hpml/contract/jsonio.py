"""JSON files that a reader may open while a writer (or a killed writer) is at work, or that someone damaged.

Writes go to a temporary file in the same folder, are flushed and fsync'ed, then renamed over the target:
a reader sees the old file or the new one, never half of one, and a crash after the rename keeps the new one.

Reads are bounded, because a sweep folder is shared and anything can end up in it: only regular files are
read (a link to /dev/zero or a FIFO would never end or never answer), never more than a size limit, and a
document nested deeper than the parser can follow is refused. Each refusal is one line (DamagedFile).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any, Callable, Optional

from hpml.contract.units import MIB

# result.json holds per-epoch and per-step arrays (a long training run, or an all-reduce sweep of many sizes
# and iterations, writes tens of MB); 256 MiB is far above any result hpml writes, yet bounds the memory one
# damaged file can take.
RESULT_LIMIT = 256 * MIB
# state.json is a few hundred bytes; manifest.json about 300 bytes per point (100,000 points: 30 MB).
STATE_LIMIT = 1 * MIB
MANIFEST_LIMIT = 64 * MIB


class DamagedFile(ValueError):
    """A file that exists but cannot be used as JSON; the message is one line that says why."""


def write_bytes_atomic(path: str | Path, data: bytes) -> Path:
    """Writes a temporary file beside path, syncs it and renames it over path: a reader sees the old file or
    the whole new one, never half of one, even after a crash."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_json_atomic(path: str | Path, document: Any) -> Path:
    return write_bytes_atomic(path, (json.dumps(document, indent=1, default=str) + "\n").encode())


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def kind_of(mode: int) -> str:
    """What an st_mode that is not a regular file is, in words ("a directory", "a FIFO", ...)."""
    return next((name for test, name in _KINDS if test(mode)), "an unknown kind of file")


def _refuse_if_not_regular(path: str | Path, mode: int) -> None:
    if not stat.S_ISREG(mode):
        link = ", through a symbolic link" if os.path.islink(path) else ""
        raise DamagedFile(f"not a regular file ({kind_of(mode)}{link}); refused")


def _read_up_to(fd: int, limit: int, expected: int) -> bytes:
    """The file's bytes up to its end, but never more than limit + 1 (one more than allowed: a file that grew
    after fstat is still caught). os.read, not a file object: half the cost per file over 10,000 results;
    the first read asks for the size fstat gave, the next ones for 64 KiB more until the end."""
    chunks, total, want = [], 0, min(expected, limit) + 1
    while total <= limit:
        chunk = os.read(fd, min(want, limit + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
        want = 64 * 1024
    return b"".join(chunks)


def read_bytes_bounded(path: str | Path, limit: int) -> bytes:
    """The bytes of a regular file of at most `limit` bytes. Raises FileNotFoundError when nothing is there,
    DamagedFile otherwise: a link that leads nowhere is damage, not absence (someone put it there), and
    anything that is not a regular file is named (a directory, FIFO, socket, device). O_NONBLOCK: opening a
    FIFO must not wait for a writer that never comes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        if os.path.islink(path):
            raise DamagedFile(f"a broken symbolic link (to {os.readlink(path)!r}); refused") from None
        raise
    except OSError as error:  # a socket cannot be opened at all (ENXIO): say what it is, not the errno
        with contextlib.suppress(OSError):
            _refuse_if_not_regular(path, os.stat(path).st_mode)
        raise DamagedFile(f"unreadable: {error.strerror or error}") from None
    try:
        info = os.fstat(fd)
        _refuse_if_not_regular(path, info.st_mode)
        if info.st_size > limit:
            raise DamagedFile(f"{info.st_size} bytes, over the {limit // MIB} MiB limit for this file; refused")
        data = _read_up_to(fd, limit, info.st_size)
    except OSError as error:
        raise DamagedFile(f"unreadable: {error.strerror or error}") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise DamagedFile(f"over the {limit // MIB} MiB limit for this file; refused")
    return data


def decode_bounded(data: bytes, decode: Callable[[bytes], Any] = json.loads) -> Any:
    """decode(data), with every way it can fail as DamagedFile (decode: json.loads or a faster equivalent
    that raises json.JSONDecodeError or ValueError)."""
    try:
        return decode(data)
    except RecursionError:
        raise DamagedFile("JSON nested too deeply to read; refused") from None
    except UnicodeDecodeError as error:
        raise DamagedFile(f"not UTF-8 text: {error.reason}") from None
    except json.JSONDecodeError as error:
        text = error.doc.rstrip() if isinstance(error.doc, (str, bytes)) else data.rstrip()
        if not text:
            raise DamagedFile("empty file (truncated?)") from None
        where = f"{error.msg} (line {error.lineno}, column {error.colno})"
        # an error at the end of the text, or a string never closed: a document cut short (a killed writer
        # that did not write atomically, a full disk)
        cut = error.pos >= len(text) or error.msg.startswith("Unterminated string")
        raise DamagedFile(f"truncated JSON: {where}" if cut else f"corrupt JSON: {where}") from None
    except ValueError as error:
        raise DamagedFile(f"corrupt JSON: {error}") from None


def load_json(path: str | Path, limit: int, decode: Callable[[bytes], Any] = json.loads) -> Any:
    """The document of a JSON file. Raises FileNotFoundError when absent, DamagedFile when unusable."""
    return decode_bounded(read_bytes_bounded(path, limit), decode)


def read_json(path: str | Path, limit: int = RESULT_LIMIT) -> Optional[Any]:
    """The document, or None when the file is absent or damaged (callers that must say why use load_json)."""
    try:
        return load_json(path, limit)
    except (FileNotFoundError, DamagedFile):
        return None


def type_name(value: Any) -> str:
    """A JSON value's kind as a user knows it, for one-line messages about a document of the wrong shape."""
    names = {dict: "an object", list: "a list", str: "a string", bool: "true/false", int: "a number",
             float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def utc_now() -> str:
    """The current time as ISO-8601 UTC to the second (every timestamp in a sweep directory)."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
