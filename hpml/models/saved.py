"""The trained models a sweep kept: where they are, what a usable one holds, and the network rebuilt from it.

A saved model is points/<n>/model.pt (contract.saved_model), found anywhere under the folder given (a sweep
or a folder of sweeps); files under points/<n>/attempts/ (earlier attempts moved aside by `hpml resume`) are
not the point's model and are skipped. It is read with torch.load(weights_only=True): tensors and plain
values only, never arbitrary pickled code; and only if it is a regular file (contract.files: a FIFO would
block the read, a device never end; a directory named model.pt is listed too, as not a regular file).

What it records is checked before anything is built or run (check_saved): image_size within
[MIN_IMAGE_SIZE, MAX_IMAGE_SIZE] (contract.limits; 1 is no input a network takes, 200000 would fill the
memory), 2 to MAX_CLASSES distinct class names, finite mean and std > 0, a state_dict of tensors.

The network is rebuilt by models.build.build_classifier, the one builder the train workload trains with, so
the evaluated architecture, CIFAR stem included, is the trained one by construction.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List

import torch

from hpml.contract.files import NotReadable, one_line, open_regular
from hpml.contract.limits import MAX_CLASSES, MAX_IMAGE_SIZE, MIN_IMAGE_SIZE
from hpml.contract.saved_model import MODEL_FILE, SAVED_MODEL_FORMAT
from hpml.contract.sweep_layout import POINTS_DIR
from hpml.models.build import build_classifier


class SavedModelError(Exception):
    """A model.pt that cannot be evaluated; the report lists it with this one line."""


@dataclass(frozen=True)
class ModelSpec:
    """The architecture a saved model's "model" entry names."""

    model: str
    num_classes: int
    cifar_stem: bool
    in_channels: int = 3  # 1: a grayscale data set (Fashion-MNIST, MNIST)


@dataclass
class SavedModel:
    path: Path
    point: str  # the point's folder relative to the folder searched, e.g. "points/3" or "h100/points/3"
    spec: ModelSpec
    image_size: int
    padding: int  # zero pixels added on each side after the resize to image_size
    classes: List[str]
    mean: List[float]
    std: List[float]
    hardware: str
    state_dict: Dict[str, torch.Tensor]


def find_saved_models(root: Path) -> List[Path]:
    """Every <...>/points/<n>/model.pt under root, in order of path (points by number); whatever it is (a FIFO,
    a directory): load_saved says why one is not a model."""
    found = []
    for folder, folders, files in os.walk(root):
        here = Path(folder)
        if MODEL_FILE in files + folders and here.name.isdigit() and here.parent.name == POINTS_DIR:
            found.append(here / MODEL_FILE)
    return sorted(found, key=lambda p: (str(p.parent.parent), int(p.parent.name)))


def _numbers(value: Any, count: int) -> bool:
    return (isinstance(value, list) and len(value) == count
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value))


def _int_in(value: Any, low: int, high: int) -> bool:
    return type(value) is int and low <= value <= high


def _model_errors(model: Any) -> List[str]:
    if not (isinstance(model, dict) and isinstance(model.get("name"), str) and model.get("name")
            and isinstance(model.get("cifar_stem"), bool)):
        return ["model: expected {name, num_classes, image_size, cifar_stem}"]
    errors = []
    if not _int_in(model.get("num_classes"), 2, MAX_CLASSES):
        errors.append(f"model: num_classes={model.get('num_classes')!r}; expected an integer in [2, {MAX_CLASSES}]")
    if not _int_in(model.get("image_size"), MIN_IMAGE_SIZE, MAX_IMAGE_SIZE):
        errors.append(f"model: image_size={model.get('image_size')!r}; expected an integer in "
                      f"[{MIN_IMAGE_SIZE}, {MAX_IMAGE_SIZE}]")
    if model.get("in_channels", 3) not in (1, 3) or type(model.get("in_channels", 3)) is not int:
        errors.append(f"model: in_channels={model.get('in_channels')!r}; expected 1 (grayscale) or 3 (RGB)")
    if not _int_in(model.get("padding", 0), 0, MAX_IMAGE_SIZE):
        errors.append(f"model: padding={model.get('padding')!r}; expected an integer in [0, {MAX_IMAGE_SIZE}]")
    return errors


