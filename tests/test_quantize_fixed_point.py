"""The quantize workload's fixed-point formulas (workloads/quantize/fixed_point.py) against values computed by hand:
ranges, scales, quantize / dequantize round trips, the range checks, the bias scale rule, the fixed-point
multiplier and the rounding shifts, the requantizers."""

from __future__ import annotations

import pytest
import torch

from hpml.workloads.quantize.fixed_point import (
    QuantizationError,
    bias_scale,
    check_integer_range,
    clipped_count,
    dequantize,
    fixed_point_multiplier,
    power_of_two_exponent,
    quantize,
    quantize_bias,
    requantizer,
    rounding_divide,
    rounding_right_shift,
    scale_from_range,
    value_range,
)


def values(*xs: float) -> torch.Tensor:
    return torch.tensor(xs, dtype=torch.float64)


def test_maxabs_range_per_tensor_and_per_channel():
    assert value_range(values(-0.5, 0.25, 1.0, -2.0), "maxabs", 3.0).tolist() == [2.0]
    per_channel = torch.tensor([[1.0, -3.0], [0.5, 0.25]])
    assert value_range(per_channel, "maxabs", 3.0, per_channel=True).tolist() == [3.0, 0.5]


def test_sigma_range_is_mean_plus_k_std_never_past_maxabs():
    # [0, 0, 0, 0, 4]: mean 0.8, deviations -0.8 (x4) and 3.2: variance (4 * 0.64 + 10.24) / 5 = 2.56, std 1.6 (ddof=0)
    x = values(0, 0, 0, 0, 4)
    assert value_range(x, "sigma", 1.0).item() == pytest.approx(0.8 + 1.6)
    assert value_range(x, "sigma", 2.0).item() == pytest.approx(4.0)  # 0.8 + 3.2 = max|x|
    assert value_range(x, "sigma", 3.0).item() == 4.0  # 0.8 + 4.8 = 5.6, capped at max|x|


def test_scale_is_range_over_127_or_the_next_power_of_two_up():
    assert scale_from_range(values(2.54), False).item() == pytest.approx(0.02)
    # log2(0.02) = -5.64: rounded up to 2^-5 (the range still fits), not down to 2^-6 (which would clip)
    assert scale_from_range(values(2.54), True).item() == 2 ** -5
    assert scale_from_range(values(127 * 2 ** -7), True).item() == 2 ** -7  # already a power of two: kept
    assert scale_from_range(values(0.0), False).item() == 1.0  # an all-zero tensor: any scale holds 0
    assert power_of_two_exponent(0.03125) == -5 and power_of_two_exponent(0.02) is None


def test_quantize_rounds_half_to_even_and_clamps_to_int8():
    # s = 0.25: x / s = 1.5, 2.5, -1.5, 127.6, -160, 0.4 -> 2, 2, -2, 127 (clamped from 128), -128 (clamped), 0
    q = quantize(values(0.375, 0.625, -0.375, 31.9, -40.0, 0.1), torch.tensor(0.25))
    assert q.dtype == torch.int8 and q.tolist() == [2, 2, -2, 127, -128, 0]
    assert dequantize(q, torch.tensor(0.25)).tolist() == [0.5, 0.5, -0.5, 31.75, -32.0, 0.0]
    assert clipped_count(values(0.375, 31.9, -40.0), torch.tensor(0.25)) == 2


def test_every_int8_survives_a_round_trip_and_a_value_moves_at_most_half_a_step():
    q = torch.arange(-128, 128, dtype=torch.int8)
    for s in (0.02, 2 ** -5, 0.137):
        scale = torch.tensor(s)
        assert torch.equal(quantize(dequantize(q, scale, torch.float64), scale), q)
    x = torch.linspace(-2.5, 2.5, 1001, dtype=torch.float64)
    scale = torch.tensor(2.5 / 127)
    assert (dequantize(quantize(x, scale), scale, torch.float64) - x).abs().max() <= 2.5 / 127 / 2 + 1e-12


def test_per_channel_quantize_uses_one_scale_per_output_channel():
    w = torch.tensor([[[[1.0]], [[-0.5]]], [[[0.25]], [[0.125]]]])  # 2 output channels x 2 inputs x 1 x 1
    q = quantize(w, torch.tensor([1 / 127, 0.25 / 127], dtype=torch.float64))
    assert q.reshape(2, 2).tolist() == [[127, -64], [127, 64]]  # -63.5 -> -64 and 63.5 -> 64: ties to even


def test_range_check_passes_int8_in_range_and_names_what_fails():
    check = check_integer_range("conv1.weight", torch.tensor([-128, 0, 127], dtype=torch.int8), -128, 127)
    assert check.ok and (check.min, check.max, check.values, check.dtype) == (-128, 127, 3, "int8")
    with pytest.raises(QuantizationError, match=r"^fc1.weight: dtype torch.float32 is not an integer type$"):
        check_integer_range("fc1.weight", torch.tensor([1.0, 2.0]), -128, 127)
    with pytest.raises(QuantizationError, match=r"^x: values in \[-3, 128\], outside \[-128, 127\]$"):
        check_integer_range("x", torch.tensor([-3, 128], dtype=torch.int32), -128, 127)


