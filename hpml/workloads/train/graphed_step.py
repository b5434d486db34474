"""The whole training step in one CUDA graph (workload.cuda_graphs=true): forward, loss, backward and SGD captured
once and replayed, so a step costs one graph launch instead of one launch per kernel (torch.cuda.graphs).

Static buffers: the batch is copied into fixed input tensors each step (on the device path a device-to-device
copy); the epoch's loss and accuracy sums are updated in place in fixed tensors; SGD is fused with its learning
rate in a device tensor (written before each replay, so the schedule still applies), and autocast's weight-cast
cache is off inside the capture (a cached cast would be freed after it). The first WARMUP_STEPS steps run eagerly
on a side stream (they are real steps of the epoch: PyTorch's recipe, so that cuDNN picks its algorithms, the
optimizer makes its momentum buffers and the allocator settles before capture). The next step is captured, then
replayed; every later step only replays. With compile=default the model's compiled (inductor's fused) kernels
are what is captured: the warm-up steps compile it, for the batch shape the capture then holds. What cannot be
captured here (DataParallel, fp16's scaler, gradient accumulation, activation checkpointing, compile modes that
replay torch's own graphs, a CPU) is refused when the config is validated (conf/workload/train.py,
cuda_graph_conflicts).

With DDP (parallel=ddp) the step's bucketed all-reduces are captured with it (NCCL collectives can be captured
since NCCL 2.9.6), following PyTorch's recipe for whole-network capture with DDP (CUDA semantics notes, "Usage with
DistributedDataParallel"): DDP is built on the side stream the warm-up and the capture run on (`ddp_stream`),
NCCL's asynchronous error handling is off in that worker (common/distributed.py), and 11 eager DDP steps run before
the capture, so that DDP has rebuilt its buckets and stopped its first-iteration bookkeeping. Every rank captures
the same step, so every replay is one collective launch on all of them.

Timing: a replay is one device interval; the phase clock marks it as "forward" and marks backward and optimizer
right after it (0 s), so phase tables of a graphed run read "forward" as the whole step. `capture_s` is the
capture's wall time (device synchronized before and after), shown apart from the steady step.
"""

from __future__ import annotations

import time
from typing import Callable, Iterator, Optional

import torch

from hpml.workloads.common.distributed import DistContext
from hpml.workloads.train.epochs import Stepper
from hpml.workloads.train.model import autocast
from hpml.workloads.train.phases import NullClock

WARMUP_STEPS = 3  # eager steps before capture (PyTorch's CUDA graphs notes use 3)
DDP_WARMUP_STEPS = 11  # with DDP: PyTorch's notes ask for at least 11 (DDP rebuilds its buckets after the first)

PHASE_NOTE = ("workload.cuda_graphs: each step is one replay of the captured step, timed as the phase 'forward'; "
              "'backward' and 'optimizer' read 0")


def graph_optimizer(model: torch.nn.Module, lr: float, momentum: float, weight_decay: float) -> torch.optim.SGD:
    """SGD, fused, its rate a device tensor: nothing in its step reads a value on the host."""
    rate = torch.tensor(lr, dtype=torch.float32, device=next(model.parameters()).device)
    return torch.optim.SGD(model.parameters(), lr=rate, momentum=momentum, weight_decay=weight_decay, fused=True)


class GraphedStepper(Stepper):
    """Stepper whose steps after the warm-up are replays of one captured step."""

    def __init__(self, model, optimizer, cfg, ctx: DistContext, lr_of_step: Callable[[int], float],
                 side: torch.cuda.Stream):
        super().__init__(model, optimizer, cfg, ctx, lr_of_step)
        self.graph: Optional[torch.cuda.CUDAGraph] = None
        self.static_images = self.static_labels = None
        self.capture_s: Optional[float] = None
        self.eager_steps = 0  # this process's (a resumed run starts at a later global step and warms up again)
        self.warmup_steps = DDP_WARMUP_STEPS if cfg.parallel.value == "ddp" else WARMUP_STEPS
        self.side = side  # the warm-up and the capture run on it (with DDP: the stream DDP was built on)

    def reset_sums(self) -> None:
        if getattr(self, "loss_sum", None) is None:  # first call: the fixed tensors the graph adds into
            super().reset_sums()
            return
        self.loss_sum.zero_()  # in place: the captured step holds these very tensors
        self.correct.zero_()
        self.samples = 0

    def autocast(self):
        return autocast(self.cfg, self.device, captured=True)

    def set_rate(self) -> None:
        self.lr = self.lr_of_step(self.global_step)
        for group in self.optimizer.param_groups:
            group["lr"].fill_(self.lr)  # a device write, queued before the replay that reads it

    def optimizer_step(self) -> None:
        self.set_rate()
        self.optimizer.step()
        self.global_step += 1

    def __call__(self, batches: Iterator, clock: NullClock) -> None:
        if self.graph is None and self.eager_steps < self.warmup_steps:
            self.eager_on_side_stream(batches, clock)
            self.eager_steps += 1
            return
        clock.begin_step()
        images, labels = next(batches)
        clock.loaded()
        if self.graph is None:
            self.capture(images, labels)
        self.static_images.copy_(images, non_blocking=True)
        self.static_labels.copy_(labels, non_blocking=True)
        clock.mark("h2d")
        self.set_rate()
        self.graph.replay()
        self.samples += labels.shape[0]
        self.global_step += 1
        for phase in ("forward", "backward", "optimizer"):
            clock.mark(phase)

    def eager_on_side_stream(self, batches: Iterator, clock: NullClock) -> None:
        self.side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(self.side):
            super().__call__(batches, clock)
        torch.cuda.current_stream(self.device).wait_stream(self.side)

    def capture(self, images: torch.Tensor, labels: torch.Tensor) -> None:
        """Captures one step on fixed buffers shaped like this batch (every batch has its shape: drop_last)."""
        torch.cuda.synchronize(self.device)
        began = time.perf_counter()
        self.static_images = torch.empty_like(images, memory_format=self.memory_format, device=self.device)
        self.static_labels = torch.empty_like(labels, device=self.device)
        self.static_images.copy_(images)
        self.static_labels.copy_(labels)
        self.optimizer.zero_grad(set_to_none=True)  # the capture's backward allocates the gradients it replays into
        samples = self.samples
        self.graph = torch.cuda.CUDAGraph()
        # thread_local: a loader's pin-memory thread may allocate while this thread captures
        with torch.cuda.graph(self.graph, stream=self.side, capture_error_mode="thread_local"):
            logits, loss = self.loss_of(self.static_images, self.static_labels)
            self.count(logits, loss, self.static_labels)
            loss.backward()
            self.optimizer.step()
        self.samples = samples  # count() ran once on the host while capturing; each replay adds its batch
        torch.cuda.synchronize(self.device)
        self.capture_s = time.perf_counter() - began


def ddp_stream(device: torch.device) -> torch.cuda.Stream:
    """A side stream that has seen all the work queued so far on the device's current stream: DDP is built, warmed
    up and captured on it (PyTorch's recipe for capturing DDP's backward)."""
    side = torch.cuda.Stream(device=device)
    side.wait_stream(torch.cuda.current_stream(device))
    return side
