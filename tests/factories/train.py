"""Train results (workloads/train/) with chosen times, for the analysis tests (no training, no torch).

    doc = train_result(point=0, workers_per_node=2, epoch_times=[5, 2.5, 1.5], step_times=[[1], [0.5], [0.5]])
    write_result(sweep_dir, doc)   # -> sweep_dir/points/0/result.json

extra_measurements / extra_workload add the study's keys (train_time_s, phase_time_s, comm_probe, ...).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from hpml.analysis.train.runs import PHASES
from tests.factories import envelope


def train_result(*, point: int, epoch_times: Sequence[float], step_times: Sequence[Sequence[float]],
                 sweep: str = "study", repeat: int = 0, nodes: int = 1, workers_per_node: int = 1,
                 scaling: str = "weak", batch_size: int = 32, model: str = "resnet18",
                 status: str = "ok", reason: Optional[str] = None, epochs: Optional[int] = None,
                 extra_workload: Optional[Dict[str, Any]] = None,
                 extra_measurements: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """batch_size means what it means in the config: per worker for weak scaling, global for strong; epochs
    (config.workload.epochs) defaults to the number of epoch times (give it for a result that measured none)."""
    world_size = nodes * workers_per_node
    per_worker = batch_size if scaling == "weak" else batch_size // world_size
    steps_per_epoch = len(step_times[0]) if step_times else 0
    per_rank: List[List[float]] = [[t] * world_size for t in epoch_times]  # every rank as slow as the slowest
    workload = {"name": "train", "model": model, "batch_size": batch_size, "scaling": scaling,
                "epochs": len(epoch_times) if epochs is None else epochs, "lr": 0.1, **(extra_workload or {})}
    doc = envelope(workload, point=point, sweep=sweep, repeat=repeat, nodes=nodes,
                   workers_per_node=workers_per_node, status=status, reason=reason)
    if status == "ok":
        doc["measurements"] = {
            "epoch_time_s": list(epoch_times),
            "epoch_time_s_per_rank": per_rank,
            "step_time_s": [list(epoch) for epoch in step_times],
            "train_loss": [1.0] * len(epoch_times),
            "train_accuracy": [0.5] * len(epoch_times),
            "steps_per_epoch": steps_per_epoch,
            "per_worker_batch": per_worker,
            "global_batch": per_worker * world_size,
            "samples_per_epoch": steps_per_epoch * per_worker * world_size,
            **(extra_measurements or {}),
        }
    return doc


def study_result(point, *, workers=1, dp_devices=1, parallel="ddp", batch=32, scaling="weak", sweep="hw5",
                 total=(9.0, 4.0, 4.0), train=(8.0, 3.0, 3.0), steps=((1.0,) * 4,) * 3, repeat=0,
                 status="ok", comm=None, profile=None, loss=None, accuracy=None, lr_scaling="none",
                 gradient_bytes=100_000_000, link="none", peak=None, steps_per_epoch=4):
    """A train result with the study's measurements; phases split each step 10/5/25/50/10 %."""
    doc = train_result(point=point, sweep=sweep, repeat=repeat, workers_per_node=workers, scaling=scaling,
                      batch_size=batch, epoch_times=list(total), step_times=[list(s) for s in steps],
                      status=status, reason=None if status == "ok" else "out of memory: CUDA out of memory")
    w = doc["config"]["workload"]
    w.update(parallel=parallel, dp_devices=dp_devices, precision="fp32", lr_scaling=lr_scaling,
             warmup_epochs=0, link=link, link_peak_GBps=peak, comm_probe_steps=3)
    if status != "ok":
        return doc
    m = doc["measurements"]
    devices = workers * (dp_devices if parallel == "dp" else 1)
    per_device = batch if scaling == "weak" else batch // devices
    m.update(per_worker_batch=per_device * (dp_devices if parallel == "dp" else 1),
             global_batch=per_device * devices, steps_per_epoch=steps_per_epoch,
             samples_per_epoch=steps_per_epoch * per_device * devices,
             train_time_s=list(train), train_time_s_per_rank=[[t] * workers for t in train],
             phase_time_s={p: [[s * f for s in epoch] for epoch in steps]
                           for p, f in zip(PHASES, (0.1, 0.05, 0.25, 0.5, 0.1))},
             train_loss=list(loss or [2.0] * len(total)), train_accuracy=list(accuracy or [0.1] * len(total)),
             lr_target=0.1, gradient_bytes=gradient_bytes, comm_probe=comm, comm_profile=profile,
             dataset="synthetic", dataset_note="synthetic data was used", overhead_check=None, batch_probe=None)
    return doc
