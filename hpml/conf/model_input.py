"""Whether a model takes the input size a workload gives it, asked before any point starts; and what that one
forward shows of the memory a training step keeps (train's step-memory check, conf/train_memory.py, reads it).

One forward on the meta device (no memory; well under a second, once per model and size in a launch) tells
what a point would otherwise find after its start-up: AlexNet's pooling at 32x32 ("Output size is too small"),
ViT's fixed 224 ("Wrong image height"). A meta kernel that torch lacks (NotImplementedError) proves nothing, so
it is no problem here. Imports torch, and torch imports torch._dynamo for the meta kernels: about 3 s of a
launch on a small CPU, for an answer that depends only on the model's code and the torch and torchvision versions.

So the answer is kept on disk (contract/model_answers.py: under `$HPML_CACHE_DIR`, else `$XDG_CACHE_HOME/hpml`, else
`~/.cache/hpml`), keyed by the arguments, those versions and a hash of hpml's model code and of this module, and a
later launch reads it without importing torch. Only a launch, dry run or resume that passed its preflight writes it (`save_meta_forwards`): a
refused launch writes nothing anywhere. A cache that cannot be read or written is no cache (the forward runs).
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Optional, Set, Tuple

from hpml.conf.validation import named
from hpml.contract.model_answers import answer_path, model_code_version, read_answer, write_answer


@dataclass(frozen=True)
class MetaForward:
    """What one forward of a 1 x C x S x S input through the model, built on the meta device, told."""

    problem: Optional[str]  # why the model cannot be built or cannot take the input; None if it can
    parameters: int = 0  # trainable parameters (their gradients and optimizer state are as many)
    state_bytes: int = 0  # bytes of every parameter and buffer (BatchNorm's running statistics) as built
    # Elements per sample of the leaf modules' outputs that autograd keeps for backward: each counted once (an
    # in-place ReLU writes into its BatchNorm's output), and only if an op saved it (ResNet's downsample output,
    # used once by the residual add, is freed at once). All of them are held together at the end of the forward.
    saved_leaf_outputs: int = 0
    # False: a meta kernel torch lacks stopped the forward; the count holds the layers before it (still a floor)
    complete: bool = True


_UNSAVED: Dict[Path, MetaForward] = {}  # computed in this process, written by save_meta_forwards


@functools.lru_cache(maxsize=None)
def meta_forward(model: str, image_size: int, num_classes: int, cifar_stem: bool = False,
                 channels: int = 3) -> MetaForward:
    """computed_meta_forward's answer, from the on-disk cache when an earlier launch kept it."""
    path = _cache_path((model, image_size, num_classes, cifar_stem, channels))
    kept = read_answer(path)
    try:
        return MetaForward(**kept)
    except TypeError:  # absent, unreadable or not ours: compute it
        pass
    answer = computed_meta_forward(model, image_size, num_classes, cifar_stem, channels)
    _UNSAVED[path] = answer
    return answer


def save_meta_forwards() -> None:
    """Writes this process's computed answers into the cache (atomically: a reader sees a whole file or none)."""
    for path, answer in list(_UNSAVED.items()):
        if write_answer(path, dataclasses.asdict(answer)):  # else a read-only or full home: computed again next time
            del _UNSAVED[path]


@functools.lru_cache(maxsize=None)
def _code_version() -> str:
    """What a meta forward's answer depends on beside its arguments: torch's and torchvision's versions, and the
    source of hpml's models and of this module."""
    return model_code_version(Path(__file__))


def _cache_path(arguments: Tuple[Any, ...]) -> Path:
    return answer_path("meta_forward", arguments, _code_version())


def computed_meta_forward(model: str, image_size: int, num_classes: int, cifar_stem: bool = False,
                          channels: int = 3) -> MetaForward:
    """The model built on the meta device (taking `channels` input channels: 1 for Fashion-MNIST) and one forward
    of a 1 x channels x image_size x image_size input, with
    autograd recording, what it saves for backward matched against the leaf modules' outputs.

    Leaf outputs, not every saved tensor: the meta device runs attention as its math decomposition, which saves
    the whole attention matrix where CUDA's fused kernels do not; leaf outputs (convolutions, norms, activations,
    linear layers) are saved alike on every device. Eval mode: no dropout masks, no auxiliary heads (a floor)."""
    import torch

    from hpml.models.stats.layers import _tensors, hooked_leaf_calls, meta_model

    try:
        built = meta_model(model, num_classes, cifar_stem=cifar_stem, in_channels=channels)
    except Exception as error:  # noqa: BLE001 - a model the keys cannot build is said as such, not as a size
        return MetaForward(f"workload.model={named(model)} cannot be built with these keys ({_first_line(error)})")
    state = [*built.parameters(), *built.buffers()]
    counted = dict(parameters=sum(p.numel() for p in built.parameters() if p.requires_grad),
                   state_bytes=sum(t.numel() * t.element_size() for t in state))
    image = torch.empty(1, channels, image_size, image_size, device="meta")
    not_activations = {_storage(t) for t in [*state, image]}
    outputs: Dict[int, Any] = {}  # storage -> a tensor on it (held, so that no storage is freed and its id reused)
    saved: Set[int] = set()

    def after(name, module, inputs, output) -> None:
        outputs.update((_storage(t), t) for t in _tensors(output) if _storage(t) not in not_activations)

    def pack(tensor):
        saved.add(_storage(tensor))
        return tensor

    try:
        with hooked_leaf_calls(built, after=after), torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            built(image)
        complete = True
    except NotImplementedError:
        complete = False
    except Exception as error:  # noqa: BLE001 - any failure of the forward is the answer
        return MetaForward(f"workload.image_size={image_size}: {named(model)} cannot run on a "
                           f"{channels}x{image_size}x{image_size} input ({_first_line(error)}); choose a workload.image_size "
                           "the model takes (224 fits every torchvision model)")
    kept = sum(t.untyped_storage().nbytes() // t.element_size() for key, t in outputs.items() if key in saved)
    return MetaForward(None, saved_leaf_outputs=kept, complete=complete, **counted)


def input_problem(model: str, image_size: int, num_classes: int, cifar_stem: bool = False,
                  channels: int = 3) -> Optional[str]:
    """Why `model` cannot take a channels x image_size x image_size input, or None if it can."""
    return meta_forward(model, image_size, num_classes, cifar_stem, channels).problem


def _storage(tensor: Any) -> int:
    """The identity of the memory a tensor lives on (meta tensors have no addresses, but their storages are
    objects: views and in-place results share their base's)."""
    return tensor.untyped_storage()._cdata


def _first_line(error: Exception) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


__all__ = ["MetaForward", "computed_meta_forward", "input_problem", "meta_forward", "save_meta_forwards"]
