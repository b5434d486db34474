"""The held-out pass's batch in one CUDA graph (workload.cuda_graphs=true): forward, loss and counts captured once
and replayed for every full batch of every evaluation.

Why: with the training step graphed, an eager evaluation is what is left launching kernel by kernel, and at a
small per-GPU batch its forward is host-bound. A plain loop hides part of that behind the last training steps (its
evaluation's launches are queued while the GPU still runs them); hpml synchronizes there to time the epoch, so its
evaluation starts on an idle GPU. Measured in docs/results/tta_gpus_fashion_mnist/ ("The epoch's batches made ahead").

How: the model's own module (not DDP's wrapper: a forward without gradients does no collective) in eval mode;
three eager passes of the first full batch on a side stream first (PyTorch's recipe: cuDNN picks its algorithms,
the allocator settles); then the capture, on fixed input and label buffers, with autocast's weight-cast cache
off (a cached cast would be freed after the capture), adding (correct, loss sum) into a fixed totals tensor that
is zeroed before each pass. The weights and BatchNorm's running statistics are read where the training step updates
them in place, so one capture serves every later evaluation. A last batch of another size runs eagerly.
"""

from __future__ import annotations

from typing import Optional

import torch

from hpml.conf.workload.train import TrainConfig
from hpml.workloads.train.model import autocast

WARMUP_PASSES = 3  # eager forwards of the first batch before the capture (PyTorch's CUDA graphs notes use 3)


def add_counts(model: torch.nn.Module, images: torch.Tensor, labels: torch.Tensor, totals: torch.Tensor) -> None:
    """totals += (correct predictions, summed cross-entropy) of one batch: no host synchronization."""
    logits = model(images)
    loss = torch.nn.functional.cross_entropy(logits.float(), labels, reduction="sum")
    totals += torch.stack([(logits.argmax(1) == labels).sum().double(), loss.double()])


class EvalGraph:
    """One full held-out batch's forward, loss and counts, captured at the first evaluation and replayed after."""

    def __init__(self, batch: int, cfg: TrainConfig, device: torch.device):
        self.batch, self.cfg, self.device = batch, cfg, device
        self.totals = torch.zeros(2, dtype=torch.float64, device=device)  # correct, loss sum (what replays add to)
        self.graph: Optional[torch.cuda.CUDAGraph] = None
        self.images = self.labels = None

    def start_pass(self) -> None:
        self.totals.zero_()

    def add(self, model: torch.nn.Module, images: torch.Tensor, labels: torch.Tensor) -> None:
        """The batch's counts added to `totals`: a replay for a full batch, eagerly for a shorter last one."""
        module = getattr(model, "module", model)  # DDP's wrapped module: no collective in a forward without grad
        if labels.shape[0] != self.batch:
            add_counts(module, images, labels, self.totals)
            return
        if self.graph is None:
            self.capture(module, images, labels)
        self.images.copy_(images, non_blocking=True)
        self.labels.copy_(labels, non_blocking=True)
        self.graph.replay()

    def autocast(self):
        return autocast(self.cfg, self.device, captured=True)

    def capture(self, module: torch.nn.Module, images: torch.Tensor, labels: torch.Tensor) -> None:
        self.images, self.labels = images.clone(), labels.clone()  # clone keeps the memory format (channels_last)
        current = torch.cuda.current_stream(self.device)
        side = torch.cuda.Stream(device=self.device)
        side.wait_stream(current)
        with torch.cuda.stream(side), self.autocast():
            scratch = torch.zeros_like(self.totals)
            for _ in range(WARMUP_PASSES):
                add_counts(module, self.images, self.labels, scratch)
        current.wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        # thread_local: the telemetry sampler's or a loader's thread may allocate while this thread captures
        with torch.cuda.graph(self.graph, capture_error_mode="thread_local"), self.autocast():
            add_counts(module, self.images, self.labels, self.totals)
