"""What a result.json of schema version 1 must hold (docs/result-schema.md): the envelope every result shares,
checked by the report (analysis/results.py) and by `hpml status` (a point is completed only with a valid ok
result), plus the kinds of value with which each workload's analysis states its own rules.

The checks are data: a table from a dotted key ("identity.repeat") to the kind of value it must hold.
`validate_result` returns every broken rule as one line; an empty list means the document is usable.

Keys the tables do not name are allowed: adding a key is not a breaking change (see the versioning rule in
docs/result-schema.md), so a reader ignores what it does not know. Changing or removing a key bumps
`schema_version`, and this reader refuses any version other than the one it was written for.
"""

from __future__ import annotations

import functools
import math
import re
from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Tuple

from hpml.contract.result_format import READABLE_SCHEMA_VERSIONS, SCALING_MODES, STATUSES
from hpml.contract.telemetry_format import TELEMETRY_STATUSES

# A workload's own rules for its ok results, registered in analysis.registry.RESULT_CHECKS: the document
# (its envelope already valid) -> one line per broken rule.
ResultCheck = Callable[[Mapping[str, Any]], List[str]]


class Kind(NamedTuple):
    """A kind of JSON value: its name in an error message and the test a value must pass."""

    description: str
    accepts: Callable[[Any], bool]


