"""Saving the trained model for `hpml evaluate` (the file's keys: contract/saved_model.py)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import List

import torch

from hpml.conf.workload.train import TrainConfig
from hpml.conf.workload.train_data import idx_dataset
from hpml.contract.jsonio import write_bytes_atomic
from hpml.contract.saved_model import MODEL_FILE, SAVED_MODEL_FORMAT, folder_name
from hpml.workloads.common.idx_images import normalization


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
    mean, std = normalization(idx_dataset(cfg.dataset))
    payload = {
        "format": SAVED_MODEL_FORMAT,
        "state_dict": state,
        # image_size: the data's side (images are resized to it), then zero-padded by `padding` on each side
        "model": {"name": cfg.model, "num_classes": cfg.num_classes, "image_size": cfg.image_size,
                  "cifar_stem": cfg.cifar_stem, "in_channels": cfg.input_channels, "padding": cfg.fit_padding},
        "classes": [folder_name(name) for name in classes],
        "normalize": {"mean": list(mean), "std": list(std)},
        "hardware": hardware_name(device),
    }
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    return write_bytes_atomic(Path(point_dir) / MODEL_FILE, buffer.getvalue())  # never half a file
