"""What a result.json of schema version 1 must hold for the analysis to use it (docs/result-schema.md).

The checks are data: a table from a dotted key ("identity.repeat") to the kind of value it must hold.
`validate_result` returns every broken rule as one line; an empty list means the document is usable.

Keys the tables do not name are allowed: adding a key is not a breaking change (see the versioning rule in
docs/result-schema.md), so a reader ignores what it does not know. Changing or removing a key bumps
`schema_version`, and this reader refuses any version other than the one it was written for.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Tuple

SCHEMA_VERSION = 1
STATUSES = ("ok", "failed", "oom", "timeout")
SCALING_MODES = ("weak", "strong")
WARMUP_EPOCHS = 1  # epoch 1 is warm-up: its time is never reported
TRAINING_WORKLOADS = ("train",)  # workloads whose ok results carry the per-epoch arrays checked below


def timed_epoch_indices(measurements: Mapping[str, Any]) -> List[int]:
    """0-based indices of the epochs a training result's times count: every epoch but the cold ones.

    Cold epochs (`measurements.cold_epochs`) are those a fresh process started with: epoch 1 always, and the
    first epoch after each resume from a checkpoint (a requeued job re-imports, re-initialises NCCL and
    re-tunes cuDNN). Results written before the key existed have only epoch 1 cold. Should every epoch be
    cold (a job requeued after each epoch), only epoch 1 is dropped, so the result still has a time.
    """
    epochs = len(measurements["epoch_time_s"])
    cold = set(measurements.get("cold_epochs") or range(WARMUP_EPOCHS))
    timed = [i for i in range(epochs) if i not in cold]
    return timed or list(range(WARMUP_EPOCHS, epochs))


def timed_values(values: List[Any], measurements: Mapping[str, Any]) -> List[Any]:
    """The entries of a per-epoch list that belong to timed epochs (see timed_epoch_indices)."""
    return [values[i] for i in timed_epoch_indices(measurements)]


class Kind(NamedTuple):
    """A kind of JSON value: its name in an error message and the test a value must pass."""

    description: str
    accepts: Callable[[Any], bool]


def _is_number(value: Any) -> bool:
    return type(value) in (int, float)  # type(), not isinstance(): JSON true must not pass as 1


def _is_duration(value: Any) -> bool:
    return _is_number(value) and math.isfinite(value) and value >= 0


def _list_of(test: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: isinstance(value, list) and all(test(item) for item in value)


OBJECT = Kind("an object", lambda v: isinstance(v, dict))
STRING = Kind("a string", lambda v: isinstance(v, str))
OPTIONAL_STRING = Kind("a string or null", lambda v: v is None or isinstance(v, str))
INTEGER = Kind("an integer", lambda v: type(v) is int)
POSITIVE_INTEGER = Kind("an integer >= 1", lambda v: type(v) is int and v >= 1)
OPTIONAL_INTEGER = Kind("an integer or null", lambda v: v is None or type(v) is int)
STATUS = Kind(f"one of {', '.join(STATUSES)}", lambda v: v in STATUSES)
SCALING = Kind(f"one of {', '.join(SCALING_MODES)}", lambda v: v in SCALING_MODES)
NUMBERS = Kind("a list of numbers", _list_of(_is_number))
EPOCH_TIMES = Kind("a list of durations > 0 s", _list_of(lambda v: _is_duration(v) and v > 0))
DURATION_LISTS = Kind("a list of lists of durations >= 0 s", _list_of(_list_of(_is_duration)))

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

# An ok result of a training workload: the raw arrays the scaling analysis recomputes its numbers from.
# (A failed run may have stopped before measuring anything, so these are not asked of it.)
TRAINING_MEASUREMENTS: Dict[str, Kind] = {
    "config.workload.scaling": SCALING,
    "measurements.epoch_time_s": EPOCH_TIMES,
    "measurements.epoch_time_s_per_rank": DURATION_LISTS,
    "measurements.step_time_s": DURATION_LISTS,
    "measurements.train_loss": NUMBERS,  # NaN allowed: a diverged run is still a measured run
    "measurements.train_accuracy": NUMBERS,
    "measurements.steps_per_epoch": POSITIVE_INTEGER,
    "measurements.per_worker_batch": POSITIVE_INTEGER,
    "measurements.global_batch": POSITIVE_INTEGER,
    "measurements.samples_per_epoch": POSITIVE_INTEGER,
}


def lookup(doc: Mapping[str, Any], dotted_key: str) -> Tuple[bool, Any]:
    """(found, value) of a dotted key such as "config.workload.scaling"."""
    node: Any = doc
    for part in dotted_key.split("."):
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    return True, node


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def check_kinds(doc: Mapping[str, Any], table: Mapping[str, Kind]) -> List[str]:
    errors: List[str] = []
    failed: List[str] = []
    for key, kind in table.items():
        if any(key.startswith(parent + ".") for parent in failed):
            continue
        found, value = lookup(doc, key)
        if not found:
            errors.append(f"{key}: missing")
        elif not kind.accepts(value):
            errors.append(f"{key}: expected {kind.description}, got {_shown(value)}")
        else:
            continue
        failed.append(key)
    return errors


def _training_consistency(doc: Mapping[str, Any]) -> List[str]:
    """Rules between arrays, for an ok training result whose arrays already have the right kinds."""
    m, errors = doc["measurements"], []
    epochs = len(m["epoch_time_s"])
    if epochs <= WARMUP_EPOCHS:
        errors.append(f"measurements.epoch_time_s: {epochs} epoch(s); an ok result needs at least "
                      f"{WARMUP_EPOCHS + 1} (epoch 1 is warm-up and is not reported)")
    cold = m.get("cold_epochs")  # optional: results written before it existed have only epoch 1 cold
    if cold is not None and not (isinstance(cold, list) and all(type(i) is int and 0 <= i < epochs for i in cold)):
        errors.append(f"measurements.cold_epochs: expected epoch indices 0..{epochs - 1}, got {_shown(cold)}")
        return errors  # the checks below count timed epochs by it
    for key in ("epoch_time_s_per_rank", "step_time_s"):
        if len(m[key]) != epochs:
            errors.append(f"measurements.{key}: {len(m[key])} epoch(s), but epoch_time_s has {epochs}")
    if len(m["step_time_s"]) == epochs and any(len(steps) == 0 for steps in timed_values(m["step_time_s"], m)):
        errors.append("measurements.step_time_s: a timed epoch has no steps")
    resources, world_size = doc["config"]["resources"], doc["environment"]["world_size"]
    planned = resources["nodes"] * resources["workers_per_node"]
    if world_size != planned:
        errors.append(f"environment.world_size: {world_size} workers ran, but config.resources asked for "
                      f"nodes * workers_per_node = {planned}")
    return errors


def validate_result(doc: Any) -> List[str]:
    """Every way `doc` breaks schema version 1, one line each; [] when the analysis can use it."""
    if not isinstance(doc, dict):
        return [f"the document is {type(doc).__name__}, not a JSON object"]
    if "schema_version" not in doc:
        return ["schema_version: missing"]
    version = doc["schema_version"]
    if type(version) is not int or version != SCHEMA_VERSION:
        return [f"schema_version {_shown(version)} is not supported (this analysis reads version "
                f"{SCHEMA_VERSION}); a breaking change of the result format bumps the version"]
    errors = check_kinds(doc, ENVELOPE)
    if errors or doc["status"] != "ok" or doc["identity"]["workload"] not in TRAINING_WORKLOADS:
        return errors
    errors = check_kinds(doc, TRAINING_MEASUREMENTS)
    return errors or _training_consistency(doc)