def _list_of(test: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: isinstance(value, list) and all(test(item) for item in value)


_NUMBER_TYPES = {int, float}  # type(), not isinstance(): JSON true must not pass as 1


def _numbers(value: Any) -> bool:
    """A list of numbers (not bools); one set of types per list, not a call per item (10,000 results)."""
    return type(value) is list and {type(v) for v in value} <= _NUMBER_TYPES


def _durations(value: Any, positive: bool = False) -> bool:
    """A list of finite numbers >= 0 (> 0 when positive). The sum of numbers >= 0 is finite exactly when
    none is NaN or infinite, and min() sees every negative one; NaN, which compares false, is the sum's."""
    if not _numbers(value):
        return False
    if not value:
        return True
    low = min(value)
    return (low > 0 if positive else low >= 0) and math.isfinite(sum(value))


OBJECT = Kind("an object", lambda v: isinstance(v, dict))
STRING = Kind("a string", lambda v: isinstance(v, str))
OPTIONAL_STRING = Kind("a string or null", lambda v: v is None or isinstance(v, str))
INTEGER = Kind("an integer", lambda v: type(v) is int)
POSITIVE_INTEGER = Kind("an integer >= 1", lambda v: type(v) is int and v >= 1)
OPTIONAL_INTEGER = Kind("an integer or null", lambda v: v is None or type(v) is int)
STATUS = Kind(f"one of {', '.join(STATUSES)}", lambda v: v in STATUSES)
SCALING = Kind(f"one of {', '.join(SCALING_MODES)}", lambda v: v in SCALING_MODES)
NUMBERS = Kind("a list of numbers", _numbers)
EPOCH_TIMES = Kind("a list of durations > 0 s", lambda v: _durations(v, positive=True))
DURATION_LISTS = Kind("a list of lists of durations >= 0 s", _list_of(_durations))

# Every result, whatever its status. Parents come before their children: a child is checked only when
# its parent passed, so a missing object gives one line, not one per key inside it.
ENVELOPE: Dict[str, Kind] = {
    "identity": OBJECT,
    "identity.sweep": STRING,
    "identity.point": OPTIONAL_INTEGER,
    "identity.repeat": INTEGER,
    "identity.seed": INTEGER,
    "identity.workload": STRING,
    "status": STATUS,
    "reason": OPTIONAL_STRING,
    "config": OBJECT,
    "config.sweep": OBJECT,
    "config.resources": OBJECT,
    "config.resources.nodes": POSITIVE_INTEGER,
    "config.resources.workers_per_node": POSITIVE_INTEGER,
    "config.cluster": OBJECT,
    "config.workload": OBJECT,
    "config.workload.name": STRING,
    "environment": OBJECT,
    "environment.world_size": POSITIVE_INTEGER,
    "timing": OBJECT,
    "measurements": OBJECT,
    "derived": OBJECT,
    "started_at": STRING,
    "finished_at": STRING,
}

# The optional "telemetry" block (GPU telemetry, contract/telemetry_format.py), checked when present: results
# written before it existed have none. Sidecar names are the contract's own (telemetry.node<k>.json.gz), so a
# reader that opens them never leaves the point's folder.
_SIDECAR_NAME = re.compile(r"telemetry\.node\d+\.json\.gz")
TELEMETRY: Dict[str, Kind] = {
    "telemetry": OBJECT,
    "telemetry.status": Kind(f"one of {', '.join(TELEMETRY_STATUSES)}", lambda v: v in TELEMETRY_STATUSES),
    "telemetry.reason": OPTIONAL_STRING,
    "telemetry.interval_ms": Kind("a number > 0 (milliseconds)",
                                  lambda v: type(v) in _NUMBER_TYPES and math.isfinite(v) and v > 0),
    "telemetry.sidecars": Kind("a list of sidecar names telemetry.node<k>.json.gz",
                               _list_of(lambda v: isinstance(v, str) and bool(_SIDECAR_NAME.fullmatch(v)))),
}


def telemetry_errors(doc: Mapping[str, Any]) -> List[str]:
    """The telemetry block's broken rules ([] without a block): its kinds, and that status ok names a sidecar
    while the others name none and say why."""
    if "telemetry" not in doc:
        return []
    errors = check_kinds(doc, TELEMETRY)
    if errors:
        return errors
    block = doc["telemetry"]
    if block["status"] == "ok" and not block["sidecars"]:
        errors.append("telemetry.sidecars: empty, but status is ok")
    if len(set(block["sidecars"])) != len(block["sidecars"]):  # read twice, its GPUs and energy would count twice
        errors.append(f"telemetry.sidecars: a name listed twice ({shown(block['sidecars'])})")
    if block["status"] != "ok" and (block["sidecars"] or block["reason"] is None):
        errors.append(f"telemetry: status {block['status']} needs a reason and no sidecars")
    return errors


@functools.lru_cache(maxsize=None)
def _parts(dotted_key: str) -> Tuple[str, ...]:
    return tuple(dotted_key.split("."))


def lookup(doc: Mapping[str, Any], dotted_key: str) -> Tuple[bool, Any]:
    """(found, value) of a dotted key such as "config.workload.scaling"."""
    node: Any = doc
    for part in _parts(dotted_key):
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    return True, node


def shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class _Step(NamedTuple):
    """One key of a check table, compiled: the index of its nearest parent in the table (-1: none) and the
    parts to walk from that parent's value."""

    key: str
    parent: int
    parts: Tuple[str, ...]
    kind: Kind


_PLANS: Dict[int, Tuple[Mapping[str, Kind], List[_Step]]] = {}
_FAILED = object()  # check_kinds: a key whose value did not pass (None is a value that may pass)


def _plan(table: Mapping[str, Kind]) -> List[_Step]:
    """The table compiled once (cached by identity; the tables are module constants): each key walks on from
    its parent's value instead of from the document's root, and knows at once whether its parent passed.
    Validation was a fifth of `hpml report` over 10,000 results (docs/results/report-speed.md)."""
    cached = _PLANS.get(id(table))
    if cached is not None and cached[0] is table:
        return cached[1]
    index: Dict[str, int] = {}
    steps: List[_Step] = []
    for key, kind in table.items():
        parts = _parts(key)
        parent = next((index[".".join(parts[:j])] for j in range(len(parts) - 1, 0, -1)
                       if ".".join(parts[:j]) in index), -1)
        depth = len(_parts(steps[parent].key)) if parent >= 0 else 0
        index[key] = len(steps)
        steps.append(_Step(key, parent, parts[depth:], kind))
    _PLANS[id(table)] = (table, steps)
    return steps


def check_kinds(doc: Mapping[str, Any], table: Mapping[str, Kind]) -> List[str]:
    """One line per key of `table` that is missing or of the wrong kind, in the table's order; the keys under
    a key that failed are not checked (one line for a missing object, not one per key inside it)."""
    errors: List[str] = []
    steps = _plan(table)
    values: List[Any] = [_FAILED] * len(steps)  # each key's value once it passed; _FAILED until then
    for i, (key, parent, parts, kind) in enumerate(steps):
        node: Any = doc if parent < 0 else values[parent]
        if node is _FAILED:  # its parent is missing or of the wrong kind: one line said so already
            continue
        for part in parts:
            if not isinstance(node, dict) or part not in node:
                errors.append(f"{key}: missing")
                break
            node = node[part]
        else:
            if kind.accepts(node):
                values[i] = node
            else:
                errors.append(f"{key}: expected {kind.description}, got {shown(node)}")
    return errors


def validate_result(doc: Any, checks: Optional[Mapping[str, ResultCheck]] = None) -> List[str]:
    """Every way `doc` breaks the schema versions the analysis reads, one line each; [] when the analysis can use it. `checks`:
    per workload name, the rules its ok results must also pass (analysis.registry.RESULT_CHECKS)."""
    if not isinstance(doc, dict):
        return [f"the document is {type(doc).__name__}, not a JSON object"]
    if "schema_version" not in doc:
        return ["schema_version: missing"]
    version = doc["schema_version"]
    if type(version) is not int or version not in READABLE_SCHEMA_VERSIONS:
        readable = " and ".join(str(v) for v in READABLE_SCHEMA_VERSIONS)
        return [f"schema_version {shown(version)} is not supported (this analysis reads versions {readable}); a "
                "breaking change of the result format bumps the version"]
    errors = check_kinds(doc, ENVELOPE) + telemetry_errors(doc)
    workload_check = (checks or {}).get(doc["identity"]["workload"]) if not errors else None
    if errors or doc["status"] != "ok" or workload_check is None:
        return errors
    return workload_check(doc)
