"""Horovod-style data parallelism on torch.distributed (no Horovod needed).

    optimizer = DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), fusion_threshold_mb=64)
    broadcast_parameters(model, root=0)
    broadcast_optimizer_state(optimizer, root=0)
    for x, y in loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()   # gradients are all-reduced while backward runs
        optimizer.step()                  # waits for the all-reduces (synchronize), then steps

What is kept from Horovod's torch DistributedOptimizer:
  - a hook on every parameter (post-accumulate-grad) counts backward passes; on the
    `backward_passes_per_step`-th the gradient is ready; earlier passes only accumulate into .grad locally;
  - tensor fusion: gradients are packed into buckets of at most `fusion_threshold_mb` (Horovod's
    HOROVOD_FUSION_THRESHOLD, 64 MB by default; 0 = no fusion, one all-reduce per gradient; a gradient
    larger than the threshold gets a bucket of its own);
  - a bucket is all-reduced asynchronously as soon as its gradients are ready, while backward goes on;
  - the result is the average over ranks; `compression_fp16` sends fp16 and casts back (Compression.fp16);
  - `synchronize()` waits for the outstanding all-reduces; `step()` calls it unless you already did
    (e.g. to clip gradients between the two).

Where it differs, and why:
  - Buckets are fixed at construction, in reverse parameter order (the order backward usually produces
    gradients), and launched strictly in that order. Horovod fuses whatever is ready because its background
    coordinator makes every rank agree on an order; without one, a fixed order is what keeps every rank
    issuing the same collectives in the same sequence (DDP does the same).
  - The average divides before the all-reduce, as DDP does (and its fp16 hook), so an fp16 sum cannot
    overflow; Horovod divides after.
  - A parameter that got no gradient this step is all-reduced as zeros (so every rank runs the same
    collectives) and gets the average of the others; Horovod does the same in synchronize().
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional

import torch
import torch.distributed as dist

MB = 1024 * 1024  # Horovod's fusion threshold counts MiB: 64 MB = 67108864 bytes


def plan_buckets(params: List[torch.Tensor], threshold_bytes: int) -> List[List[torch.Tensor]]:
    """Fusion buckets in reverse parameter order, each at most threshold_bytes (a larger gradient alone);
    a bucket holds one dtype on one device, so that it can be flattened into one buffer."""
    buckets: List[List[torch.Tensor]] = []
    current: List[torch.Tensor] = []
    size = 0
    for param in reversed(params):
        nbytes = param.numel() * param.element_size()
        fits = size + nbytes <= threshold_bytes
        same_kind = not current or (param.dtype, param.device) == (current[0].dtype, current[0].device)
        if current and not (fits and same_kind):
            buckets.append(current)
            current, size = [], 0
        current.append(param)
        size += nbytes
    if current:
        buckets.append(current)
    return buckets


@dataclass
class _Bucket:
    params: List[torch.Tensor]
    ready: int = 0  # gradients of this bucket that are ready this step
    flat: Optional[torch.Tensor] = None  # the buffer being all-reduced
    work: Optional[dist.Work] = None

    @property
    def full(self) -> bool:
        return self.ready == len(self.params)


class DistributedOptimizer:
    """Wraps a torch optimizer: its parameters' gradients are averaged over ranks before each step."""

    def __init__(self, optimizer: torch.optim.Optimizer, fusion_threshold_mb: float = 64.0,
                 compression_fp16: bool = False, backward_passes_per_step: int = 1,
                 process_group: Optional[dist.ProcessGroup] = None):
        if fusion_threshold_mb < 0:
            raise ValueError(f"fusion_threshold_mb={fusion_threshold_mb} must be >= 0 (0: no fusion)")
        if backward_passes_per_step < 1:
            raise ValueError(f"backward_passes_per_step={backward_passes_per_step} must be >= 1")
        self.optimizer = optimizer
        self.compression_fp16 = compression_fp16
        self.backward_passes_per_step = backward_passes_per_step
        self.process_group = process_group
        self.world_size = dist.get_world_size(process_group)
        params = [p for group in optimizer.param_groups for p in group["params"] if p.requires_grad]
        threshold = int(fusion_threshold_mb * MB)
        self._buckets = [_Bucket(members) for members in plan_buckets(params, threshold)]
        self._bucket_of = {p: i for i, bucket in enumerate(self._buckets) for p in bucket.params}
        self._passes_left = {p: backward_passes_per_step for p in params}
        self._next_launch = 0  # buckets are launched in index order, the same on every rank
        self._synchronized = False
        self._hooks = [p.register_post_accumulate_grad_hook(self._gradient_ready) for p in params]

    # --- during backward -------------------------------------------------------------------------------

    def _gradient_ready(self, param: torch.Tensor) -> None:
        self._synchronized = False
        self._passes_left[param] -= 1
        if self._passes_left[param] > 0:
            return  # accumulate locally; all-reduce on the last backward pass of the step
        if self._passes_left[param] < 0:
            raise RuntimeError(f"a gradient was computed more than backward_passes_per_step="
                               f"{self.backward_passes_per_step} times before step()")
        self._buckets[self._bucket_of[param]].ready += 1
        while self._next_launch < len(self._buckets) and self._buckets[self._next_launch].full:
            self._launch_next()

    def _launch_next(self) -> None:
        bucket = self._buckets[self._next_launch]
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in bucket.params]
        flat = torch.cat([g.reshape(-1) for g in grads])
        if self.compression_fp16:
            flat = flat.to(torch.float16)
        flat.div_(self.world_size)  # average: divide first, then sum
        bucket.flat = flat
        bucket.work = dist.all_reduce(flat, group=self.process_group, async_op=True)
        self._next_launch += 1

    # --- before the step -------------------------------------------------------------------------------

    def synchronize(self) -> None:
        """Launch the buckets still waiting (gradients that never came count as zeros), wait for all of
        them, and write the averages into .grad."""
        while self._next_launch < len(self._buckets):
            self._launch_next()
        for bucket in self._buckets:
            bucket.work.wait()
            self._unpack(bucket)
            bucket.ready, bucket.flat, bucket.work = 0, None, None
        self._next_launch = 0
        self._passes_left = dict.fromkeys(self._passes_left, self.backward_passes_per_step)
        self._synchronized = True

    @staticmethod
    def _unpack(bucket: _Bucket) -> None:
        offset = 0
        for param in bucket.params:
            average = bucket.flat[offset:offset + param.numel()].view_as(param)
            offset += param.numel()
            if param.grad is None:
                param.grad = average.to(param.dtype).clone()
            else:
                param.grad.copy_(average)  # copy_ also casts fp16 back to the gradient's dtype

    def step(self, closure: Any = None) -> Any:
        if not self._synchronized:
            self.synchronize()
        self._synchronized = False
        return self.optimizer.step(closure)

    # --- the wrapped optimizer -------------------------------------------------------------------------

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.optimizer.zero_grad(set_to_none=set_to_none)

    @property
    def param_groups(self) -> List[Dict[str, Any]]:
        return self.optimizer.param_groups

    @property
    def state(self) -> Dict[Any, Any]:
        return self.optimizer.state

    def state_dict(self) -> Dict[str, Any]:
        return self.optimizer.state_dict()

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        self.optimizer.load_state_dict(state_dict)

    def remove_hooks(self) -> None:
        for hook in self._hooks:
            hook.remove()
        self._hooks = []