def _classes_error(classes: Any, model: Any) -> str | None:
    if not (isinstance(classes, list) and all(isinstance(c, str) and c for c in classes)):
        return "classes: expected a list of class names"
    if len(set(classes)) != len(classes):
        twice = next(c for c in classes if classes.count(c) > 1)
        return f"classes: {twice!r} named more than once (folders are matched to classes by name)"
    if isinstance(model, dict) and len(classes) != model.get("num_classes"):
        return f"classes: {len(classes)} names for num_classes={model.get('num_classes')}"
    return None


def _state_dict_error(state_dict: Any) -> str | None:
    if not isinstance(state_dict, dict):
        return "state_dict: expected the model's weights"
    other = next((key for key, value in state_dict.items() if not isinstance(value, torch.Tensor)), None)
    if other is not None:
        return f"state_dict: {other!r} is a {type(state_dict[other]).__name__}, not a tensor"
    return None


def check_saved(saved: Any) -> List[str]:
    """What is wrong with a loaded model.pt's dict, one line each (empty: usable)."""
    if not isinstance(saved, dict):
        return [f"not a saved-model dict (a {type(saved).__name__})"]
    if saved.get("format") != SAVED_MODEL_FORMAT:
        return [f"format {saved.get('format')!r}; this hpml reads format {SAVED_MODEL_FORMAT}"]
    model = saved.get("model")
    errors = _model_errors(model) + [e for e in (_classes_error(saved.get("classes"), model),) if e]
    normalize = saved.get("normalize")
    channels = model.get("in_channels", 3) if isinstance(model, dict) and model.get("in_channels", 3) in (1, 3) else 3
    if not (isinstance(normalize, dict) and _numbers(normalize.get("mean"), channels)
            and _numbers(normalize.get("std"), channels) and all(s > 0 for s in normalize["std"])):
        errors.append(f"normalize: expected {{mean: [...], std: [...] > 0}}, {channels} finite number(s) each (one "
                      "per input channel)")
    if not isinstance(saved.get("hardware"), str):
        errors.append("hardware: expected the GPU model name or \"cpu\"")
    state_dict_error = _state_dict_error(saved.get("state_dict"))
    return errors + ([state_dict_error] if state_dict_error else [])


def load_saved(path: Path, root: Path) -> SavedModel:
    """The checked contents of one model.pt; SavedModelError with one line when it is unusable."""
    try:
        with open_regular(path) as f:
            saved = torch.load(f, map_location="cpu", weights_only=True)
    except NotReadable as error:
        raise SavedModelError(str(error)) from None
    except Exception as error:  # noqa: BLE001 - any failure to unpickle means the same: not a readable model
        raise SavedModelError(f"unreadable ({one_line(error)})")
    errors = check_saved(saved)
    if errors:
        raise SavedModelError("; ".join(errors))
    m, normalize = saved["model"], saved["normalize"]
    return SavedModel(path=path, point=str(path.parent.relative_to(root)),
                      spec=ModelSpec(m["name"], m["num_classes"], m["cifar_stem"], m.get("in_channels", 3)),
                      image_size=m["image_size"], padding=m.get("padding", 0),
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
        model = build_classifier(spec.model, num_classes=spec.num_classes, cifar_stem=spec.cifar_stem,
                                 in_channels=spec.in_channels)
        fit = model.load_state_dict(saved.state_dict, strict=False)
    except (ValueError, RuntimeError, KeyError) as error:  # unknown model name, a tensor of the wrong shape
        raise SavedModelError(f"cannot rebuild {describe(saved.spec)}: {_first_reason(error)}")
    if fit.missing_keys or fit.unexpected_keys:
        parts = [f"{len(keys)} {what} (first: {keys[0]})" for what, keys in
                 (("missing", fit.missing_keys), ("unexpected", fit.unexpected_keys)) if keys]
        raise SavedModelError(f"the weights do not fit {describe(saved.spec)}: " + ", ".join(parts))
    return model.to(device).eval()


def describe(spec: ModelSpec) -> str:
    return spec.model + (" (CIFAR stem)" if spec.cifar_stem else "") + (" (1 channel)" if spec.in_channels == 1 else "")
