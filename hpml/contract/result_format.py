"""result.json, schema version 2: the shared constants and rules (the whole format: docs/result-schema.md).

The workloads write these numbers and the analysis checks them; a change here is a change of the format.
"""

from __future__ import annotations

from typing import Any, List, Mapping

SCHEMA_VERSION = 2  # 2: train's workload.compile is a mode string (was a bool); MFU and the step's bound added
READABLE_SCHEMA_VERSIONS = (1, 2)  # the analysis reads both: a version-1 train result has no MFU (n/a, says why)
STATUSES = ("ok", "failed", "oom", "timeout")
SCALING_MODES = ("weak", "strong")
WARMUP_EPOCHS = 1  # epoch 1 is warm-up: its time is never reported
MAX_REASON_CHARS = 400  # a reason (result.json, state.json) is one terminal line or two; the rest is in logs/


def reason_line(text: object) -> str:
    """A reason as result.json and state.json hold it: the first non-empty line of `text`, at most
    MAX_REASON_CHARS characters (the whole message stays in the point's logs)."""
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    line = lines[0] if lines else ""
    return line if len(line) <= MAX_REASON_CHARS else line[: MAX_REASON_CHARS - 3] + "..."


def timed_epoch_indices(epochs: int, cold_epochs: List[int] | None) -> List[int]:
    """0-based indices of the epochs whose times a training result counts: every epoch but the cold ones.

    Cold epochs are those a fresh process started with: epoch 1 always, and the first epoch after each resume
    from a checkpoint (a requeued job re-imports, re-initialises NCCL and re-tunes cuDNN). Results written
    before `measurements.cold_epochs` existed pass None: only epoch 1 is cold. Should every epoch be cold (a job
    requeued after each epoch), only epoch 1 is dropped, so the result still has a time.
    """
    cold = set(cold_epochs if cold_epochs else range(WARMUP_EPOCHS))
    timed = [i for i in range(epochs) if i not in cold]
    return timed or list(range(WARMUP_EPOCHS, epochs))


def timed_values(values: List[Any], measurements: Mapping[str, Any]) -> List[Any]:
    """The entries of a per-epoch list of `measurements` that belong to its timed epochs."""
    indices = timed_epoch_indices(len(measurements["epoch_time_s"]), measurements.get("cold_epochs"))
    return [values[i] for i in indices]
