"""A damaged checkpoint never makes a sweep impossible to finish (issue 33, item 3): on a real launched and resumed
train point, a checkpoint.pt that cannot be used (junk, a FIFO, another model's weights) is named, set aside under
the point's attempts/, and the point restarts from epoch 1; its result says so (measurements.checkpoint_discarded)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import torch

from tests.conftest import KEPT_CHECKPOINT, run_hpml


@pytest.fixture(scope="module")
def finished(shared_sweep) -> Path:
    """The finished tiny train point with its checkpoint kept, launched once per test run (test_provenance.py reads
    it too); each test resumes its own copy."""
    return shared_sweep(*KEPT_CHECKPOINT, timeout=300)


def damage(point: Path, how: str) -> None:
    path = point / "checkpoint.pt"
    if how == "junk":
        path.write_bytes(b"not a checkpoint at all")
    elif how == "fifo":
        path.unlink()
        os.mkfifo(path)  # torch.load would wait for a writer forever
    else:  # another model's weights in a file torch loads
        state = torch.load(path, weights_only=False)
        state["model"] = {"fc.weight": torch.zeros(3, 3)}
        torch.save(state, path)


@pytest.mark.parametrize("how, why", [
    ("junk", "checkpoint.pt: not a checkpoint torch can load (UnpicklingError"),
    ("fifo", "checkpoint.pt: not a regular file (a FIFO (named pipe))"),
    ("other_model", "checkpoint.pt: its weights are not this model's (other tensors or shapes)"),
])
def test_resume_sets_an_unusable_checkpoint_aside_and_restarts_the_point(finished, tmp_path, how, why):
    sweep = tmp_path / "sweep"
    shutil.copytree(finished, sweep, symlinks=True)
    point = sweep / "points" / "0"
    assert (point / "checkpoint.pt").is_file()  # kept by workload.keep_checkpoint
    for name in ("result.json", "state.json"):  # the point never finished: resume reruns it
        (point / name).unlink()
    damage(point, how)
    done = run_hpml(["resume", str(sweep)], cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads((point / "result.json").read_text())
    assert result["status"] == "ok"
    discarded = result["measurements"]["checkpoint_discarded"]
    assert discarded["reason"].startswith(why), discarded
    assert discarded["set_aside"] == "attempts/unreadable_checkpoint.1"
    assert (point / "attempts" / "unreadable_checkpoint.1").exists()
    assert result["measurements"]["cold_epochs"] == [0] and len(result["measurements"]["epoch_time_s"]) == 2
    log = (point / "logs" / "torchrun.node0.out").read_text()
    assert "restarting from epoch 1: " + why in log and "resumed from" not in log


def test_a_usable_checkpoint_is_still_resumed_from(finished, tmp_path):
    """The check can pass: an intact checkpoint of the last epoch resumes (nothing discarded)."""
    sweep = tmp_path / "sweep"
    shutil.copytree(finished, sweep, symlinks=True)
    point = sweep / "points" / "0"
    for name in ("result.json", "state.json"):
        (point / name).unlink()
    done = run_hpml(["resume", str(sweep)], cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads((point / "result.json").read_text())
    assert result["measurements"]["checkpoint_discarded"] is None
    assert "resumed from" in (point / "logs" / "torchrun.node0.out").read_text()
