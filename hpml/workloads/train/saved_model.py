"""Saving the trained model for `hpml evaluate` (the file's keys: contract/saved_model.py)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import List

import torch

from hpml.conf.workload.train import TrainConfig
from hpml.contract.jsonio import write_bytes_atomic
from hpml.contract.saved_model import MODEL_FILE, SAVED_MODEL_FORMAT
from hpml.workloads.common.cifar10 import CIFAR10_MEAN, CIFAR10_STD


def unwrapped(model: torch.nn.Module) -> torch.nn.Module:
    """The model inside DDP / DataParallel / torch.compile wrappers (their state_dict keys carry prefixes)."""
    while hasattr(model, "module") or hasattr(model, "_orig_mod"):
        model = getattr(model, "module", None) or getattr(model, "_orig_mod")
    return model


def hardware_name(device: torch.device) -> str:
    return torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"


def save_model(point_dir: Path, model: torch.nn.Module, cfg: TrainConfig, classes: List[str],
               device: torch.device) -> Path:
    state = {k: v.detach().cpu() for k, v in unwrapped(model).state_dict().items()}
    payload = {
        "format": SAVED_MODEL_FORMAT,
        "state_dict": state,
        "model": {"name": cfg.model, "num_classes": cfg.num_classes, "image_size": cfg.image_size,
                  "cifar_stem": cfg.cifar_stem},
        "classes": list(classes),
        "normalize": {"mean": list(CIFAR10_MEAN), "std": list(CIFAR10_STD)},
        "hardware": hardware_name(device),
    }
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    return write_bytes_atomic(Path(point_dir) / MODEL_FILE, buffer.getvalue())  # never half a file
