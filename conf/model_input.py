"""Whether a model takes the input size a workload gives it, asked before any point starts.

One forward on the meta device (no memory; well under a second, once per model and size in a launch) tells
what a point would otherwise find after its start-up: AlexNet's pooling at 32x32 ("Output size is too small"),
ViT's fixed 224 ("Wrong image height"). A meta kernel that torch lacks (NotImplementedError) proves nothing, so
it is no problem here. Imports torch; the launcher's preflight has loaded it already for the model names
(conf/torchvision_models.py imports torchvision).
"""

from __future__ import annotations

import functools
from typing import Optional

from conf.validation import named


@functools.lru_cache(maxsize=None)
def input_problem(model: str, image_size: int, num_classes: int, cifar_stem: bool = False) -> Optional[str]:
    """Why `model` cannot take a 3 x image_size x image_size input, or None if it can."""
    import torch

    from models.stats.layers import meta_model

    try:
        built = meta_model(model, num_classes, cifar_stem=cifar_stem)
    except Exception as error:  # noqa: BLE001 - a model the keys cannot build is said as such, not as a size
        return f"workload.model={named(model)} cannot be built with these keys ({_first_line(error)})"
    try:
        built(torch.empty(1, 3, image_size, image_size, device="meta"))
    except NotImplementedError:
        return None
    except Exception as error:  # noqa: BLE001 - any failure of the forward is the answer
        return (f"workload.image_size={image_size}: {named(model)} cannot run on a 3x{image_size}x{image_size} input "
                f"({_first_line(error)}); choose a workload.image_size the model takes (224 fits every "
                "torchvision model)")
    return None


def _first_line(error: Exception) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


__all__ = ["input_problem"]
