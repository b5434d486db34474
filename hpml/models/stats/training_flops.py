"""Model FLOPs of one training sample, forward and backward: the numerator of MFU (contract/step_efficiency.py).

torch.utils.flop_counter.FlopCounterMode over one training step of the model on the meta device (shapes only:
no memory, no arithmetic): forward, cross-entropy loss, backward. It counts matrix products only (convolution,
linear, matmul, attention: 2 FLOPs per multiply-accumulate), so elementwise work (activations, BatchNorm, the
loss, the optimizer) is not in it, as in torchtitan's and Lightning's MFU. Backward counts what autograd runs: for
each weighted layer the weight gradient (as many FLOPs as its forward) and, for every layer but those whose input
needs no gradient (the first one), the input gradient (as many again). So a network of one Linear(i, o) counts
2io (forward) + 2io (weight gradient) = 4io per sample, not 6io; deeper networks approach 3x the forward.

Counted on a fresh model (no activation checkpointing: recomputation is not model FLOPs), once per model and
input shape (kept on disk for later processes: contract/model_answers.py), at a batch of 2 (BatchNorm in training needs more than one sample) divided by 2: every
counted operation is linear in the batch.
"""

from __future__ import annotations

import functools
from typing import Sequence, Tuple

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from hpml.contract.model_answers import answer_path, model_code_version, read_answer, write_answer

COUNT_BATCH = 2


def training_step_flops(model: nn.Module, input_shape: Sequence[int], num_classes: int,
                        batch: int = COUNT_BATCH) -> int:
    """FLOPs FlopCounterMode counts over forward + loss + backward of `model` on a (batch, *input_shape) input of
    the model's device (the meta device: no arithmetic runs), in training mode."""
    params = [p for p in model.parameters() if p.is_floating_point()]
    device = params[0].device if params else torch.device("meta")
    model.train()
    images = torch.zeros((batch, *input_shape), device=device)
    labels = torch.zeros((batch,), dtype=torch.long, device=device).clamp_(max=num_classes - 1)
    counter = FlopCounterMode(display=False)
    with counter:
        loss = nn.functional.cross_entropy(model(images), labels)
        loss.backward()
    return counter.get_total_flops()


@functools.lru_cache(maxsize=16)
def training_flops_per_sample(name: str, num_classes: int, cifar_stem: bool, input_shape: Tuple[int, ...]) -> int:
    """Model FLOPs of one sample's forward and backward for a model by name (hpml's or torchvision's): the count
    an earlier process kept (contract/model_answers.py), else counted now and kept."""
    path = answer_path("training_flops", [name, num_classes, cifar_stem, list(input_shape)], _code_version())
    kept = read_answer(path)
    if isinstance(kept, int) and not isinstance(kept, bool) and kept >= 0:
        return kept
    flops = counted_training_flops_per_sample(name, num_classes, cifar_stem, input_shape)
    write_answer(path, flops)
    return flops


def counted_training_flops_per_sample(name: str, num_classes: int, cifar_stem: bool,
                                      input_shape: Tuple[int, ...]) -> int:
    """training_flops_per_sample, counted: the model built on the meta device, FlopCounterMode over its forward and
    backward (what that costs a worker: docs/decisions.md)."""
    from hpml.models.stats.layers import meta_model

    # the model as the workload built it: its first layer takes the data's channels (1 for Fashion-MNIST)
    model = meta_model(name, num_classes, cifar_stem, in_channels=input_shape[0])
    return training_step_flops(model, input_shape, num_classes) // COUNT_BATCH


@functools.lru_cache(maxsize=None)
def _code_version() -> str:
    """What a count depends on beside its arguments: torch's and torchvision's versions and hpml's model code (this
    module among it)."""
    return model_code_version()
