"""The integer-only inference (workloads/quantize/integer_only.py) on hand-made layers: integer convolution, pooling
and requantization against values computed by hand, a whole hand-computed linear layer, and the integer path equal
to the simulated float path (W8A8B32) on a hand-made network; the model read as a chain (plan.py) with batch norm
folded; every quantized tensor checked."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from hpml.models.hw5_cnn import HW5CNN
from hpml.models.small_cnn import SmallCNN
from hpml.workloads.quantize.calibration import calibration_activations, summary
from hpml.workloads.quantize.fixed_point import quantize
from hpml.workloads.quantize.integer_only import Observed, int_conv2d, int_global_average, int_max_pool, integer_forward
from hpml.workloads.quantize.plan import PlanError, build_plan, read_chain
from hpml.workloads.quantize.quantized_net import ScaleRule, accumulator_bound, quantize_net
from hpml.workloads.quantize.simulated import simulated_forward

POWER_OF_TWO = ScaleRule("maxabs", 3.0, power_of_two=True, per_channel_weights=False, requantize="fixed_point")
PLAIN = ScaleRule("maxabs", 3.0, power_of_two=False, per_channel_weights=False, requantize="fixed_point")
PER_CHANNEL = ScaleRule("maxabs", 3.0, power_of_two=False, per_channel_weights=True, requantize="fixed_point")


def ints(rows) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.int32)


def test_integer_convolution_by_hand():
    x = ints([[[[1, 2, 3], [4, 5, 6], [7, 8, 9]]]])
    w = ints([[[[1, 2], [3, 4]]]])
    # out[i][j] = x[i][j] + 2 x[i][j+1] + 3 x[i+1][j] + 4 x[i+1][j+1]
    assert int_conv2d(x, w, (1, 1), (0, 0)).tolist() == [[[[37, 47], [67, 77]]]]
    padded = int_conv2d(x, w, (1, 1), (1, 1))
    assert padded.dtype == torch.int32 and padded[0, 0, 0, 0] == 4 * 1 and padded[0, 0, 3, 3] == 1 * 9
    # stride 2 over the zero-padded 5x5: windows [0 0; 0 1], [0 0; 2 3], [0 4; 0 7], [5 6; 8 9]
    assert int_conv2d(x, w, (2, 2), (1, 1)).tolist() == [[[[4, 3 * 2 + 4 * 3], [2 * 4 + 4 * 7, 77]]]]


def test_integer_convolution_equals_torch_conv2d_on_integers():
    gen = torch.Generator().manual_seed(0)
    x = torch.randint(-128, 128, (2, 3, 9, 9), generator=gen, dtype=torch.int32)
    w = torch.randint(-128, 128, (4, 3, 3, 3), generator=gen, dtype=torch.int32)
    expected = torch.nn.functional.conv2d(x.double(), w.double(), stride=2, padding=1)  # exact: sums < 2^53
    assert torch.equal(int_conv2d(x, w, (2, 2), (1, 1)).double(), expected)


def test_integer_pooling_by_hand():
    x = torch.tensor([[[[1, -2, 3, 4], [5, 6, -7, 8], [0, 0, 1, 1], [0, 2, 1, 3]]]], dtype=torch.int8)
    assert int_max_pool(x, (2, 2), (2, 2)).tolist() == [[[[6, 8], [2, 3]]]]
    # sum 1 - 2 + 3 + 4 + 5 + 6 - 7 + 8 + 0 + 0 + 1 + 1 + 0 + 2 + 1 + 3 = 26; 26 / 16 = 1.625 -> 2
    assert int_global_average(x).tolist() == [[[[2]]]]


def test_accumulator_bound_by_hand():
    # channel 0: (1 + 2) * 128 + 5 = 389; channel 1: 3 * 128 + 7 = 391
    assert accumulator_bound(torch.tensor([[1, -2], [3, 0]], dtype=torch.int8), ints([5, -7])) == 391


def one_linear(weight, bias) -> nn.Module:
    layer = nn.Linear(len(weight[0]), len(weight))
    with torch.no_grad():
        layer.weight.copy_(torch.tensor(weight))
        layer.bias.copy_(torch.tensor(bias))
    return nn.Sequential(layer)


def test_one_linear_layer_by_hand():
    """x = [1, -0.5], w = [0.5, 0.25], b = 0.125, power-of-two scales:
    s_in = 2^ceil(log2(1/127)) = 2^-6, q_x = [64, -32]; s_w = 2^ceil(log2(0.5/127)) = 2^-7, q_w = [64, 32];
    bias scale 2^-13, q_b = 0.125 * 2^13 = 1024; acc = 64*64 - 32*32 + 1024 = 4096 (= 0.5 / 2^-13);
    y = 0.5, so s_out = 2^-7 and M = 2^-6 * 2^-7 / 2^-7 = 2^-6: 4096 >> 6 = 64 = 0.5 / 2^-7."""
    model = one_linear([[0.5, 0.25]], [0.125])
    x = torch.tensor([[1.0, -0.5]])
    net = quantize_net(read_chain(model), calibration_activations(read_chain(model), x, 8), POWER_OF_TWO)
    q = net.layers[0]
    assert (net.input_scale, float(q.weight_scale), q.output_scale) == (2 ** -6, 2 ** -7, 2 ** -7)
    assert q.weight_q.tolist() == [[64, 32]] and q.bias_q.tolist() == [1024] and q.bias_q.dtype == torch.int32
    assert q.requant.kind == "shift" and q.requant.multiplier == [2 ** -6]
    assert integer_forward(net, x).tolist() == [[64]]


def hand_made_net() -> nn.Module:
    """conv 1->2 2x2 + ReLU, max-pool 2, flatten, linear 2->3: weights by hand."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 2, 2), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(2, 3))
    with torch.no_grad():
        model[0].weight.copy_(torch.tensor([[[[0.5, -0.25], [0.125, 1.0]]], [[[-0.75, 0.5], [0.25, -0.125]]]]))
        model[0].bias.copy_(torch.tensor([0.1, -0.2]))
        model[4].weight.copy_(torch.tensor([[1.0, -0.5], [0.3, 0.7], [-0.2, 0.9]]))
        model[4].bias.copy_(torch.tensor([0.05, -0.1, 0.2]))
    return model


