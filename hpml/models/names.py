"""The names of hpml's own classification models (stdlib only: the launcher's preflight checks a
`workload.model` without importing torch; models/__init__.py builds them)."""

from __future__ import annotations

from typing import Dict

# He et al. 2016's five CIFAR ResNet depths (6n + 2), and 8 (n = 1): the same architecture for tests on a CPU
CIFAR_RESNET_DEPTHS = (8, 20, 32, 44, 56, 110)

# name -> what it is, for error messages and docs
HPML_MODELS: Dict[str, str] = {
    "hpml_cnn": "three 3x3 convolutions (32, 64, 128 channels, batch norm, ReLU, 2 max-pools) and one linear "
                "layer: a real CNN small enough to train to a target on a CPU in seconds (digits, CI)",
    **{f"cifar_resnet{depth}": f"He et al. 2016's CIFAR ResNet-{depth} (6n+2 layers, 16/32/64 channels, zero-padded "
                               "identity shortcuts: option A; models/cifar_resnet.py)" for depth in CIFAR_RESNET_DEPTHS},
}