def test_bias_scale_is_input_scale_times_weight_scale_and_the_bias_is_int32():
    scale = bias_scale(0.5, torch.tensor([0.25, 0.125], dtype=torch.float64))
    assert scale.tolist() == [0.125, 0.0625]
    q = quantize_bias(torch.tensor([1.0, -0.25]), scale, "fc.bias")
    assert q.dtype == torch.int32 and q.tolist() == [8, -4]


def test_a_bias_past_int32_is_refused_not_clamped():
    with pytest.raises(QuantizationError, match=r"^fc.bias: 1 bias value\(s\) exceed int32 at scale s_in \* s_w$"):
        quantize_bias(torch.tensor([1e9, 1.0]), torch.tensor(1e-3, dtype=torch.float64), "fc.bias")


@pytest.mark.parametrize("m, m0, shift", [
    (0.75, 1_610_612_736, 31),  # frexp(0.75) = (0.75, 0): M0 = 0.75 * 2^31
    (0.1, 1_717_986_918, 34),  # frexp(0.1) = (0.8, -3): 0.8 * 2^31 = 1717986918.4 -> 1717986918, shift 31 + 3
    (2 ** -10, 2 ** 30, 40),  # a power of two: M0 = 2^30, the shift carries it
    (1 - 2 ** -40, 2 ** 30, 30),  # the mantissa rounds up to 2^31: renormalized to 2^30 and one shift less
    (3.0, 1_610_612_736, 29),  # M > 1 (frexp: 0.75 * 2^2)
])
def test_fixed_point_multiplier(m, m0, shift):
    assert fixed_point_multiplier(m) == (m0, shift)
    assert m0 / 2 ** shift == pytest.approx(m, rel=2 ** -31)


def test_a_multiplier_that_cannot_be_represented_is_refused():
    with pytest.raises(QuantizationError, match="is not > 0"):
        fixed_point_multiplier(0.0)
    with pytest.raises(QuantizationError, match=r"needs a shift of 70, outside \[0, 62\]"):
        fixed_point_multiplier(2 ** -40)  # frexp: 0.5 * 2^-39, shift 31 + 39: past what an int64 shift holds


def test_rounding_right_shift_rounds_half_to_even():
    x = torch.tensor([5, 6, 7, -5, -6, -7, 10, -10, 2])  # / 4 = 1.25 1.5 1.75 -1.25 -1.5 -1.75 2.5 -2.5 0.5
    assert rounding_right_shift(x, torch.tensor(2)).tolist() == [1, 2, 2, -1, -2, -2, 2, -2, 0]
    assert rounding_right_shift(x, torch.tensor(0)).tolist() == x.tolist()
    per_element = rounding_right_shift(torch.tensor([3, 3, 12]), torch.tensor([0, 1, 3]))  # 3, 1.5, 1.5
    assert per_element.tolist() == [3, 2, 2]


def test_rounding_divide_rounds_half_to_even():
    assert rounding_divide(torch.tensor([4, 5, -5, 6]), 3).tolist() == [1, 2, -2, 2]  # 1.33 1.67 -1.67 2
    assert rounding_divide(torch.tensor([1, 3, -1, -3]), 2).tolist() == [0, 2, 0, -2]  # ties to even


def test_fixed_point_and_float_requantizers_rescale_the_accumulator():
    acc = torch.tensor([[1000, -1000, 1234]], dtype=torch.int32)  # x 0.1 = 100, -100, 123.4
    fixed = requantizer([0.1], "fixed_point")
    assert fixed.kind == "fixed_point" and fixed.apply(acc).tolist() == [[100, -100, 123]]
    assert requantizer([0.1], "float").apply(acc).tolist() == [[100, -100, 123]]


def test_power_of_two_multipliers_make_the_requantizer_a_shift():
    r = requantizer([2 ** -3], "fixed_point")
    assert r.kind == "shift"
    assert r.apply(torch.tensor([12, 20, -12, 7])).tolist() == [2, 2, -2, 1]  # 1.5 2.5 -1.5 0.875
    up = requantizer([2.0], "fixed_point")  # M > 1: a left shift
    assert up.kind == "shift" and up.apply(torch.tensor([3, -4])).tolist() == [6, -8]


def test_a_per_channel_requantizer_scales_each_channel_on_dim_1():
    r = requantizer([0.5, 0.25], "fixed_point")  # both powers of two: shifts by 1 and 2
    acc = torch.tensor([[[6], [6]], [[-6], [10]]])  # N=2 x C=2 x 1
    assert r.apply(acc, channel_dim=1).tolist() == [[[3], [2]], [[-3], [2]]]  # 6/4 = 1.5 -> 2; 10/4 = 2.5 -> 2
