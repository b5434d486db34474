"""Every classification model hpml trains, evaluates or analyses, built by name: hpml's own (models/names.py)
and torchvision's. One builder, so a model saved by the train workload is rebuilt identically by
`hpml evaluate`.

    model = build_classifier("resnet18", num_classes=10, cifar_stem=True)

`cifar_stem=True` (ResNets only) replaces the ImageNet stem (7x7 stride-2 conv + 3x3 stride-2 max-pool, which
shrink a 32x32 image to 8x8 before the first block) by a 3x3 stride-1 conv and no pool: the ResNet-18 of the
CIFAR-10 literature (He et al. 2016, sec. 4.2 style stem; e.g. kuangliu/pytorch-cifar), with torchvision's
blocks unchanged.
"""

from __future__ import annotations

import functools

import torch
import torchvision

from hpml.models.cifar_resnet import CifarResNet
from hpml.models.names import CIFAR_RESNET_DEPTHS, HPML_MODELS
from hpml.models.small_cnn import SmallCNN

_BUILDERS = {"hpml_cnn": SmallCNN,
             **{f"cifar_resnet{depth}": functools.partial(CifarResNet, depth) for depth in CIFAR_RESNET_DEPTHS}}


def build_classifier(name: str, num_classes: int, cifar_stem: bool = False) -> torch.nn.Module:
    if name in HPML_MODELS:
        if cifar_stem:
            raise ValueError(f"workload.cifar_stem=true needs a torchvision ResNet (resnet18, resnet50, ...), not "
                             f"{name} (hpml's cifar_resnet models have the CIFAR stem already)")
        return _BUILDERS[name](num_classes=num_classes)
    model = torchvision.models.get_model(name, num_classes=num_classes)
    if cifar_stem:
        if not isinstance(model, torchvision.models.ResNet):
            raise ValueError(f"workload.cifar_stem=true needs a ResNet (resnet18, resnet50, ...), not "
                             f"workload.model={name}")
        model.conv1 = torch.nn.Conv2d(3, model.conv1.out_channels, kernel_size=3, stride=1, padding=1, bias=False)
        model.maxpool = torch.nn.Identity()
    return model
