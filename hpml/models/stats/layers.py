"""One row per leaf-module call of a model's forward: output shape, activations, parameters, MACs, FLOPs.

    rows = layer_rows(model, input_shape=(3, 224, 224), batch=1)

A leaf module is one without children (Conv2d, ReLU, Linear, ...). A leaf called twice in one forward
(ResNet's Bottleneck calls its one ReLU three times) gives one row per call, named "layer1.0.relu",
"layer1.0.relu#2", "layer1.0.relu#3". Ops that run outside every leaf (ResNet's residual add,
torch.flatten, the attention matmuls of nn.MultiheadAttention, whose out_proj is never called as a module)
are in no row; counting.totals reports their MACs as one "outside leaf modules" figure.

MACs come from torch.utils.flop_counter.FlopCounterMode, which counts matrix products only (convolution,
mm, addmm, bmm, baddbmm, scaled dot-product attention) at 2 FLOPs per multiply-accumulate and ignores
biases, element-wise ops, pooling and normalisation: MACs = its FLOPs / 2, and a row's `flops` is 2 x its
`macs` (the FLOPs of the counted ops, nothing else). One counter runs over the whole forward; a row's MACs
are the counter's increase during that call.

Counting needs shapes, not values: build the model on the meta device (`meta_model(name)`) and the forward
takes milliseconds even for VGG19; a model on the CPU or a GPU is run as it is (no_grad, eval mode is the
caller's). Byte sizes use `dtype`'s element size, whatever dtype the model runs in.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Sequence, Tuple

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

# what counting.totals groups as "convolution" and "fully connected" (subclasses included)
CONV_TYPES = (nn.modules.conv._ConvNd,)
LINEAR_TYPES = (nn.Linear,)


@dataclass(frozen=True)
class LayerRow:
    name: str                        # module path, e.g. "features.0"; its 2nd call "features.0#2", ...
    type: str                        # the module's class name: "Conv2d", "Linear", "ReLU", ...
    output_shape: Tuple[int, ...]    # with the batch (the first tensor output's shape)
    activations: int                 # output elements, batch included (all tensor outputs)
    activation_bytes: int            # activations x dtype size
    input_bytes: int                 # bytes of the call's tensor inputs (what it reads besides weights)
    params: int                      # this module's own parameters (weights only when bias=False)
    param_bytes: int                 # params x dtype size
    macs: int                        # multiply-accumulates of the counted ops (torchvision's `_ops` unit)
    flops: int                       # 2 x macs
    kind: str = "other"              # "conv", "linear" or "other": what totals' shares group by


def module_name(call_name: str) -> str:
    """The module path of a row or call name ("layer1.0.relu#2" -> "layer1.0.relu")."""
    return call_name.split("#")[0]


def leaf_modules(model: nn.Module) -> List[Tuple[str, nn.Module]]:
    """(name, module) of every module without children, in registration order (a model that is itself a
    leaf is named by its class)."""
    leaves = [(name, module) for name, module in model.named_modules() if not list(module.children())]
    return [(name or type(module).__name__, module) for name, module in leaves]


Before = Callable[[str, nn.Module, tuple], None]
After = Callable[[str, nn.Module, tuple, Any], None]


@contextmanager
def hooked_leaf_calls(model: nn.Module, before: Before | None = None, after: After | None = None) -> Iterator[None]:
    """Calls before(call_name, module, inputs) and after(call_name, module, inputs, output) around every leaf
    call while the block runs; call names are those of layer_rows ("name", "name#2", ...), counted afresh
    for every forward. The hooks are removed on exit."""
    calls: Dict[str, int] = {}
    current: Dict[int, str] = {}
    handles = []

    def on_root_call(module, inputs):  # a new forward: number the calls from 1 again
        calls.clear()

    def pre_hook(name: str):
        def hook(module, inputs):
            calls[name] = calls.get(name, 0) + 1
            current[id(module)] = name if calls[name] == 1 else f"{name}#{calls[name]}"
            if before is not None:
                before(current[id(module)], module, inputs)
        return hook

    def post_hook(module, inputs, output):
        if after is not None:
            after(current[id(module)], module, inputs, output)

    handles.append(model.register_forward_pre_hook(on_root_call))
    for name, module in leaf_modules(model):
        handles.append(module.register_forward_pre_hook(pre_hook(name)))
        handles.append(module.register_forward_hook(post_hook))
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def leaf_calls(model: nn.Module, example: torch.Tensor) -> List[Tuple[str, nn.Module]]:
    """(call name, module) of every leaf call of one forward on `example`, in call order."""
    order: List[Tuple[str, nn.Module]] = []
    with hooked_leaf_calls(model, before=lambda name, module, inputs: order.append((name, module))):
        with torch.no_grad():
            model(example)
    return order


def meta_model(name: str, num_classes: int = 1000, cifar_stem: bool = False, in_channels: int = 3) -> nn.Module:
    """A torchvision or hpml model by name, its parameters and buffers on the meta device (no memory, no
    initialisation cost), in eval mode."""
    from hpml.models.build import build_classifier

    try:
        with torch.device("meta"):
            model = build_classifier(name, num_classes=num_classes, cifar_stem=cifar_stem, in_channels=in_channels)
    except NotImplementedError:  # a constructor that reads tensor values (RegNet's widths: .tolist())
        with _parameters_to_meta():
            model = build_classifier(name, num_classes=num_classes, cifar_stem=cifar_stem, in_channels=in_channels)
    return model.eval()


# The layers whose constructors allocate weights: inside _parameters_to_meta they allocate them on the meta device
# (a RegNet head of 2**31 - 1 classes would otherwise ask the CPU for 3.8 TB, which fails or succeeds by the host's
# memory overcommit: the same command failed on a 24 GiB machine and counted on a 125 GiB one)
WEIGHTED_LAYERS = (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d,
                   nn.LayerNorm, nn.GroupNorm, nn.Embedding)


@contextmanager
def _parameters_to_meta() -> Iterator[None]:
    """Every parameter and buffer moves to the meta device as it is registered, and the common weighted layers
    create theirs there, so the constructor's own arithmetic runs on the CPU but no weight is allocated or
    initialised (regnet_y_128gf: 0.1 s instead of 11 s)."""
    register_parameter, register_buffer = nn.Module.register_parameter, nn.Module.register_buffer
    inits = {cls: cls.__init__ for cls in WEIGHTED_LAYERS}

    def on_meta(init):
        def build(self, *args, **kwargs):
            kwargs.setdefault("device", "meta")
            init(self, *args, **kwargs)
        return build

    def parameter_on_meta(module, name, param):
        if param is not None:
            param = nn.Parameter(param.to("meta"), requires_grad=param.requires_grad)
        register_parameter(module, name, param)

    def buffer_on_meta(module, name, tensor, persistent=True):
        register_buffer(module, name, None if tensor is None else tensor.to("meta"), persistent)

    nn.Module.register_parameter, nn.Module.register_buffer = parameter_on_meta, buffer_on_meta
    for cls, init in inits.items():
        cls.__init__ = on_meta(init)
    try:
        yield
    finally:
        nn.Module.register_parameter, nn.Module.register_buffer = register_parameter, register_buffer
        for cls, init in inits.items():
            cls.__init__ = init


def own_parameters(module: nn.Module, bias: bool = True) -> int:
    """Parameters registered on the module itself (not its children); bias=False leaves out every
    parameter named "bias" (convolution and linear biases, batch norm's shift)."""
    return sum(p.numel() for name, p in module.named_parameters(recurse=False) if bias or name != "bias")


def _tensors(value: Any) -> List[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for item in value for t in _tensors(item)]
    if isinstance(value, dict):
        return [t for item in value.values() for t in _tensors(item)]
    return []


def kind_of(module: nn.Module) -> str:
    return "conv" if isinstance(module, CONV_TYPES) else "linear" if isinstance(module, LINEAR_TYPES) else "other"


def example_input(model: nn.Module, input_shape: Sequence[int], batch: int) -> torch.Tensor:
    """Zeros of (batch, *input_shape) on the model's device, in its floating dtype (float32 if it has none)."""
    params = [p for p in model.parameters() if p.is_floating_point()]
    device = params[0].device if params else torch.device("cpu")
    dtype = params[0].dtype if params else torch.float32
    return torch.zeros((batch, *input_shape), device=device, dtype=dtype)


@dataclass(frozen=True)
class CountedForward:
    """The rows of one forward and the counter's total over the whole forward (rows plus what ran outside
    every leaf module)."""

    rows: List[LayerRow]
    total_macs: int


def layer_rows(model: nn.Module, input_shape: Sequence[int] = (3, 224, 224), batch: int = 1,
               dtype: torch.dtype = torch.float32, bias: bool = True) -> List[LayerRow]:
    """One LayerRow per leaf-module call of one forward of a (batch, *input_shape) input, in call order."""
    return count_forward(model, input_shape, batch, dtype, bias).rows


def count_forward(model: nn.Module, input_shape: Sequence[int] = (3, 224, 224), batch: int = 1,
                  dtype: torch.dtype = torch.float32, bias: bool = True) -> CountedForward:
    """layer_rows' rows and the MACs of the whole forward."""
    size = torch.empty((), dtype=dtype).element_size()
    rows: List[LayerRow] = []
    counter = FlopCounterMode(display=False)
    started: Dict[str, Tuple[int, int]] = {}

    def before(name, module, inputs):
        started[name] = (counter.get_total_flops(), sum(t.numel() for t in _tensors(inputs)))

    def after(name, module, inputs, output):
        flops_before, input_elements = started.pop(name)
        outputs = _tensors(output)
        macs = (counter.get_total_flops() - flops_before) // 2
        params = own_parameters(module, bias)
        activations = sum(t.numel() for t in outputs)
        rows.append(LayerRow(name=name, type=type(module).__name__,
                             output_shape=tuple(outputs[0].shape) if outputs else (),
                             activations=activations, activation_bytes=activations * size,
                             input_bytes=input_elements * size, params=params, param_bytes=params * size,
                             macs=macs, flops=2 * macs, kind=kind_of(module)))

    example = example_input(model, input_shape, batch)
    with hooked_leaf_calls(model, before, after), counter, torch.no_grad():
        model(example)
    return CountedForward(rows, counter.get_total_flops() // 2)
