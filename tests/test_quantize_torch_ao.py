"""The torch.ao cross-check (workloads/quantize/torch_ao.py) runs on the installed torch: eager-mode static
quantization of the homework CNN with its own observers, and the same converted model carrying hpml's scales and
integers, whose int8 outputs must be hpml's integer-only outputs (to one step of requantization rounding: fbgemm
rescales in float32, hpml in fixed point)."""

from __future__ import annotations

import pytest
import torch

from models.hw5_cnn import HW5CNN
from workloads.quantize import torch_ao
from workloads.quantize.calibration import calibration_activations
from workloads.quantize.fixed_point import quantize
from workloads.quantize.integer_only import integer_forward
from workloads.quantize.plan import build_plan
from workloads.quantize.quantized_net import ScaleRule, quantize_net

REASON = torch_ao.unavailable("auto")


def test_an_engine_the_torch_lacks_is_one_line():
    line = torch_ao.unavailable("no_such_engine")
    assert line is not None and "\n" not in line and "has no no_such_engine engine" in line


@pytest.mark.skipif(REASON is not None, reason=REASON or "")
@pytest.mark.parametrize("per_channel", [False, True], ids=["per_tensor", "per_channel"])
def test_torch_ao_with_hpmls_scales_computes_hpmls_integers(per_channel):
    torch.manual_seed(0)
    model = HW5CNN(10).eval()
    images = torch.randn(48, 3, 32, 32)
    plan = build_plan(model, images[:4])
    rule = ScaleRule("maxabs", 3.0, False, per_channel, "fixed_point")
    net = quantize_net(plan, calibration_activations(plan, images[:32], 16), rule)
    engine = torch_ao.engine("auto")
    models, sizes, notes = torch_ao.cross_check(model, net, engine, images[:32], 16)
    assert set(models) == {"torch_ao_own", "torch_ao_hpml"} and all(size > 0 for size in sizes.values())
    assert all("\n" not in note for note in notes)
    with torch.inference_mode():
        theirs = quantize(models["torch_ao_hpml"](images[32:]), torch.tensor(net.layers[-1].output_scale))
        ours = integer_forward(net, images[32:])
        own = models["torch_ao_own"](images[32:])
    steps = (theirs.int() - ours.int()).abs()
    assert steps.max() <= 1 and (steps == 0).float().mean() >= 0.95
    assert own.shape == (16, 10) and torch.isfinite(own).all()
