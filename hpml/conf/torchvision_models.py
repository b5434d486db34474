"""The classification model names of the installed torchvision, for preflight checks of `workload.model`.

Importing torchvision takes seconds, so the list is cached per torchvision version (contract/cache_dir.py), keeping
a launch fast; within one process it is read once.
"""

from __future__ import annotations

import functools
import json
from typing import FrozenSet, Optional

from hpml.conf.validation import named
from hpml.contract.cache_dir import hpml_cache_dir
from hpml.models.names import HPML_MODELS


@functools.lru_cache(maxsize=None)
def torchvision_models() -> FrozenSet[str]:
    from importlib.metadata import version

    cache = hpml_cache_dir() / f"torchvision-{version('torchvision')}-models.json"
    try:
        return frozenset(json.loads(cache.read_text()))
    except (OSError, ValueError):
        pass
    import torchvision

    names = sorted(torchvision.models.list_models(module=torchvision.models))
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps(names))
    except OSError:  # a read-only home only costs the next launch the import
        pass
    return frozenset(names)


def model_problem(model: str) -> Optional[str]:
    """Why `workload.model` cannot be built by models.build_classifier (hpml's own or torchvision's), or None."""
    if model in HPML_MODELS or model in torchvision_models():
        return None
    return (f"workload.model={named(model)}: neither one of hpml's models ({', '.join(HPML_MODELS)}) nor a torchvision "
            f"classification model (e.g. resnet18, resnet50, mobilenet_v3_small)")
