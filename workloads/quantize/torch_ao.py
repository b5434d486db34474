"""The cross-check with a real int8 engine: PyTorch's eager-mode post-training static quantization
(torch.ao.quantization: QuantStub / DeQuantStub around the model, fuse, prepare, calibrate, convert), run on the
same float model and the same calibration images as hpml's stages, with two sets of scales:

    torch_ao_own    the engine's default qconfig (get_default_qconfig(engine)): what a torch.ao user gets. On
                    x86 / fbgemm: activations quint8 affine from a HistogramObserver with reduce_range (7 bits, to
                    keep fbgemm's int16 pair sums from saturating), weights int8 symmetric per channel
    torch_ao_hpml   the same converted model with hpml's scales and integers put in: the image and every layer's
                    output at hpml's scale with zero point 128 (quint8 128 + q is hpml's int8 q: the same grid),
                    hpml's int8 weights (per tensor or per channel), its int32 biases given as q_b * s_in * s_w
                    (fbgemm re-quantizes a float bias with exactly that scale). hpml's fixed point on torch's kernels

Eager mode needs the modules to be fused by name (conv [+ bn] [+ relu], linear + relu): the groups come from
the same plan the stages use (plan.py). torch 2.x warns that torch.ao.quantization is deprecated in favour of
torchao's pt2e flow; it still ships it, and the first line of each distinct warning is kept in the result.
Where the installed torch has no quantized engine (or no torch.ao.quantization), `unavailable` says so in one line.
"""

from __future__ import annotations

import copy
import io
import warnings
from typing import Callable, Dict, List, Optional, Tuple

import torch
from torch import nn

from workloads.quantize.fixed_point import dequantize
from workloads.quantize.plan import Plan
from workloads.quantize.quantized_net import QuantizedNet

UINT8_ZERO_POINT = 128  # quint8 value of hpml's int8 0: q_uint8 = q_int8 + 128


class Wrapped(nn.Module):
    """QuantStub -> the model -> DeQuantStub: float in, float out, int8 in between after convert."""

    def __init__(self, model: nn.Module):
        super().__init__()
        from torch.ao.quantization import DeQuantStub, QuantStub

        self.quant = QuantStub()
        self.model = model
        self.dequant = DeQuantStub()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dequant(self.model(self.quant(x)))


def unavailable(requested: str) -> Optional[str]:
    """Why this torch cannot run the cross-check, in one line; None when it can."""
    try:
        import torch.ao.quantization  # noqa: F401 - the import is the check
    except ImportError as error:
        return f"torch {torch.__version__} has no torch.ao.quantization ({error}): no torch.ao cross-check"
    engines = [e for e in torch.backends.quantized.supported_engines if e != "none"]
    if not engines:
        return f"torch {torch.__version__} has no quantized engine on this machine: no torch.ao cross-check"
    if requested != "auto" and requested not in engines:
        return f"torch {torch.__version__} has no {requested} engine (it has {', '.join(engines)})"
    return None


def engine(requested: str) -> str:
    """x86 (fbgemm's successor on x86) where the torch has it, else its first engine; or the one named."""
    engines = [e for e in torch.backends.quantized.supported_engines if e != "none"]
    if requested != "auto":
        return requested
    return "x86" if "x86" in engines else engines[0]


def convert(model: nn.Module, plan: Plan, engine_name: str, calibration: torch.Tensor, batch: int) -> nn.Module:
    """The float model fused, observed over the calibration images with the engine's default qconfig, converted."""
    from torch.ao import quantization as tq

    torch.backends.quantized.engine = engine_name
    wrapped = Wrapped(copy.deepcopy(model).eval())
    tq.fuse_modules(wrapped, [[f"model.{path}" for path in group] for group in plan.fusion_groups()], inplace=True)
    wrapped.qconfig = tq.get_default_qconfig(engine_name)
    prepared = tq.prepare(wrapped)
    with torch.inference_mode():
        for start in range(0, len(calibration), batch):
            prepared(calibration[start:start + batch])
    return tq.convert(prepared)


def _weight(q) -> torch.Tensor:
    """hpml's int8 weights as a torch qint8 tensor of the same integers and scales (no re-rounding)."""
    if q.per_channel:
        zeros = torch.zeros(q.weight_q.shape[0], dtype=torch.int64)
        return torch._make_per_channel_quantized_tensor(q.weight_q, q.weight_scale, zeros, 0)
    return torch._make_per_tensor_quantized_tensor(q.weight_q, float(q.weight_scale), 0)


def put_hpml_scales(converted: nn.Module, net: QuantizedNet) -> nn.Module:
    """A copy of the converted model carrying hpml's input scale, int8 weights, int32 biases and output scales."""
    model = copy.deepcopy(converted)
    model.quant.scale = torch.tensor([net.input_scale])
    model.quant.zero_point = torch.tensor([UINT8_ZERO_POINT])
    for q in net.layers:
        module = model.get_submodule(f"model.{q.layer.modules[0]}")
        module.set_weight_bias(_weight(q), dequantize(q.bias_q, q.bias_scale))
        module.scale, module.zero_point = q.output_scale, UINT8_ZERO_POINT
    return model


def serialized_bytes(model: nn.Module) -> int:
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    return buffer.getbuffer().nbytes


NOTE_CHARS = 160  # of a warning's first line kept in the result


def note_line(message: str) -> str:
    """A warning's first line, its runs of spaces collapsed, cut to NOTE_CHARS."""
    line = " ".join(message.strip().splitlines()[0].split())
    return line if len(line) <= NOTE_CHARS else line[:NOTE_CHARS - 3] + "..."


def cross_check(model: nn.Module, net: QuantizedNet, engine_name: str, calibration: torch.Tensor,
                batch: int) -> Tuple[Dict[str, Callable[[torch.Tensor], torch.Tensor]], Dict[str, int], List[str]]:
    """({stage: forward}, {stage: serialized bytes}, warning notes) of the two torch.ao models."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        own = convert(model, net.plan, engine_name, calibration, batch)
        hpml = put_hpml_scales(own, net)
    notes = list(dict.fromkeys(note_line(str(w.message)) for w in caught if str(w.message).strip()))
    models = {"torch_ao_own": own, "torch_ao_hpml": hpml}
    return models, {name: serialized_bytes(m) for name, m in models.items()}, notes
