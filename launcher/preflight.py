"""Checks made before anything is submitted: each problem is one line that says what to change."""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Sequence

from conf.schema import HpmlConfig
from conf.workload_schemas import Dataset, TrainConfig

CIFAR10_FILES = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch", "batches.meta"]


def torchvision_models() -> set:
    """Classification model names of the installed torchvision. Importing torchvision takes seconds, so
    the list is cached per torchvision version (~/.cache/hpml/), keeping a launch fast."""
    from importlib.metadata import version

    cache = Path.home() / ".cache" / "hpml" / f"torchvision-{version('torchvision')}-models.json"
    try:
        return set(json.loads(cache.read_text()))
    except (OSError, ValueError):
        pass
    import torchvision

    names = sorted(torchvision.models.list_models(module=torchvision.models))
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps(names))
    except OSError:  # a read-only home only costs the next launch the import
        pass
    return set(names)


def data_problem(cfg: TrainConfig) -> str | None:
    """Why the configured data set is not on disk in torchvision's layout (it is never downloaded)."""
    if cfg.dataset == Dataset.cifar10:
        folder = Path(cfg.data_root) / "cifar-10-batches-py"
        absent = [name for name in CIFAR10_FILES if not (folder / name).is_file()]
        if absent:
            return (f"workload.data_root={cfg.data_root}: no CIFAR-10 there ({folder} lacks "
                    f"{', '.join(absent[:3])}{'...' if len(absent) > 3 else ''}); put torchvision's "
                    "cifar-10-python files there or use workload.dataset=synthetic")
    if cfg.dataset == Dataset.image_folder and not (Path(cfg.data_root) / "train").is_dir():
        return (f"workload.data_root={cfg.data_root}: no train/ folder of class sub-folders "
                "(torchvision ImageFolder layout)")
    return None


def config_problems(configs: Sequence[HpmlConfig]) -> List[str]:
    """Problems of the points' values that the schema alone cannot see, each reported once."""
    problems: List[str] = []
    models = None
    for config in configs:
        cfg = config.workload
        if isinstance(cfg, TrainConfig):
            models = models or torchvision_models()
            if cfg.model not in models:
                problems.append(f"workload.model={cfg.model}: not a torchvision classification model "
                                f"(e.g. resnet18, resnet50, mobilenet_v3_small)")
            problem = data_problem(cfg)
            if problem:
                problems.append(problem)
    return list(dict.fromkeys(problems))
