"""Where hpml keeps what it can compute again but would rather not (a compiled kernel, a model's preflight
answer, torchvision's model names): one folder, chosen the XDG way, that users may delete at any time."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping


def hpml_cache_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """$HPML_CACHE_DIR, else $XDG_CACHE_HOME/hpml, else ~/.cache/hpml."""
    if environ.get("HPML_CACHE_DIR"):
        base = Path(environ["HPML_CACHE_DIR"])
    elif environ.get("XDG_CACHE_HOME"):
        base = Path(environ["XDG_CACHE_HOME"]) / "hpml"
    else:
        base = Path(environ.get("HOME") or Path.home()) / ".cache" / "hpml"
    return base.expanduser()
