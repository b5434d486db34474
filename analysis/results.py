"""Finds and reads every result.json under a folder; what cannot be used is listed, never fatal.

Like mlcommons/logging's result summarizer, loading returns the rows it could read plus one `Problem` per
file it could not: a corrupt or unreadable file, an unsupported schema_version, a missing or mistyped key,
or a point that an hpml sweep manifest lists but that has no result.json (yet).

Reading files only: the analysis never imports a workload or the launcher. The sweep-directory layout it
relies on (manifest.json, points/<n>/result.json, points/<n>/state.json) is documented in
launcher/sweep_dir.py and docs/result-schema.md.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple

from analysis.schema import validate_result

__all__ = ["LoadedResults", "Problem", "load_results", "validate_result"]

RESULT_FILE = "result.json"
MANIFEST_FILE = "manifest.json"
STATE_FILE = "state.json"


@dataclass(frozen=True)
class Problem:
    """A result the analysis could not use, and why."""

    path: Path
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass
class LoadedResults:
    """rows: each usable result document as written, plus "path" (its result.json, to trace a number back
    to the job that made it), sorted by path. problems: everything that could not be used.
    files_found: how many result.json files there were, usable or not."""

    rows: List[Dict[str, Any]] = field(default_factory=list)
    problems: List[Problem] = field(default_factory=list)
    files_found: int = 0


def read_json_file(path: Path) -> Tuple[Optional[Any], Optional[str]]:
    """(document, None), or (None, why it could not be read)."""
    try:
        return json.loads(path.read_text()), None
    except OSError as error:
        return None, f"unreadable: {error.strerror or error}"
    except UnicodeDecodeError as error:
        return None, f"not UTF-8 text: {error.reason}"
    except json.JSONDecodeError as error:
        return None, f"corrupt JSON: {error.msg} (line {error.lineno}, column {error.colno})"


def parse_result(path: Path) -> Tuple[Optional[Dict[str, Any]], List[Problem]]:
    """The row of one result.json, or the problems that keep it out."""
    doc, why = read_json_file(path)
    if why is not None:
        return None, [Problem(path, why)]
    errors = validate_result(doc)
    if errors:
        return None, [Problem(path, error) for error in errors]
    return {**doc, "path": str(path)}, []


def _job_state(point_dir: Path) -> str:
    """What the point's state.json (kept by the launcher's job) says, to explain a missing result."""
    if not (point_dir / STATE_FILE).exists():
        return "no job state recorded: never started, or still queued"
    state, _ = read_json_file(point_dir / STATE_FILE)
    if not isinstance(state, dict) or "state" not in state:
        return "job state unreadable"
    reason = state.get("reason")
    return f"job state: {state['state']}" + (f" ({reason})" if reason else "")


def missing_points(sweep_dir: Path) -> List[Problem]:
    """The points a sweep's manifest lists that have no result.json."""
    manifest_path = sweep_dir / MANIFEST_FILE
    manifest, why = read_json_file(manifest_path)
    if why is not None:
        return [Problem(manifest_path, why)]
    points = manifest.get("points") if isinstance(manifest, dict) else None
    if not isinstance(points, list) or not all(isinstance(p, dict) and "point" in p for p in points):
        return [Problem(manifest_path, "not an hpml sweep manifest (no list of points)")]
    problems = []
    for entry in points:
        point_dir = sweep_dir / "points" / str(entry["point"])
        if not (point_dir / RESULT_FILE).exists():
            overrides = " ".join(entry.get("overrides") or []) or "no overrides"
            problems.append(Problem(point_dir / RESULT_FILE,
                                    f"missing result ({overrides}; {_job_state(point_dir)})"))
    return problems


def load_results(root: str | Path) -> LoadedResults:
    """Every result.json under root, recursively. Each folder holding a manifest.json (root itself when it
    is a sweep directory, or the sweeps inside a folder of sweeps) is also checked for missing points."""
    root = Path(root)
    loaded = LoadedResults()
    for path in sorted(root.rglob(RESULT_FILE)):
        loaded.files_found += 1
        row, problems = parse_result(path)
        if row is not None:
            loaded.rows.append(row)
        loaded.problems.extend(problems)
    for manifest_path in sorted(root.rglob(MANIFEST_FILE)):
        loaded.problems.extend(missing_points(manifest_path.parent))
    return loaded


def workload_rows(docs: Iterable[Mapping[str, Any]], workload: str,
                  build: Callable[[Mapping[str, Any]], List[Dict[str, Any]]]) -> Tuple[List[Dict[str, Any]], List[str]]:
    """Rows that build(doc) makes from every ok result of one workload, and one line for each result of
    that workload that gave none (not ok, or measurements it could not read). Other workloads are ignored."""
    rows: List[Dict[str, Any]] = []
    skipped: List[str] = []
    for doc in docs:
        if doc["identity"]["workload"] != workload:
            continue
        where = doc.get("path") or f"{doc['identity']['sweep']} point {doc['identity']['point']}"
        if doc["status"] != "ok":
            skipped.append(f"{where}: status {doc['status']} ({doc.get('reason')})")
            continue
        try:
            rows.extend(build(doc))
        except (KeyError, TypeError, ValueError, IndexError) as error:
            skipped.append(f"{where}: unreadable {workload} measurements ({type(error).__name__}: {error})")
    return rows, skipped
