"""Synthetic-benchmark results (workloads/synthetic/) whose per-rank iteration times are chosen by the test."""

from __future__ import annotations

from typing import Optional, Sequence


def synthetic_result(point: int, times: Sequence[Sequence[float]], *, host_times=None, sweep: str = "study",
                  scaling: str = "weak", batch_size: int = 10, batches_per_iter: int = 10,
                  data_parallel: str = "ddp", fusion: float = 64.0, backend: str = "gloo", nccl_algo: str = "auto",
                  fp16: bool = False, price_name: str = "none", gpu_hour_usd: Optional[float] = None,
                  epoch_images: int = 1000, train_epochs: int = 90, status: str = "ok") -> dict:
    """A synthetic result (schema v1) whose per-rank device times per iteration are `times`."""
    world = len(times)
    per_worker = batch_size if scaling == "weak" else batch_size // world
    workload = {
        "name": "synthetic", "model": "resnet50", "num_classes": 1000, "image_size": 224, "batch_size": batch_size,
        "scaling": scaling, "num_warmup_batches": 10, "num_batches_per_iter": batches_per_iter,
        "num_iters": len(times[0]), "lr": 0.01, "data_parallel": data_parallel, "fusion_threshold_mb": fusion,
        "fp16_allreduce": fp16, "backward_passes_per_step": 1, "device": "auto", "backend": backend,
        "nccl_algo": nccl_algo, "epoch_images": epoch_images, "train_epochs": train_epochs,
        "price_name": price_name, "gpu_hour_usd": gpu_hour_usd,
    }
    return {
        "schema_version": 1,
        "identity": {"sweep": sweep, "point": point, "repeat": 0, "seed": 0, "workload": "synthetic"},
        "status": status, "reason": None if status == "ok" else "out of memory: ...",
        "config": {"sweep": {"name": sweep, "root": "sweeps", "dir": f"sweeps/{sweep}", "wait": True,
                             "repeat": 0, "seed": 0},
                   "resources": {"nodes": 1, "workers_per_node": world, "gpus_per_node": world,
                                 "cpus_per_worker": 1, "mem_gb": 0, "time_min": 30},
                   "cluster": {"kind": "local", "max_parallel": 1, "poll_s": 1.0},
                   "workload": workload},
        "environment": {"world_size": world, "backend": "nccl" if backend == "auto" else backend,
                        "device": "cuda", "hosts": ["node0"], "ranks": [], "gpus": [], "env": {}},
        "timing": {"iteration": "fake: chosen by the test"},
        "measurements": {
            "per_worker_batch": per_worker, "global_batch": per_worker * world,
            "images_per_iteration_per_rank": per_worker * batches_per_iter,
            "num_warmup_batches": 10, "num_batches_per_iter": batches_per_iter, "num_iters": len(times[0]),
            "backward_passes_per_step": 1,
            "iteration_time_s_per_rank": [list(t) for t in times],
            "host_iteration_time_s_per_rank": [list(t) for t in (host_times or times)],
            "loop_time_s_per_rank": [sum(t) for t in times], "warmup_time_s_per_rank": [1.0] * world,
            "nccl_algo_env": None if nccl_algo == "auto" else nccl_algo,
        } if status == "ok" else {},
        "derived": {},  # the analysis must not read it
        "started_at": "2026-01-01T00:00:00+00:00", "finished_at": "2026-01-01T00:01:00+00:00",
    }