@pytest.mark.parametrize("rule", [POWER_OF_TWO, PLAIN, PER_CHANNEL], ids=["power_of_two", "plain", "per_channel"])
def test_integer_path_equals_the_simulated_float_path_on_a_hand_made_net(rule):
    """The int8 logits of the integer-only inference equal the simulated W8A8B32 logits divided by their scale.
    With power-of-two scales the float path is exact, so they must be equal bit for bit; with other scales they
    are on these inputs (a tie that float rounding broke differently could cost one step: not here)."""
    model = hand_made_net()
    images = torch.tensor([[[[0.5, -1.0, 0.25], [1.5, 0.0, -0.5], [0.75, 1.0, -1.25]]],
                           [[[-0.5, 1.0, 0.0], [0.25, -1.5, 0.5], [1.0, 0.5, 0.25]]]])
    plan = build_plan(model, images)
    net = quantize_net(plan, calibration_activations(plan, images, 8), rule)
    int_logits = integer_forward(net, images)
    simulated = simulated_forward(net, images, weights=True, activations=True, biases=True)
    assert int_logits.dtype == torch.int8
    assert torch.equal(int_logits, quantize(simulated, torch.tensor(net.layers[-1].output_scale)))


def test_every_int8_tensor_of_the_integer_path_is_checked_and_counted():
    model = hand_made_net()
    images = torch.rand(4, 1, 3, 3) * 2 - 1
    plan = build_plan(model, images)
    net = quantize_net(plan, calibration_activations(plan, images[:2], 8), PLAIN)
    observed = Observed()
    integer_forward(net, images, observed)
    checks = {c["tensor"]: c for c in observed.checks(net)}
    assert list(checks) == ["input", "conv1.output", "fc1.output"]
    assert all(c["integer"] and c["in_range"] and c["dtype"] == "int8" for c in checks.values())
    assert checks["input"]["values"] == 4 * 9 and checks["fc1.output"]["values"] == 4 * 3
    assert checks["conv1.output"]["max_abs_accumulator"] <= checks["conv1.output"]["int32_bound"]
    assert [c.tensor for c in net.checks] == ["conv1.weight", "conv1.bias", "fc1.weight", "fc1.bias"]


def test_the_homework_cnn_is_read_as_its_five_layers():
    plan = read_chain(HW5CNN())
    assert [(layer.name, layer.relu) for layer in plan.layers] == [
        ("conv1", True), ("conv2", True), ("fc1", True), ("fc2", True), ("fc3", False)]
    assert plan.fusion_groups() == [["features.0", "features.1"], ["features.3", "features.4"],
                                    ["classifier.0", "classifier.1"], ["classifier.2", "classifier.3"]]


def test_batch_norm_is_folded_into_the_convolution_before_it():
    model = SmallCNN(10).eval()
    with torch.no_grad():  # running statistics that are not the identity, so the fold is really tested
        for module in model.modules():
            if isinstance(module, nn.BatchNorm2d):
                module.running_mean.uniform_(-0.5, 0.5)
                module.running_var.uniform_(0.5, 2.0)
                module.weight.uniform_(0.5, 1.5)
                module.bias.uniform_(-0.2, 0.2)
    plan = build_plan(model, torch.randn(4, 3, 32, 32))  # checks the chain against model(x)
    assert [layer.modules for layer in plan.layers][0] == ["features.0.0", "features.0.1", "features.0.2"]
    assert plan.layers[-1].name == "fc1"


def test_a_module_that_is_no_chain_link_is_refused_by_name():
    with pytest.raises(PlanError, match=r"^1: Sigmoid cannot be quantized here"):
        read_chain(nn.Sequential(nn.Linear(2, 2), nn.Sigmoid()))


def test_a_summary_counts_every_value_into_its_histogram():
    s = summary(torch.tensor([0.0, 1.0, 1.0, 2.0, 4.0]), bins=4)  # bins of 1 from 0 to 4
    assert s["histogram"]["counts"] == [1, 2, 1, 1] and (s["min"], s["max"], s["max_abs"]) == (0.0, 4.0, 4.0)
    assert s["mean"] == pytest.approx(1.6) and s["std"] == pytest.approx(1.3564659966250536)  # ddof=0
