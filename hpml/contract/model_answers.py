"""Answers about a model that depend only on its code and the torch and torchvision versions, kept on disk so that
a later process reads them instead of computing them again: the launch preflight's meta forward
(conf/model_input.py) and a worker's FLOP count (models/stats/training_flops.py). Each is seconds of a small CPU
(building the model on the meta device, importing torch._dynamo), once per model and input shape.

An answer is a JSON file under hpml's cache folder (contract/cache_dir.py), `<kind>/<key>.json`; the key hashes the
arguments, torch's and torchvision's versions and the source of hpml's models (plus any module the caller names,
the one that computes the answer), so another version of any of them is another key. Written atomically (a
reader sees a whole file or none); a file that cannot be read or parsed, or a folder that cannot be written, is no
cache: the caller computes the answer again.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Optional, Sequence

from hpml.contract.cache_dir import hpml_cache_dir

MODELS = Path(__file__).parents[1] / "models"


def model_code_version(*sources: Path) -> str:
    """torch's and torchvision's versions and the source of hpml's models and of `sources`, hashed (callers cache
    it: it reads every model file)."""
    from importlib import metadata  # here, not at the top: every `hpml` start imports this module (issue 41)

    digest = hashlib.sha256()
    for dist in ("torch", "torchvision"):
        try:
            digest.update(f"{dist}={metadata.version(dist)};".encode())
        except metadata.PackageNotFoundError:
            digest.update(f"{dist}=none;".encode())
    for source in [*sources, *sorted(MODELS.rglob("*.py"))]:
        digest.update(source.read_bytes())
    return digest.hexdigest()[:20]


def answer_path(kind: str, arguments: Sequence[Any], version: str) -> Path:
    key = hashlib.sha256(json.dumps([*arguments, version]).encode()).hexdigest()[:32]
    return hpml_cache_dir() / kind / f"{key}.json"


def read_answer(path: Path) -> Optional[Any]:
    """The kept answer, or None when there is none or it cannot be read as JSON."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def write_answer(path: Path, answer: Any) -> bool:
    """Keeps `answer` at `path` (atomically); False when the cache folder cannot be written (a read-only home)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{os.getpid()}")
        partial.write_text(json.dumps(answer))
        os.replace(partial, path)
    except OSError:
        return False
    return True
