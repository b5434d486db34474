"""The names of hpml's own classification models (stdlib only: the launcher's preflight checks a
`workload.model` without importing torch; models/__init__.py builds them)."""

from __future__ import annotations

from typing import Dict, Optional

# He et al. 2016's five CIFAR ResNet depths (6n + 2), and 8 (n = 1): the same architecture for tests on a CPU
CIFAR_RESNET_DEPTHS = (8, 20, 32, 44, 56, 110)

# The input side a model was designed for, where it has one: He et al.'s CIFAR ResNets map 32x32 to 32/16/8 feature
# maps. A data set of smaller images (Fashion-MNIST's 28x28) is zero-padded to it, evenly on every side, as LeNet-5
# padded MNIST's 28x28 to 32x32; a model not listed takes the data set's own size.
DESIGNED_INPUT_SIDE: Dict[str, int] = {f"cifar_resnet{depth}": 32 for depth in CIFAR_RESNET_DEPTHS}


def designed_side(model: str) -> Optional[int]:
    """The input side `model` was designed for, or None when it takes any size."""
    return DESIGNED_INPUT_SIDE.get(model)


# name -> what it is, for error messages and docs
HPML_MODELS: Dict[str, str] = {
    "hpml_cnn": "three 3x3 convolutions (32, 64, 128 channels, batch norm, ReLU, 2 max-pools) and one linear "
                "layer: a real CNN small enough to train to a target on a CPU in seconds (digits, CI)",
    **{f"cifar_resnet{depth}": f"He et al. 2016's CIFAR ResNet-{depth} (6n+2 layers, 16/32/64 channels, zero-padded "
                               "identity shortcuts: option A; models/cifar_resnet.py)" for depth in CIFAR_RESNET_DEPTHS},
}
