"""Gradient accumulation over equal chunks of one step (workload.accumulation_chunks = c > 1).

Why: batch augmentation multiplies a step's samples by M (M x B per step); splitting the step into c chunks keeps
the activations of M x B / c samples in memory at a time, while the optimizer still makes one update per step.

The same update as the whole step: the step's loss is the mean over its M x B samples, i.e. the sum over the
chunks of (chunk mean) / c when the chunks are equal (the schema requires c to divide M x B), so each chunk's
backward runs on loss / c and the gradients add up in .grad before the one optimizer step (momentum and weight
decay then act once, on the summed gradient, exactly as for the whole step). Not the same: BatchNorm in training
mode normalizes each chunk with that chunk's own mean and variance, and its running statistics take c momentum
updates per step instead of one; so with BatchNorm the update differs slightly (docs/decisions.md).

Which samples a chunk holds: chunk k takes rows k, k + c, k + 2c, ... of the step. The M copies of a sample sit in
consecutive rows (augment.py, copies.py), so for c dividing M every chunk holds M / c copies of every one of the B
samples: its BatchNorm statistics come from the same B distinct images as the whole step's, rather than from B / c
of them with all their copies (contiguous chunks). For M = 1 a chunk is every c-th sample of the batch.

Under DDP every chunk but the last runs in no_sync(): the gradients are all-reduced once per step, after the
last chunk's backward (all-reducing each chunk's would give the same sum at c times the communication).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import ContextManager, Iterator

import torch


@dataclass(frozen=True)
class Chunk:
    images: torch.Tensor
    labels: torch.Tensor
    last: bool  # the step's last chunk: its backward all-reduces the accumulated gradients (DDP)


def chunks(images: torch.Tensor, labels: torch.Tensor, count: int,
           memory_format: torch.memory_format = torch.contiguous_format) -> Iterator[Chunk]:
    """The step's samples as `count` equal chunks, chunk k being rows k::count (the whole step for count 1)."""
    if count == 1:
        yield Chunk(images, labels, last=True)
        return
    for k in range(count):
        # a strided view; the model's convolutions want dense memory in the run's format: one copy per chunk
        yield Chunk(images[k::count].contiguous(memory_format=memory_format), labels[k::count], last=k == count - 1)


def gradient_sync(model: torch.nn.Module, last: bool) -> ContextManager:
    """DDP's no_sync() for every chunk but the last (no all-reduce until the step's gradients are complete);
    nothing to hold back for a bare model or DataParallel (they have no no_sync)."""
    if last or not hasattr(model, "no_sync"):  # torch.compile's wrapper passes no_sync through to DDP
        return contextlib.nullcontext()
    return model.no_sync()
