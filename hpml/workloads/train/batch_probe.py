"""The largest per-device batch that fits: double the batch until a training step runs out of memory.

One process, before training (workload.max_batch_probe > 0): from workload.batch_size (per device),
doubling up to max_batch_probe, each size runs two full steps (forward, loss, backward, optimizer step:
the second with momentum buffers allocated) of a plain copy of the model on one device, with the run's
precision and memory format. The first size that raises torch.OutOfMemoryError ends the probe. Measured
on a plain model: DDP's gradient buckets (about the gradient bytes again) and DataParallel's replicas on
GPU 0 are not included, so a batch right at the limit may still not fit in the real run.
"""

from __future__ import annotations

import gc
from typing import Callable, Dict, List, Optional

import torch

from hpml.workloads.common.worker import is_out_of_memory


def _cleanup(device: torch.device) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def probe_max_batch(build_model: Callable[[], torch.nn.Module], make_batch: Callable[[int], tuple],
                    device: torch.device, start: int, limit: int, autocast: Callable[[], object],
                    lr: float = 0.01) -> Dict[str, object]:
    """Tries start, 2*start, ... <= limit; returns every size tried, whether it fit, its peak memory."""
    model = build_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    tried: List[Dict[str, object]] = []
    batch = start
    while batch <= limit:
        fits, peak = True, None
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        try:
            images, labels = make_batch(batch)
            for _ in range(2):
                with autocast():
                    loss = loss_fn(model(images), labels)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
            del images, labels, loss
            if device.type == "cuda":
                torch.cuda.synchronize(device)
                peak = torch.cuda.max_memory_allocated(device)
        except (torch.OutOfMemoryError, RuntimeError) as error:
            if not is_out_of_memory(error):
                raise
            fits = False
        optimizer.zero_grad(set_to_none=True)
        _cleanup(device)  # outside the except block: its traceback no longer holds the step's tensors
        tried.append({"batch": batch, "fits": fits, "peak_memory_bytes": peak})
        if not fits:
            break
        batch *= 2
    del model, optimizer
    _cleanup(device)
    fitting = [t["batch"] for t in tried if t["fits"]]
    first_oom: Optional[int] = next((t["batch"] for t in tried if not t["fits"]), None)
    return {"start": start, "limit": limit, "tried": tried,
            "largest_fitting": max(fitting) if fitting else None, "first_oom": first_oom}
