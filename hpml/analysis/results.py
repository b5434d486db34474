"""Finds and reads every result.json under a folder; what cannot be used is listed, never fatal.

Like mlcommons/logging's result summarizer, loading returns the rows it could read plus one `Problem` per
file it could not: a corrupt, truncated or unreadable file, an unsupported schema_version, a missing or
mistyped key, or a point that a sweep knows (its manifest lists it, or points/<n>/ exists) but that has no
result.json (yet). Reads are bounded (contract.jsonio): a result over RESULT_LIMIT; a directory, FIFO, socket,
device or broken link where result.json should be; or JSON nested too deeply is one problem line, not a hang,
an exhausted memory, a crash, or a point that silently vanishes (analysis.inventory).

Reading files only: the analysis never imports a workload or the launcher. The sweep-directory layout it
relies on (manifest.json, points/<n>/result.json, points/<n>/state.json) is contract.sweep_layout's.

`WorkloadResults` is what analysis.report hands each workload's registered report: its results, and a way
to build rows from the ok ones that turns unreadable measurements into a line, not a crash.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Set, Tuple

import orjson

from hpml.analysis.inventory import Inventory, path_order, take_inventory
from hpml.contract.collector import cycle_collection_paused
from hpml.contract.jsonio import MANIFEST_LIMIT, RESULT_LIMIT, STATE_LIMIT, DamagedFile, load_json
from hpml.contract.result_schema import ResultCheck, validate_result
from hpml.contract.sweep_layout import POINTS_DIR, RESULT_FILE, STATE_FILE, point_dir
from hpml.report_kit.sections import MALFORMED


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


def decode_json(data: bytes) -> Any:
    """orjson first: it decodes result files 2.4x faster than the standard library (docs/results/report-speed.md).
    It refuses the NaN and Infinity tokens that Python's json writes for a diverged loss; those files, and only
    they, go through the standard library, which reads them (and reports real corruption with line and column)."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)


def read_json_file(path: Path, limit: int = RESULT_LIMIT) -> Tuple[Optional[Any], Optional[str]]:
    """(document, None), or (None, why it could not be read, in one line)."""
    try:
        return load_json(path, limit, decode_json), None
    except FileNotFoundError:
        return None, "missing"
    except DamagedFile as error:
        return None, str(error)


def parse_result(path: str | Path, checks: Optional[Mapping[str, ResultCheck]] = None
                 ) -> Tuple[Optional[Dict[str, Any]], List[Problem]]:
    """The row of one result.json, or the problems that keep it out."""
    doc, why = read_json_file(path)
    if why is not None:
        return None, [Problem(Path(path), why)]
    errors = validate_result(doc, checks)
    if errors:
        return None, [Problem(Path(path), error) for error in errors]
    doc["path"] = str(path)  # the document is this reader's own: no copy
    return doc, []


def _job_state(folder: Path) -> str:
    """What the point's state.json (kept by the launcher's job) says, to explain a missing result."""
    try:
        if not (folder / STATE_FILE).exists():
            return "no job state recorded: never started, or still queued"
    except OSError as error:  # a point folder the user may not look inside, a link loop
        return f"job state unreadable: {error.strerror or error}"
    state, why = read_json_file(folder / STATE_FILE, STATE_LIMIT)
    if why is not None:
        return f"job state unreadable: {why}"
    if not isinstance(state, dict) or not isinstance(state.get("state"), str):
        return "job state unreadable: state.json is not an object with a state"
    reason = state.get("reason")
    reason = reason.strip().splitlines()[-1] if isinstance(reason, str) and reason.strip() else None
    return f"job state: {state['state']:.40}" + (f" ({reason})" if reason else "")


def _manifest_points(manifest: Any) -> Optional[List[Dict[str, Any]]]:
    """The manifest's points when each has a point number (an integer >= 0) and overrides (a list of
    strings) if any; None for a manifest of any other shape."""
    points = manifest.get("points") if isinstance(manifest, dict) else None
    if not isinstance(points, list):
        return None
    for entry in points:
        if not isinstance(entry, dict) or type(entry.get("point")) is not int or entry["point"] < 0:
            return None
        overrides = entry.get("overrides", [])
        if not isinstance(overrides, list) or not all(isinstance(o, str) for o in overrides):
            return None
    return points


def _manifest_overrides(manifest_path: Path, problems: List[Problem]) -> Optional[Dict[int, List[str]]]:
    """point number -> its overrides, as the sweep's manifest lists them; None, and a problem, for an
    unusable manifest (its sweep's points are then known from its points/ folder alone)."""
    manifest, why = read_json_file(manifest_path, MANIFEST_LIMIT)
    points = _manifest_points(manifest) if why is None else None
    if why is not None or points is None:
        problems.append(Problem(manifest_path, why or "not an hpml sweep manifest (no list of points, each with "
                                                      "a point number and its overrides)"))
        return None
    return {entry["point"]: entry.get("overrides") or [] for entry in points}


def point_overrides(manifest_path: Path) -> Optional[Dict[int, List[str]]]:
    """point number -> its overrides from a sweep's manifest; None for a missing or unusable one (whose problem
    the report's inventory states once: unread_points)."""
    return _manifest_overrides(manifest_path, []) if manifest_path.is_file() else None


def _not_listed(manifest: Optional[Dict[int, List[str]]], has_manifest: bool) -> str:
    """Why a point found only as a folder has no overrides to show."""
    if not has_manifest:
        return "no manifest.json"
    return "not in the manifest" if manifest is not None else "manifest.json unreadable"


