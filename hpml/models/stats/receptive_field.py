"""Receptive fields of a chain of convolutions and poolings, per layer.

The standard recurrence (Araujo et al., "Computing receptive fields of convolutional neural networks",
Distill 2019; Dumoulin & Visin 2016): with r the receptive field (input pixels one output pixel sees along
an axis) and j the jump (input pixels between two neighbouring outputs), starting at r = j = 1 on the input,
a layer of kernel k, stride s and dilation d gives

    r_out = r_in + (k_eff - 1) * j_in,   j_out = j_in * s,   k_eff = d * (k - 1) + 1

Padding moves the field but does not change its size. N stacked FxF stride-1 convolutions see
N * F - N + 1 pixels (`stacked_convs`): three 3x3 see 7x7, like one 7x7 (VGG's argument, Simonyan &
Zisserman 2015, sec. 2.3). The value is the recurrence's, not clipped to the image (VGG19's last conv: 252
on a 224 input).

`model_receptive_fields` applies it to a model's rows when the model is a chain: every leaf sits in
nn.Sequential containers under the root, is called once, in the order it was registered (VGG, AlexNet,
hpml_cnn). A model with branches (ResNet, Inception) gets None: one number per layer would be wrong there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from torch import nn

from hpml.models.stats.layers import LINEAR_TYPES, LayerRow, leaf_modules, module_name

# layers whose field is the whole input: every output sees every input pixel
_WHOLE_INPUT = LINEAR_TYPES + (nn.Flatten,)
_POOLS = (nn.MaxPool1d, nn.MaxPool2d, nn.MaxPool3d, nn.AvgPool1d, nn.AvgPool2d, nn.AvgPool3d)
_ADAPTIVE_POOLS = (nn.AdaptiveAvgPool1d, nn.AdaptiveAvgPool2d, nn.AdaptiveAvgPool3d, nn.AdaptiveMaxPool1d,
                   nn.AdaptiveMaxPool2d, nn.AdaptiveMaxPool3d)


@dataclass(frozen=True)
class Field:
    """Receptive field and jump per spatial axis (height, width for images)."""

    size: Tuple[int, ...]
    jump: Tuple[int, ...]


def next_field(r: int, j: int, kernel: int, stride: int = 1, dilation: int = 1) -> Tuple[int, int]:
    """(r_out, j_out) of one layer along one axis."""
    return r + dilation * (kernel - 1) * j, j * stride


def chain(layers: Sequence[Tuple[int, int, int]]) -> List[Tuple[int, int]]:
    """(r, j) after each (kernel, stride, dilation) layer along one axis, from r = j = 1."""
    r, j, out = 1, 1, []
    for kernel, stride, dilation in layers:
        r, j = next_field(r, j, kernel, stride, dilation)
        out.append((r, j))
    return out


def stacked_convs(count: int, kernel: int) -> int:
    """The closed form for `count` stacked kernel x kernel stride-1 convolutions: N*F - N + 1."""
    return count * kernel - count + 1


def _per_axis(value, axes: int) -> Tuple[int, ...]:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * axes


def _geometry(module: nn.Module, in_shape: Tuple[int, ...], out_shape: Tuple[int, ...]):
    """(kernel, stride, dilation) per axis, "whole" for a layer that sees the whole input, or None when the
    layer changes the spatial size in a way the recurrence does not describe."""
    axes = len(out_shape) - 2
    if isinstance(module, _WHOLE_INPUT) or axes < 1:  # axes < 1: flattened outside a leaf (torch.flatten)
        return "whole"
    if isinstance(module, (nn.modules.conv._ConvNd,) + _POOLS):
        kernel = _per_axis(module.kernel_size, axes)
        stride = _per_axis(module.stride or module.kernel_size, axes)
        return kernel, stride, _per_axis(getattr(module, "dilation", 1), axes)
    if len(in_shape) != len(out_shape):
        return None
    sizes_in, sizes_out = in_shape[2:], out_shape[2:]
    if isinstance(module, _ADAPTIVE_POOLS):  # an even split is a pooling of kernel = stride = in / out
        if all(i % o == 0 for i, o in zip(sizes_in, sizes_out)):
            steps = tuple(i // o for i, o in zip(sizes_in, sizes_out))
            return steps, steps, (1,) * axes
        return "whole" if all(o == 1 for o in sizes_out) else None
    return ((1,) * axes,) * 3 if sizes_in == sizes_out else None   # element-wise: ReLU, BatchNorm, Dropout


def is_chain(model: nn.Module, rows: Sequence[LayerRow]) -> bool:
    """Whether the leaves sit in nn.Sequential containers only and ran once each, in registration order."""
    leaves = leaf_modules(model)
    if [row.name for row in rows] != [name for name, _ in leaves]:
        return False
    for name, _ in leaves:
        parts = name.split(".")
        for depth in range(1, len(parts)):
            if not isinstance(model.get_submodule(".".join(parts[:depth])), nn.Sequential):
                return False
    return True


def model_receptive_fields(model: nn.Module, rows: Sequence[LayerRow],
                           input_shape: Sequence[int]) -> Optional[List[Optional[Field]]]:
    """The field after each row (None: the whole input), or None when the model is not a chain or a layer
    changes the spatial size in a way the recurrence does not cover. input_shape: (C, H, W) without batch."""
    if not rows or not is_chain(model, rows):
        return None
    axes = len(rows[0].output_shape) - 2
    if axes < 1:
        return None
    size, jump = (1,) * axes, (1,) * axes
    previous = (rows[0].output_shape[0], *input_shape)
    fields: List[Optional[Field]] = []
    whole = False
    for row in rows:
        geometry = _geometry(model.get_submodule(module_name(row.name)), previous, row.output_shape)
        previous = row.output_shape
        if geometry is None and not whole:
            return None
        whole = whole or geometry == "whole"
        if whole:
            fields.append(None)
            continue
        steps = [next_field(r, j, k, s, d) for r, j, k, s, d in zip(size, jump, *geometry)]
        size, jump = tuple(r for r, _ in steps), tuple(j for _, j in steps)
        fields.append(Field(size, jump))
    return fields
