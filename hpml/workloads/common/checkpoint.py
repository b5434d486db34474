"""Epoch checkpoints, so that a job requeued after a timeout or preemption resumes where it stopped.

Rank 0 saves the model, the optimizer and the raw measurements so far after each epoch (written to a
temporary file, then renamed); every rank restores from it at start. The data order needs no saved state:
DistributedSampler derives it from the seed and the epoch number. The file's name in the point's folder is
contract.sweep_layout.CHECKPOINT_FILE.

A checkpoint that cannot be read (not a regular file, truncated, not a checkpoint of this model) never stops a
sweep from finishing: restore() names it, rank 0 sets it aside under the point's attempts/ (so `hpml resume`
reruns the point and keeps the evidence), the point restarts from epoch 1, and `discarded` says so for the result
(measurements.checkpoint_discarded). Before, every resume failed the point with UnpicklingError, naming no file.

A completed point no longer needs it (a ResNet-50 checkpoint is ~180 MB): the workload removes it once
result.json is written with status ok, unless the config keeps it (workload.keep_checkpoint). A failed,
timed-out or interrupted point keeps it, so a requeue or `hpml resume` continues from its last epoch.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Dict, Optional

import torch

from hpml.contract.files import one_line, regular_file_problem
from hpml.contract.sweep_layout import ATTEMPTS_DIR


class UnreadableCheckpoint(Exception):
    """str(): why, one line."""


class EpochCheckpoint:
    def __init__(self, path: Path):
        self.path = Path(path)
        # {"reason", "set_aside"} when restore() found a checkpoint it could not use; None otherwise
        self.discarded: Optional[Dict[str, Optional[str]]] = None

    @property
    def partial_path(self) -> Path:
        """Where save() writes before the rename; left behind only by a process killed mid-save."""
        return self.path.with_name(f".{self.path.name}.tmp")

    def save(self, epochs_done: int, model, optimizer, log) -> None:
        state = {"epochs_done": epochs_done, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                 "log": dataclasses.asdict(log), "cpu_rng": torch.get_rng_state()}
        tmp = self.partial_path
        torch.save(state, tmp)
        os.replace(tmp, self.path)

    def restore(self, model, optimizer, log, device: torch.device, set_aside: bool = True) -> int:
        """Loads the last checkpoint into model, optimizer and log; returns the epochs already done (0 where there is
        none, or it cannot be used: then `discarded` says why, and set_aside (rank 0) moves it under attempts/)."""
        if not (self.path.exists() or self.path.is_symlink()):
            return 0
        try:
            state = self._checked(model, log, device)
            optimizer.load_state_dict(state["optimizer"])  # checks its groups before it changes anything
        except UnreadableCheckpoint as why:
            self.discarded = {"reason": f"{self.path.name}: {why}", "set_aside": self._set_aside() if set_aside
                              else None}
            return 0
        model.load_state_dict(state["model"])
        for name, values in state["log"].items():
            setattr(log, name, values)
        torch.set_rng_state(state["cpu_rng"])
        return int(state["epochs_done"])

    def _checked(self, model, log, device: torch.device) -> dict:
        """The checkpoint's state, loaded only from a regular file and checked against this model and log before
        any of it is applied (a half-applied state would train a mixed model)."""
        problem = regular_file_problem(self.path)
        if problem:
            raise UnreadableCheckpoint(problem)
        try:
            state = torch.load(self.path, map_location=device, weights_only=False)
        except Exception as error:  # noqa: BLE001 - a damaged file raises any of pickle's and zipfile's errors
            raise UnreadableCheckpoint(f"not a checkpoint torch can load ({one_line(error)})") from None
        if not isinstance(state, dict) or not {"epochs_done", "model", "optimizer", "log", "cpu_rng"} <= set(state):
            raise UnreadableCheckpoint("not an epoch checkpoint (epochs_done, model, optimizer, log, cpu_rng)")
        if type(state["epochs_done"]) is not int or state["epochs_done"] < 0:
            raise UnreadableCheckpoint(f"epochs_done is {state['epochs_done']!r:.40}, not a count of epochs")
        mine = model.state_dict()
        theirs = state["model"]
        if not isinstance(theirs, dict) or set(theirs) != set(mine) or any(
                not torch.is_tensor(theirs[k]) or theirs[k].shape != mine[k].shape for k in mine):
            raise UnreadableCheckpoint("its weights are not this model's (other tensors or shapes)")
        if not isinstance(state["log"], dict) or not set(state["log"]) <= {f.name for f in dataclasses.fields(log)}:
            raise UnreadableCheckpoint("its epoch log is not this workload's")
        if not torch.is_tensor(state["cpu_rng"]) or state["cpu_rng"].dtype != torch.uint8:
            raise UnreadableCheckpoint("its random-number state is not torch's")
        return state

    def _set_aside(self) -> Optional[str]:
        """Moves the unusable checkpoint to attempts/unreadable_checkpoint.<k> beside it; its path relative to the
        point, or None where it could not be moved (then it is removed, so that the next start is clean)."""
        attempts = self.path.parent / ATTEMPTS_DIR
        try:
            attempts.mkdir(exist_ok=True)
            k = 1 + sum(1 for p in attempts.iterdir() if p.name.startswith("unreadable_checkpoint."))
            target = attempts / f"unreadable_checkpoint.{k}"
            os.replace(self.path, target)
            return str(target.relative_to(self.path.parent))
        except OSError:
            self.remove()
            return None

    def remove(self) -> None:
        """Deletes the checkpoint (and a half-written one): for a point whose result is complete."""
        for path in (self.path, self.partial_path):
            path.unlink(missing_ok=True)
