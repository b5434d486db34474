"""The trained models a sweep kept: where they are, what a usable one holds, and the network rebuilt from it.

A saved model is points/<n>/model.pt (contract.saved_model), found anywhere under the folder given (a sweep
or a folder of sweeps); files under points/<n>/attempts/ (earlier attempts moved aside by `hpml resume`) are
not the point's model and are skipped. It is read with torch.load(weights_only=True): tensors and plain
values only, never arbitrary pickled code.

The network is rebuilt by models.build.build_classifier, the one builder the train workload trains with, so
the evaluated architecture, CIFAR stem included, is the trained one by construction.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List

import torch

from contract.saved_model import MODEL_FILE, SAVED_MODEL_FORMAT
from contract.sweep_layout import POINTS_DIR
from models.build import build_classifier


class SavedModelError(Exception):
    """A model.pt that cannot be evaluated; the report lists it with this one line."""


@dataclass(frozen=True)
class ModelSpec:
    """The architecture a saved model's "model" entry names."""

    model: str
    num_classes: int
    cifar_stem: bool


@dataclass
class SavedModel:
    path: Path
    point: str  # the point's folder relative to the folder searched, e.g. "points/3" or "h100/points/3"
    spec: ModelSpec
    image_size: int
    classes: List[str]
    mean: List[float]
    std: List[float]
    hardware: str
    state_dict: Dict[str, torch.Tensor]


def find_saved_models(root: Path) -> List[Path]:
    """Every <...>/points/<n>/model.pt under root, in order of path (points by number)."""
    found = []
    for folder, _, files in os.walk(root):
        here = Path(folder)
        if MODEL_FILE in files and here.name.isdigit() and here.parent.name == POINTS_DIR:
            found.append(here / MODEL_FILE)
    return sorted(found, key=lambda p: (str(p.parent.parent), int(p.parent.name)))


def _numbers(value: Any, count: int) -> bool:
    return (isinstance(value, list) and len(value) == count
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value))


def check_saved(saved: Any) -> List[str]:
    """What is wrong with a loaded model.pt's dict, one line each (empty: usable)."""
    if not isinstance(saved, dict):
        return [f"not a saved-model dict (a {type(saved).__name__})"]
    if saved.get("format") != SAVED_MODEL_FORMAT:
        return [f"format {saved.get('format')!r}; this hpml reads format {SAVED_MODEL_FORMAT}"]
    errors = []
    model = saved.get("model")
    if not (isinstance(model, dict) and isinstance(model.get("name"), str) and type(model.get("num_classes")) is int
            and type(model.get("image_size")) is int and model.get("image_size", 0) > 0
            and isinstance(model.get("cifar_stem"), bool)):
        errors.append("model: expected {name, num_classes, image_size > 0, cifar_stem}")
    classes = saved.get("classes")
    if not (isinstance(classes, list) and all(isinstance(c, str) for c in classes)):
        errors.append("classes: expected a list of class names")
    elif isinstance(model, dict) and len(classes) != model.get("num_classes"):
        errors.append(f"classes: {len(classes)} names for num_classes={model.get('num_classes')}")
    normalize = saved.get("normalize")
    if not (isinstance(normalize, dict) and _numbers(normalize.get("mean"), 3) and _numbers(normalize.get("std"), 3)
            and all(s > 0 for s in normalize["std"])):
        errors.append("normalize: expected {mean: [r, g, b], std: [r, g, b] > 0}")
    if not isinstance(saved.get("hardware"), str):
        errors.append("hardware: expected the GPU model name or \"cpu\"")
    if not isinstance(saved.get("state_dict"), dict):
        errors.append("state_dict: expected the model's weights")
    return errors


def load_saved(path: Path, root: Path) -> SavedModel:
    """The checked contents of one model.pt; SavedModelError with one line when it is unusable."""
    try:
        saved = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # noqa: BLE001 - any failure to unpickle means the same: not a readable model
        lines = str(error).strip().splitlines()
        raise SavedModelError(f"unreadable ({type(error).__name__}{': ' + lines[0][:200] if lines else ''})")
    errors = check_saved(saved)
    if errors:
        raise SavedModelError("; ".join(errors))
    m, normalize = saved["model"], saved["normalize"]
    return SavedModel(path=path, point=str(path.parent.relative_to(root)),
                      spec=ModelSpec(m["name"], m["num_classes"], m["cifar_stem"]), image_size=m["image_size"],
                      classes=list(saved["classes"]), mean=[float(v) for v in normalize["mean"]],
                      std=[float(v) for v in normalize["std"]], hardware=saved["hardware"],
                      state_dict=saved["state_dict"])


def _first_reason(error: Exception) -> str:
    """torch's load_state_dict errors open with a generic line ("Error(s) in loading state_dict for ResNet:");
    the first specific one follows."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return (lines[1] if len(lines) > 1 else lines[0]) if lines else type(error).__name__


def rebuild(saved: SavedModel, device: torch.device) -> torch.nn.Module:
    """The trained network on `device`, in eval mode; SavedModelError when the weights do not fit it."""
    spec = saved.spec
    try:
        model = build_classifier(spec.model, num_classes=spec.num_classes, cifar_stem=spec.cifar_stem)
        fit = model.load_state_dict(saved.state_dict, strict=False)
    except (ValueError, RuntimeError, KeyError) as error:  # unknown model name, a tensor of the wrong shape
        raise SavedModelError(f"cannot rebuild {describe(saved.spec)}: {_first_reason(error)}")
    if fit.missing_keys or fit.unexpected_keys:
        parts = [f"{len(keys)} {what} (first: {keys[0]})" for what, keys in
                 (("missing", fit.missing_keys), ("unexpected", fit.unexpected_keys)) if keys]
        raise SavedModelError(f"the weights do not fit {describe(saved.spec)}: " + ", ".join(parts))
    return model.to(device).eval()


def describe(spec: ModelSpec) -> str:
    return spec.model + (" (CIFAR stem)" if spec.cifar_stem else "")
