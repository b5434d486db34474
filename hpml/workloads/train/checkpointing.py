"""Activation checkpointing over a model's stages (workload.activation_checkpointing).

Each stage's forward runs under torch.utils.checkpoint.checkpoint(use_reentrant=False): autograd keeps only
the stage's input, and the stage's forward runs again in backward to rebuild what its backward needs. Peak
memory falls by roughly the activations inside the stages; the step pays about one more forward of them.

The stages (models/stages.py): a ResNet's residual stages `layer1`, `layer2`, ..., each one checkpoint
segment; or a `features` Sequential split into FEATURE_SEGMENTS segments of consecutive modules
(torch.utils.checkpoint.checkpoint_sequential). Anything else is refused in one line before the run (the
schema's preflight): checkpointing "the whole model" would save nothing.

The stage's `forward` is replaced on the instance, not the module wrapped, so parameter names (state_dict,
saved models, checkpoints) are the same with and without.

BatchNorm caveat: the recomputation runs each BatchNorm's forward a second time in training mode, so its running
statistics take two momentum updates per step instead of one (the batch statistics that the gradients use are
the same). Gradients are therefore equal with and without (tests/test_activation_checkpointing.py); evaluation
in eval mode sees slightly different running averages.
"""

from __future__ import annotations

import torch
from torch.utils.checkpoint import checkpoint, checkpoint_sequential

from hpml.models.stages import features_sequential, residual_stages

FEATURE_SEGMENTS = 4  # a `features` Sequential is cut into this many checkpointed runs of modules


def _checkpoint_module(module: torch.nn.Module) -> None:
    plain = module.forward

    def forward(*inputs):
        return checkpoint(plain, *inputs, use_reentrant=False)

    module.forward = forward


def _checkpoint_sequential(sequential: torch.nn.Sequential, segments: int) -> None:
    def forward(x):
        return checkpoint_sequential(sequential, min(segments, len(sequential)), x, use_reentrant=False)

    sequential.forward = forward


def checkpoint_stages(model: torch.nn.Module, model_name: str) -> int:
    """Puts every stage of `model` under activation checkpointing; returns how many segments there are."""
    stages = residual_stages(model)
    if stages:
        for stage in stages:
            _checkpoint_module(stage)
        return len(stages)
    features = features_sequential(model)
    if features is not None:
        _checkpoint_sequential(features, FEATURE_SEGMENTS)
        return min(FEATURE_SEGMENTS, len(features))
    raise ValueError(f"workload.activation_checkpointing=true: workload.model={model_name} has no stages to "
                     "checkpoint (residual stages layer1, layer2, ... or a `features` Sequential); set it to false")
