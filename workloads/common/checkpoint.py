"""Epoch checkpoints, so that a job requeued after a timeout or preemption resumes where it stopped.

Rank 0 saves the model, the optimizer and the raw measurements so far after each epoch (written to a
temporary file, then renamed); every rank restores from it at start. The data order needs no saved state:
DistributedSampler derives it from the seed and the epoch number. The file's name in the point's folder is
contract.sweep_layout.CHECKPOINT_FILE.

A completed point no longer needs it (a ResNet-50 checkpoint is ~180 MB): the workload removes it once
result.json is written with status ok, unless the config keeps it (workload.keep_checkpoint). A failed,
timed-out or interrupted point keeps it, so a requeue or `hpml resume` continues from its last epoch.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import torch


class EpochCheckpoint:
    def __init__(self, path: Path):
        self.path = Path(path)

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

    def restore(self, model, optimizer, log, device: torch.device) -> int:
        """Loads the last checkpoint into model, optimizer and log; returns the epochs already done."""
        if not self.path.exists():
            return 0
        state = torch.load(self.path, map_location=device, weights_only=False)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        for name, values in state["log"].items():
            setattr(log, name, values)
        torch.set_rng_state(state["cpu_rng"])
        return int(state["epochs_done"])

    def remove(self) -> None:
        """Deletes the checkpoint (and a half-written one): for a point whose result is complete."""
        for path in (self.path, self.partial_path):
            path.unlink(missing_ok=True)
