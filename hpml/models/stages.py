"""A model's stages: the segments activation checkpointing (workloads/train/checkpointing.py) runs as units.

- ResNet-like models (torchvision's ResNets and ResNeXts, hpml's CIFAR ResNets): the residual stages `layer1`,
  `layer2`, ... (He et al.'s conv2_x..conv5_x);
- models whose body is one `features` Sequential (hpml_cnn, VGG, MobileNet, DenseNet, ...): that Sequential.
The launcher's preflight asks `stages_problem` before anything runs, building the model on PyTorch's meta
device (shapes only, no memory, no weights' initialization cost).
"""

from __future__ import annotations

from typing import List, Optional

import torch


def residual_stages(model: torch.nn.Module) -> List[torch.nn.Module]:
    """`layer1`, `layer2`, ... in order, as long as they exist."""
    stages, index = [], 1
    while isinstance(getattr(model, f"layer{index}", None), torch.nn.Module):
        stages.append(getattr(model, f"layer{index}"))
        index += 1
    return stages


def features_sequential(model: torch.nn.Module) -> Optional[torch.nn.Sequential]:
    """The model's `features` Sequential when it has one of two modules or more."""
    features = getattr(model, "features", None)
    return features if isinstance(features, torch.nn.Sequential) and len(features) >= 2 else None


def stages_problem(model_name: str, num_classes: int, cifar_stem: bool) -> Optional[str]:
    """Why workload.activation_checkpointing=true cannot apply to this model, or None."""
    from hpml.models.build import build_classifier

    with torch.device("meta"):
        model = build_classifier(model_name, num_classes=num_classes, cifar_stem=cifar_stem)
    if residual_stages(model) or features_sequential(model) is not None:
        return None
    return (f"workload.activation_checkpointing=true: workload.model={model_name} has no stages to checkpoint "
            "(residual stages layer1, layer2, ... or a `features` Sequential); set it to false")
