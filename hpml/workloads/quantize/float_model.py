"""The float model the stages start from: trained here on the CPU (seeded), or a model.pt kept by a train run
(contract/saved_model.py), read and rebuilt as `hpml evaluate` does (models/saved.py).

Training: plain SGD with momentum and weight decay at a constant rate, cross-entropy, the training split shuffled
per epoch by a generator seeded with the run's seed (which also seeds the initial weights), no augmentation (the
digits must not be mirrored). Every seed is another float model; the report's spread over seeds is the spread
of whole train-then-quantize runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional

import torch
from torch import nn

from hpml.conf.workload.quantize import QuantizeConfig
from hpml.contract.collector import cycle_collection_paused
from hpml.contract.idx_data import IDX_DATASETS
from hpml.models.hw5_cnn import HW5CNN
from hpml.workloads.common.idx_images import normalization
from hpml.workloads.common.timing import wall_s
from hpml.workloads.quantize.data import Split, idx_padding


@dataclass
class FloatModel:
    model: nn.Module
    mean: List[float]  # the normalization the model was trained with
    std: List[float]
    source: str  # "trained" | "loaded"
    padding: int  # zero pixels a side the data's images get before the model (a 28x28 data set for a 32x32 model)
    record: Dict  # result.json's measurements.model (and training, when trained here)


def build(name: str, num_classes: int, in_channels: int = 3) -> nn.Module:
    if name == "hw5_cnn":
        return HW5CNN(num_classes, in_channels)
    from hpml.models.build import build_classifier

    return build_classifier(name, num_classes=num_classes, in_channels=in_channels)


def parameter_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def train(model: nn.Module, split: Split, cfg: QuantizeConfig, seed: int) -> Dict[str, List[float]]:
    """Trains in place; returns the per-epoch mean training loss and wall-clock seconds."""
    with cycle_collection_paused():  # the optimizer's first param group imports torch._dynamo (startup.py)
        optimizer = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=cfg.momentum,
                                    weight_decay=cfg.weight_decay)
    loss_fn = nn.CrossEntropyLoss()
    order_gen = torch.Generator().manual_seed(seed)
    losses, seconds = [], []
    model.train()
    for _ in range(cfg.epochs):
        start, total, batches = wall_s(), 0.0, 0
        order = torch.randperm(len(split.images), generator=order_gen)
        for first in range(0, len(order), cfg.batch_size):
            index = order[first:first + cfg.batch_size]
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(split.images[index]), split.labels[index])
            loss.backward()
            optimizer.step()
            total, batches = total + float(loss.detach()), batches + 1
        losses.append(total / batches)
        seconds.append(wall_s() - start)
    model.eval()
    return {"epoch_loss": losses, "epoch_s": seconds}


def untrained(cfg: QuantizeConfig, seed: int) -> FloatModel:
    """A freshly initialized model (weights from the seed), to be trained by `train`."""
    torch.manual_seed(seed)
    idx = IDX_DATASETS.get(cfg.dataset.value)
    model = build(cfg.model, cfg.num_classes, in_channels=1 if idx else 3)
    mean, std = normalization(idx)
    return FloatModel(model, list(mean), list(std), "trained", idx_padding(cfg),
                      {"name": cfg.model, "parameters": parameter_count(model), "source": "trained",
                       "model_path": None, "trained_on": "cpu"})


def loaded(path: Optional[str]) -> FloatModel:
    """The model a train run kept (the preflight already checked the file and its model name)."""
    from hpml.models.saved import load_saved, rebuild

    file = Path(path)
    saved = load_saved(file, file.parent)
    model = rebuild(saved, torch.device("cpu"))
    return FloatModel(model, saved.mean, saved.std, "loaded", saved.padding,
                      {"name": saved.spec.model, "parameters": parameter_count(model), "source": "loaded",
                       "model_path": str(file.resolve()), "trained_on": saved.hardware})