@torch.no_grad()
def broadcast_parameters(model: torch.nn.Module, root: int = 0,
                         process_group: Optional[dist.ProcessGroup] = None) -> None:
    """Give every rank root's parameters and buffers (e.g. BatchNorm statistics), in place."""
    for tensor in model.state_dict().values():  # state_dict's tensors share storage with the model's
        if isinstance(tensor, torch.Tensor):
            dist.broadcast(tensor, src=root, group=process_group)


def _to_cpu(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.cpu()
    if isinstance(value, dict):
        return {k: _to_cpu(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_to_cpu(v) for v in value)
    return value


def broadcast_optimizer_state(optimizer: torch.optim.Optimizer | DistributedOptimizer, root: int = 0,
                              process_group: Optional[dist.ProcessGroup] = None) -> None:
    """Give every rank root's optimizer state (momentum buffers, step counts, learning rates...).

    The state dict travels pickled, on the CPU (a one-off at start-up); load_state_dict then moves each
    tensor to its parameter's device, so ranks whose state is still empty are filled in too.
    """
    inner = optimizer.optimizer if isinstance(optimizer, DistributedOptimizer) else optimizer
    is_root = dist.get_rank() == root
    payload = [_to_cpu(inner.state_dict()) if is_root else None]
    dist.broadcast_object_list(payload, src=root, group=process_group)
    if not is_root:
        inner.load_state_dict(payload[0])
