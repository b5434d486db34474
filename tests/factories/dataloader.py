"""Data-loader results (workloads/dataloader/) whose epoch times are chosen by the test."""

from __future__ import annotations

from typing import Any, Dict, Optional, Sequence

from tests.factories import envelope

DEFAULT_OPTIONS = {"pin_memory": False, "persistent_workers": False, "prefetch_factor": None}


def dataloader_result(point: int, epoch_time_s: Sequence[float], *, workers: Optional[int] = 0, pin: bool = False,
                      persistent: bool = False, prefetch: Optional[int] = None, placement: str = "host",
                      samples: int = 1000, dataset: str = "cifar10", sweep: str = "loader", repeat: int = 0,
                      first_batch_s: Optional[Sequence[float]] = None, gpus: Sequence[str] = (),
                      load: float = 1.0) -> Dict[str, Any]:
    """One point; epoch_time_s includes the warm-up epoch (index 0). workers=None with placement="device" is the
    device path. The config holds the keys as given (prefetch as written), the measurements as they ran (prefetch
    resolved as PyTorch does: 2 with workers and none given)."""
    device_path = placement == "device"
    workload = {"name": "dataloader", "device": "auto", "backend": "auto", "dataset": dataset, "data_root": "/d",
                "image_size": 32, "batch_size": 100, "epochs": len(epoch_time_s), "augment": True, "crop_padding": 4,
                "loader_workers": workers or 0, "pin_memory": pin, "persistent_workers": persistent,
                "prefetch_factor": prefetch, "data_placement": placement, "device_data_share": 0.5}
    doc = envelope(workload, point=point, sweep=sweep, repeat=repeat, gpus_per_node=1 if gpus else 0,
                   environment={"gpus": list(gpus), "device": "cuda" if gpus else "cpu"})
    resolved = None if not workers else (prefetch or 2)
    doc["measurements"] = {
        "dataset": dataset, "data_placement": placement, "device_type": "cuda" if gpus else "cpu",
        "loader": None if device_path else {"num_workers": workers, "pin_memory": pin,
                                            "persistent_workers": persistent, "prefetch_factor": resolved},
        "dataset_samples": samples, "batch_size": 100, "steps_per_epoch": samples // 100,
        "samples_per_epoch": samples,
        "epoch_time_s": list(epoch_time_s), "epoch_time_s_per_rank": [[t] for t in epoch_time_s],
        "first_batch_s_per_rank": [[t] for t in (first_batch_s or [0.01] * len(epoch_time_s))],
        "wait_s": [[0.001] for _ in epoch_time_s], "setup_s_per_rank": [0.5], "cold_epochs": [0],
        "cpus_per_rank": [2], "load_average": {"before": [load, 1.0, 1.0], "after": [load + 0.5, 1.0, 1.0]},
    }
    doc["derived"] = {"epoch_time_mean_s": 1e9}  # wrong on purpose: the analysis must recompute
    return doc
