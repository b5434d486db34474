"""A model's per-layer rows and its totals, from its name: what `hpml model-stats MODEL` reports.

    stats = model_stats("vgg19", input_shape=(3, 224, 224), batch=1, dtype=torch.float32, bias=False)
    stats.totals.macs, stats.totals.conv_flops_share, stats.receptive_fields

Totals come from the whole model and the whole forward, not from summing rows: parameters are every
parameter of the model (each once, biases left out when bias=False), MACs are the counter's total over the
forward. What no row holds is given on its own: the MACs counted outside every leaf module (attention
matmuls in nn.MultiheadAttention's functional forward; torch's counter ignores adds) and the parameters of
no called leaf (GoogLeNet's auxiliary classifiers, which eval mode skips; ViT's class token and position
embedding).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence

import torch
from torch import nn

from hpml.models.stats.layers import (
    LINEAR_TYPES,
    CountedForward,
    LayerRow,
    count_forward,
    meta_model,
    module_name,
    own_parameters,
)
from hpml.models.stats.receptive_field import Field, model_receptive_fields


@dataclass(frozen=True)
class Totals:
    params: int                   # every parameter of the model, each once
    params_outside_rows: int      # parameters of modules that no row holds (never called, or not leaves)
    macs: int                     # the whole forward's multiply-accumulates (torch's counter)
    macs_outside_rows: int        # counted outside every leaf module call
    activations: int              # sum of the rows' output elements
    activation_bytes: int
    conv_flops_share: float       # convolution rows' FLOPs / the forward's FLOPs
    fc_params_share: float        # parameters of the model's fully connected layers (nn.Linear) / params

    @property
    def flops(self) -> int:
        return 2 * self.macs


@dataclass(frozen=True)
class ModelStats:
    model: str
    input_shape: tuple
    batch: int
    dtype: torch.dtype
    bias: bool
    rows: List[LayerRow]
    totals: Totals
    receptive_fields: Optional[List[Optional[Field]]]   # one per row for a chain of layers (VGG), else None


def totals(model: nn.Module, counted: CountedForward, bias: bool = True) -> Totals:
    rows = counted.rows
    params = sum(own_parameters(module, bias) for module in model.modules())
    in_rows = {module_name(row.name): row.params for row in rows}  # a module called twice counts once
    fc_params = sum(own_parameters(module, bias) for module in model.modules() if isinstance(module, LINEAR_TYPES))
    conv_macs = sum(row.macs for row in rows if row.kind == "conv")
    return Totals(params=params, params_outside_rows=params - sum(in_rows.values()), macs=counted.total_macs,
                  macs_outside_rows=counted.total_macs - sum(row.macs for row in rows),
                  activations=sum(row.activations for row in rows),
                  activation_bytes=sum(row.activation_bytes for row in rows),
                  conv_flops_share=conv_macs / counted.total_macs if counted.total_macs else 0.0,
                  fc_params_share=fc_params / params if params else 0.0)


def model_stats(name: str, input_shape: Sequence[int] = (3, 224, 224), batch: int = 1,
                dtype: torch.dtype = torch.float32, bias: bool = True, num_classes: int = 1000,
                model: Optional[nn.Module] = None) -> ModelStats:
    """Counts the named model on the meta device (`model`: that model already built by meta_model). A model
    that cannot take the input (too small for its pooling, wrong channel count) raises torch's RuntimeError."""
    model = meta_model(name, num_classes) if model is None else model
    counted = count_forward(model, input_shape, batch, dtype, bias)
    return ModelStats(model=name, input_shape=tuple(input_shape), batch=batch, dtype=dtype, bias=bias,
                      rows=counted.rows, totals=totals(model, counted, bias),
                      receptive_fields=model_receptive_fields(model, counted.rows, input_shape))
