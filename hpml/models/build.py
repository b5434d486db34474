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

from hpml.models.cifar_resnet import CifarResNet
from hpml.models.names import CIFAR_RESNET_DEPTHS, HPML_MODELS
from hpml.models.small_cnn import SmallCNN

_BUILDERS = {"hpml_cnn": SmallCNN,
             **{f"cifar_resnet{depth}": functools.partial(CifarResNet, depth) for depth in CIFAR_RESNET_DEPTHS}}


def build_classifier(name: str, num_classes: int, cifar_stem: bool = False, in_channels: int = 3) -> torch.nn.Module:
    """in_channels: the data set's (1 for Fashion-MNIST and MNIST: no image is made RGB to fit a model)."""
    if name in HPML_MODELS:
        if cifar_stem:
            raise ValueError(f"workload.cifar_stem=true needs a torchvision ResNet (resnet18, resnet50, ...), not "
                             f"{name} (hpml's cifar_resnet models have the CIFAR stem already)")
        return _BUILDERS[name](num_classes=num_classes, in_channels=in_channels)
    # imported here: importing torchvision imports torch._dynamo (over a second on a small CPU), which the launcher's
    # preflight of hpml's own models, run before every launch, never needs
    import torchvision

    model = torchvision.models.get_model(name, num_classes=num_classes)
    if cifar_stem:
        if not isinstance(model, torchvision.models.ResNet):
            raise ValueError(f"workload.cifar_stem=true needs a ResNet (resnet18, resnet50, ...), not "
                             f"workload.model={name}")
        model.conv1 = torch.nn.Conv2d(in_channels, model.conv1.out_channels, kernel_size=3, stride=1, padding=1,
                                      bias=False)
        model.maxpool = torch.nn.Identity()
    elif in_channels != 3:
        _first_conv_takes(model, in_channels)
    return model


def _first_conv_takes(model: torch.nn.Module, in_channels: int) -> None:
    """torchvision's models read RGB: their first convolution is rebuilt, as it was but for its input channels
    (freshly initialised: hpml trains from scratch)."""
    for parent in model.modules():
        for child_name, child in parent.named_children():
            if isinstance(child, torch.nn.Conv2d):
                setattr(parent, child_name, torch.nn.Conv2d(
                    in_channels, child.out_channels, child.kernel_size, stride=child.stride, padding=child.padding,
                    dilation=child.dilation, groups=child.groups, bias=child.bias is not None))
                return
    raise ValueError(f"{type(model).__name__} has no convolution to take {in_channels}-channel images")