def unread_points(inventory: Inventory, problems: List[Problem]) -> List[str]:
    """Every point a sweep knows (its manifest lists it, or its points/ folder has a folder for it) whose
    result.json the walk did not meet: a missing result is a Problem here; one that exists after all (its
    point folder is a link, which the walk does not enter) is returned, to be read like the others."""
    walked = set(inventory.results)
    listed = {os.path.dirname(path): _manifest_overrides(Path(path), problems) for path in inventory.manifests}
    extra: List[str] = []
    for sweep_dir in sorted(set(listed) | set(inventory.point_folders), key=path_order):
        overrides = listed.get(sweep_dir) or {}
        for point in sorted(set(overrides) | inventory.point_folders.get(sweep_dir, set())):
            path = os.path.join(sweep_dir, POINTS_DIR, str(point), RESULT_FILE)
            if path in walked:
                continue
            if os.path.lexists(path):
                extra.append(path)
                continue
            listing = (" ".join(overrides[point]) or "no overrides") if point in overrides else \
                _not_listed(listed.get(sweep_dir), sweep_dir in listed)
            folder = point_dir(sweep_dir, point)
            problems.append(Problem(folder / RESULT_FILE, f"missing result ({listing}; {_job_state(folder)})"))
    return extra


def load_results(root: str | Path, checks: Optional[Mapping[str, ResultCheck]] = None) -> LoadedResults:
    """Every result.json under root, recursively, and every point a sweep under root knows (its manifest, its
    points/ folder) that has none: nothing a sweep holds is left out without a line saying why.
    checks: each workload's extra rules for its ok results (analysis.registry.RESULT_CHECKS; without it,
    only the envelope every result shares is checked)."""
    loaded = LoadedResults()
    inventory = take_inventory(Path(root))
    missing: List[Problem] = []
    paths = sorted(inventory.results + unread_points(inventory, missing), key=path_order)
    loaded.files_found = len(paths)
    # decoded JSON makes no reference cycles; the collector's passes cost 1.2 s of a 2.3 s load of 10,000 results
    # (docs/results/report-speed.md)
    with cycle_collection_paused():
        for row, problems in (parse_result(path, checks) for path in paths):
            if row is not None:
                loaded.rows.append(row)
            loaded.problems.extend(problems)
    loaded.problems.extend(missing)
    drop_copies(loaded)
    return loaded


def drop_copies(loaded: LoadedResults) -> None:
    """A result.json copied beside itself (a point folder or a whole sweep duplicated by hand) would count twice
    in every mean and n: a result equal to an earlier one in everything but its path is a copy; the first by
    path stays and each copy is one Problem. Compared in full only where sweep, point, repeat and start time
    agree (two launches under one sweep name differ in their measurements, if not in their start)."""
    earlier: Dict[Tuple[Any, ...], List[Dict[str, Any]]] = {}
    kept = []
    for row in loaded.rows:
        ident = row["identity"]
        same_key = earlier.setdefault((ident["sweep"], ident["point"], ident.get("repeat"), row.get("started_at")), [])
        original = next((doc for doc in same_key if _equal_but_path(doc, row)), None)
        if original is not None:
            loaded.problems.append(Problem(Path(where(row)), f"a copy of {where(original)} (equal in everything "
                                                             "but its path): left out, so that it counts once"))
            continue
        same_key.append(row)
        kept.append(row)
    loaded.rows = kept


def _equal_but_path(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return a.keys() == b.keys() and all(a[k] == b[k] for k in a if k != "path")


def where(doc: Mapping[str, Any]) -> str:
    """A result's result.json path, or its sweep and point when it was not read from a file."""
    return doc.get("path") or f"{doc['identity']['sweep']} point {doc['identity']['point']}"




@dataclass
class WorkloadResults:
    """Every loaded result of one workload (any status, sorted by path), as its registered report gets them.

    rows(build) builds table rows from the ok results; a result whose measurements `build` cannot read
    (MALFORMED: a key missing, a value of the wrong type or out of range) goes to `unreadable` with the error, and the report lists
    it under "Results not in a table" instead of failing. `tabulated` keeps the id of every result that gave
    a row, so the report can name an ok result that its workload's report put in no table (issue 25)."""

    workload: str
    docs: List[Dict[str, Any]]
    unreadable: List[Tuple[Dict[str, Any], str]] = field(default_factory=list)
    tabulated: Set[int] = field(default_factory=set)

    @property
    def ok(self) -> List[Dict[str, Any]]:
        return [doc for doc in self.docs if doc["status"] == "ok"]

    def leave_out(self, doc: Dict[str, Any], why: str) -> None:
        self.unreadable.append((doc, why))

    def rows(self, build: Callable[[Mapping[str, Any]], List[Dict[str, Any]]],
             docs: Optional[List[Dict[str, Any]]] = None) -> List[Dict[str, Any]]:
        """build(doc) of every ok result (or of `docs`), concatenated."""
        rows: List[Dict[str, Any]] = []
        for doc in self.ok if docs is None else docs:
            try:
                built = build(doc)
            except MALFORMED as error:
                self.leave_out(doc, f"unreadable {self.workload} measurements ({type(error).__name__}: {error})")
                continue
            rows.extend(built)
            if built:
                self.tabulated.add(id(doc))
        return rows
