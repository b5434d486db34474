"""JSON files that a reader may open while a writer (or a killed writer) is at work.

Writes go to a temporary file in the same folder, are flushed and fsync'ed, then renamed over the target:
a reader sees the old file or the new one, never half of one, and a crash after the rename keeps the new one.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Optional


def write_json_atomic(path: str | Path, document: Any) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(document, f, indent=1, default=str)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def read_json(path: str | Path) -> Optional[Any]:
    """The document, or None when the file is absent, unreadable or not JSON (callers that must say why use
    their own reader: analysis.results.read_json_file)."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def utc_now() -> str:
    """The current time as ISO-8601 UTC to the second (every timestamp in a sweep directory)."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
