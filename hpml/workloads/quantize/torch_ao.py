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

Which engine: the torch_ao_hpml stage asks an engine for hpml's integers, so it must run on one that computes
full-range 8-bit products exactly on this CPU. Without VNNI, fbgemm's and oneDNN's x86 kernels add u8 x s8 pairs
in int16 (vpmaddubsw) and saturate with full-range activations (PyTorch's own x86 qconfig keeps activations to 7
bits for that reason): on an AVX2-only EPYC they were 49-53 steps away from hpml's integers. `computes_exactly`
asks each engine on worst-case operands, and `choose_engine` takes the first exact one (the result keeps the
probe's answers and the reason; the CPU is in environment.cpu).
"""

from __future__ import annotations

import copy
import io
import os
import warnings
from typing import Callable, Dict, List, Optional, Tuple

import torch
from torch import nn

from hpml.workloads.quantize.fixed_point import dequantize
from hpml.workloads.quantize.plan import Plan
from hpml.workloads.quantize.quantized_net import QuantizedNet

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
    engines = available_engines()
    if not engines:
        return f"torch {torch.__version__} has no quantized engine on this machine: no torch.ao cross-check"
    if requested != "auto" and requested not in engines:
        return f"torch {torch.__version__} has no {requested} engine (it has {', '.join(engines)})"
    return None


# Which engine "auto" prefers, where it computes exactly: x86 (fbgemm's successor, what a torch.ao user on x86
# gets by default), then fbgemm, then oneDNN, then QNNPACK (written for ARM; on x86 it accumulates in int32 with
# no int16 step, so it is exact on any CPU, and slower).
PREFERENCE = ("x86", "fbgemm", "onednn", "qnnpack")

# The probe: one quantized linear and one quantized convolution with the operands that overflow an int16 pair
# sum on hpml's grid (activations quint8 with zero point 128, as put_hpml_scales sets them): the image value 255
# (int8 127) times the weight 127 or -128. Exactly: K * 127 * w, rescaled by PROBE_SCALE; a kernel that adds
# u8 x s8 pairs in 16 bits saturates at 32,767 per pair and lands tens of steps away.
PROBE_CHANNELS = 8
PROBE_SCALE = 20000.0  # output scale: exact results of 58-65 steps from the zero point, no ties to round


def available_engines() -> List[str]:
    return [e for e in torch.backends.quantized.supported_engines if e != "none"]


def _probe_outputs(module: nn.Module, weight: torch.Tensor, x_shape: Tuple[int, ...], products: int):
    """(the engine's output integers, the exact ones) of a quantized module on the worst-case operands."""
    module.set_weight_bias(torch._make_per_tensor_quantized_tensor(weight, 1.0, 0), None)
    module.scale, module.zero_point = PROBE_SCALE, UINT8_ZERO_POINT
    x = torch._make_per_tensor_quantized_tensor(torch.full(x_shape, 255, dtype=torch.uint8), 1.0, UINT8_ZERO_POINT)
    with torch.inference_mode():
        got = module(x).int_repr().to(torch.int64)
    per_output = torch.tensor([products * 127 * int(w) for w in weight.reshape(weight.shape[0], -1)[:, 0]],
                              dtype=torch.float64)
    exact = torch.clamp(torch.round(per_output / PROBE_SCALE) + UINT8_ZERO_POINT, 0, 255).to(torch.int64)
    shape = [1, -1] + [1] * (got.dim() - 2)
    return got, exact.reshape(shape).expand_as(got)


def computes_exactly(engine_name: str) -> bool:
    """Whether the engine's int8 linear and convolution kernels compute full-range u8 x s8 sums exactly on this
    CPU (to one step of requantization rounding)."""
    from torch.ao.nn import quantized as qnn

    previous = torch.backends.quantized.engine
    torch.backends.quantized.engine = engine_name
    try:
        weight = torch.tensor([127, -128], dtype=torch.int8)
        linear = qnn.Linear(PROBE_CHANNELS, 2, dtype=torch.qint8)
        linear_w = weight[:, None].expand(2, PROBE_CHANNELS).contiguous()
        conv = qnn.Conv2d(PROBE_CHANNELS, 2, 3)
        conv_w = weight[:, None, None, None].expand(2, PROBE_CHANNELS, 3, 3).contiguous()
        pairs = [_probe_outputs(linear, linear_w, (4, PROBE_CHANNELS), PROBE_CHANNELS),
                 _probe_outputs(conv, conv_w, (1, PROBE_CHANNELS, 5, 5), PROBE_CHANNELS * 9)]
        return all(int((got - exact).abs().max()) <= 1 for got, exact in pairs)
    finally:
        torch.backends.quantized.engine = previous


def cpu_note(vnni: Optional[bool], overrides: Dict[str, str]) -> str:
    """What about this CPU decides exactness: its VNNI, and any variable capping the kernels' instruction set."""
    note = {True: "this CPU has VNNI", False: "this CPU has no VNNI: int16 pair sums saturate",
            None: "this CPU's VNNI is unknown"}[vnni]
    if overrides:
        note += ", kernels capped by " + ", ".join(f"{k}={v}" for k, v in sorted(overrides.items()))
    return note


def choose_engine(requested: str, engines: List[str], exact: Dict[str, bool], cpu: str) -> Tuple[str, str]:
    """(engine, why, in one line) from the engines this torch has and which of them computes exactly here.
    auto: the first of PREFERENCE that is exact; where none is, the first available, and the differences
    are said to be the engine's. A named engine is used as named, with the same warning when it is inexact."""
    if requested != "auto":
        if exact.get(requested, False):
            return requested, f"workload.torch_ao_engine={requested}, which computes exactly here ({cpu})"
        return requested, (f"workload.torch_ao_engine={requested}, which saturates full-range int8 sums here "
                           f"({cpu}): differences from hpml's integers are the engine's")
    ordered = [e for e in PREFERENCE if e in engines] + [e for e in engines if e not in PREFERENCE]
    exact_ones = [e for e in ordered if exact.get(e, False)]
    if not exact_ones:
        return ordered[0], (f"no engine computes full-range int8 sums exactly here ({cpu}): {ordered[0]}, and "
                            f"differences from hpml's integers are the engine's")
    chosen = exact_ones[0]
    skipped = ordered[:ordered.index(chosen)]
    if not skipped:
        return chosen, f"{chosen} computes full-range int8 sums exactly here ({cpu})"
    return chosen, (f"{chosen}: {', '.join(skipped)} saturate full-range int8 sums here ({cpu}); {chosen} "
                    f"computes them exactly")


def engine_block(requested: str) -> Dict[str, object]:
    """The torch_ao block's engine part: {"engine", "engine_reason", "engines_exact": {engine: bool}}."""
    from hpml.workloads.common.cpu import ISA_OVERRIDES, describe_cpu

    engines = available_engines()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's deprecation notes: the cross-check records them once
        exact = {e: computes_exactly(e) for e in engines}
    overrides = {k: os.environ[k] for k in ISA_OVERRIDES if k in os.environ}
    name, why = choose_engine(requested, engines, exact, cpu_note(describe_cpu()["vnni"], overrides))
    return {"engine": name, "engine_reason": why, "engines_exact": exact}


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
