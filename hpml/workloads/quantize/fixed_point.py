"""The fixed-point arithmetic of the study: ranges, scales, quantize / dequantize, the range checks, the bias scale
rule and the requantization of an int32 accumulator. Pure functions on tensors (tests/test_quantize_fixed_point.py
checks each against hand-computed values).

Symmetric int8 (docs DESIGN, "Post-training quantization"): s = r / 127 for a range r, q = clamp(round(x / s),
-128, 127), x ~ q * s. Zero is exactly 0 (no zero point), so zero padding, ReLU (max(q, 0)) and max-pooling act on
the integers as on the reals. A layer's int32 accumulator holds sum q_w q_x, its bias is an int32 with scale
s_in * s_w, and the output is rescaled by M = s_in * s_w / s_out back to int8.

Rounding is half to even everywhere (torch.round's rule, also in the integer shifts below), so the integer-only
inference and the simulated float path round a tie the same way: where the float path is exact (power-of-two
scales) the two are equal bit for bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Optional, Sequence

import torch

INT8_MIN, INT8_MAX = -128, 127
INT32_MIN, INT32_MAX = -(2 ** 31), 2 ** 31 - 1
QMAX = 127  # the range r maps to 127 (not 128): symmetric, so -r maps to -127 and 0 to 0
M0_BITS = 31  # the fixed-point multiplier M0 is an int32 in [2^30, 2^31) (gemmlowp's Q0.31)
MAX_SHIFT = 62  # |acc * M0| < 2^31 * 2^31 = 2^62 fits int64; a larger shift rounds every value to 0


class QuantizationError(ValueError):
    """A quantized tensor that is not integer or not in range, or a scale that cannot be represented."""


# --- ranges and scales -------------------------------------------------------------------------------------------

def value_range(values: torch.Tensor, method: str, k: float, per_channel: bool = False) -> torch.Tensor:
    """The range r to map onto 127: max|x| (method "maxabs"), or min(max|x|, |mean| + k * std) (method "sigma",
    std with ddof=0 over the values). Per channel: one r per index of dim 0 (a weight's output channels)."""
    flat = values.detach().double()
    flat = flat.reshape(flat.shape[0], -1) if per_channel else flat.reshape(1, -1)
    max_abs = flat.abs().amax(dim=1)
    if method == "maxabs":
        return max_abs
    # never wider than max|x|: a range past the largest value would only waste levels
    return torch.minimum(max_abs, flat.mean(dim=1).abs() + k * flat.std(dim=1, unbiased=False))


def scale_from_range(r: torch.Tensor, power_of_two: bool) -> torch.Tensor:
    """s = r / 127, or 2^ceil(log2(r / 127)) with power_of_two: rounded up, so the range still fits and nothing
    more is clipped than without the rounding (rounding down would clip the top values). A range of 0 (an all-zero
    channel) gets s = 1: every scale represents 0 exactly, and a 0 would divide by zero."""
    s = torch.where(r > 0, r / QMAX, torch.ones_like(r)).double()
    if power_of_two:
        s = torch.exp2(torch.ceil(torch.log2(s)))
    return s


def power_of_two_exponent(scale: float) -> Optional[int]:
    """n when scale == 2^n exactly, else None."""
    mantissa, exponent = math.frexp(scale)
    return exponent - 1 if mantissa == 0.5 else None


# --- quantize, dequantize, checks --------------------------------------------------------------------------------

def _channel_view(scale: torch.Tensor, ndim: int) -> torch.Tensor:
    """A per-channel scale (one per index of dim 0) shaped to broadcast against a tensor of ndim dims."""
    return scale.reshape(-1, *([1] * (ndim - 1))) if scale.numel() > 1 else scale.reshape(())


def quantize(x: torch.Tensor, scale: torch.Tensor, dtype: torch.dtype = torch.int8, lo: int = INT8_MIN,
             hi: int = INT8_MAX) -> torch.Tensor:
    """clamp(round(x / s), lo, hi) as an integer tensor; s one value or one per index of dim 0. The division in
    float64, so an int32 bias (up to 2^31) is rounded exactly."""
    s = _channel_view(torch.as_tensor(scale, dtype=torch.float64), x.dim())
    return torch.round(x.double() / s).clamp(lo, hi).to(dtype)


def dequantize(q: torch.Tensor, scale: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """q * s, in dtype (float32: what the simulated stages compute in)."""
    s = _channel_view(torch.as_tensor(scale, dtype=torch.float64), q.dim())
    return (q.double() * s).to(dtype)


def fake_quantize(x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """dequantize(quantize(x)): the value an int8 tensor of scale s holds, in x's dtype (the simulated stages)."""
    return dequantize(quantize(x, scale), scale, x.dtype)


def clipped_count(x: torch.Tensor, scale: torch.Tensor, lo: int = INT8_MIN, hi: int = INT8_MAX) -> int:
    """How many values of x fall outside [lo, hi] * s and are clipped by quantize (saturation)."""
    s = _channel_view(torch.as_tensor(scale, dtype=torch.float64), x.dim())
    q = torch.round(x.double() / s)
    return int(((q < lo) | (q > hi)).sum())


@dataclass
class RangeCheck:
    """One quantized tensor's check: integer dtype, every value in [lo, hi]."""

    tensor: str
    dtype: str
    lo: int
    hi: int
    min: int
    max: int
    values: int
    clipped: int  # values of the float tensor that quantize clamped (0 for a tensor no float stands behind)

    @property
    def ok(self) -> bool:
        return self.lo <= self.min and self.max <= self.hi

    def as_dict(self) -> dict:
        return {**self.__dict__, "integer": True, "in_range": self.ok}


def check_integer_range(name: str, q: torch.Tensor, lo: int, hi: int, clipped: int = 0) -> RangeCheck:
    """The check every quantized tensor passes: an integer dtype and all values in [lo, hi]; QuantizationError
    naming the tensor otherwise (a float tensor of rounded values is no integer tensor)."""
    if q.dtype.is_floating_point or q.dtype.is_complex or q.dtype == torch.bool:
        raise QuantizationError(f"{name}: dtype {q.dtype} is not an integer type")
    check = RangeCheck(name, str(q.dtype).replace("torch.", ""), lo, hi, int(q.min()) if q.numel() else 0,
                       int(q.max()) if q.numel() else 0, q.numel(), clipped)
    if not check.ok:
        raise QuantizationError(f"{name}: values in [{check.min}, {check.max}], outside [{lo}, {hi}]")
    return check


def bias_scale(input_scale: float, weight_scale: torch.Tensor) -> torch.Tensor:
    """An int32 bias is added to the accumulator sum q_w q_x, whose unit is s_in * s_w: its scale must be that."""
    return input_scale * weight_scale.double()


def quantize_bias(bias: torch.Tensor, scale: torch.Tensor, name: str) -> torch.Tensor:
    """round(b / (s_in s_w)) as int32; a value past the int32 range is an error, never clamped (clamping a bias
    changes the model silently)."""
    clipped = clipped_count(bias, scale, INT32_MIN, INT32_MAX)
    if clipped:
        raise QuantizationError(f"{name}: {clipped} bias value(s) exceed int32 at scale s_in * s_w")
    return quantize(bias, scale, torch.int32, INT32_MIN, INT32_MAX)


# --- requantization ----------------------------------------------------------------------------------------------

def fixed_point_multiplier(m: float) -> tuple:
    """(M0, shift) with m = M0 * 2^-shift, M0 an integer in [2^30, 2^31): m's 31 leading bits. For m = 2^-n exactly,
    M0 = 2^30 and shift = 30 + n. QuantizationError when m <= 0 or the shift leaves [0, 62]."""
    if not m > 0:
        raise QuantizationError(f"requantization multiplier {m!r} is not > 0")
    mantissa, exponent = math.frexp(m)  # m = mantissa * 2^exponent, mantissa in [0.5, 1)
    m0 = round(mantissa * (1 << M0_BITS))
    shift = M0_BITS - exponent
    if m0 == 1 << M0_BITS:  # the mantissa rounded up to 1.0
        m0, shift = m0 >> 1, shift - 1
    if not 0 <= shift <= MAX_SHIFT:
        raise QuantizationError(f"requantization multiplier {m!r} needs a shift of {shift}, outside [0, {MAX_SHIFT}]")
    return m0, shift


def rounding_right_shift(x: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
    """round(x / 2^shift), ties to even, in integers (int64); shift >= 0, one value or one per element after
    broadcasting. floor by the arithmetic shift, then +1 where the remainder passes half, or equals half and the
    floor is odd."""
    x = x.long()
    shift = torch.as_tensor(shift, dtype=torch.int64)
    floor = torch.bitwise_right_shift(x, shift)
    remainder = x - torch.bitwise_left_shift(floor, shift)  # in [0, 2^shift)
    twice = 2 * remainder
    whole = torch.bitwise_left_shift(torch.ones_like(shift), shift)
    up = (twice > whole) | ((twice == whole) & (floor % 2 == 1))
    return torch.where(shift > 0, floor + up.long(), x)


def rounding_divide(x: torch.Tensor, divisor: int) -> torch.Tensor:
    """round(x / divisor), ties to even, in integers: an average pool's sum divided by its window."""
    x = x.long()
    floor = torch.div(x, divisor, rounding_mode="floor")
    twice = 2 * (x - floor * divisor)
    up = (twice > divisor) | ((twice == divisor) & (floor % 2 == 1))
    return floor + up.long()


@dataclass
class Requantizer:
    """Rescales a layer's int32 accumulator (bias included) by M = s_in s_w / s_out, per channel or per tensor:

        shift        every M a power of two 2^-n: round(acc / 2^n) by a rounding shift (n < 0: acc * 2^-n)
        fixed_point  acc * M0 in int64, then a rounding right shift by `shift` (integers only)
        float        acc * M in float32, then rounded (what fbgemm does)

    The result is not yet clamped to int8."""

    kind: str
    multiplier: List[float]  # M per channel (one value per tensor)
    m0: List[int]
    shift: List[int]

    def apply(self, acc: torch.Tensor, channel_dim: int = 1) -> torch.Tensor:
        def per_channel(values: Sequence, dtype: torch.dtype) -> torch.Tensor:
            """One value (a 0-d tensor), or one per index of channel_dim, shaped to broadcast against acc."""
            tensor = torch.tensor(values, dtype=dtype)
            if len(values) == 1:
                return tensor.reshape(())
            view = [1] * acc.dim()
            view[channel_dim] = -1
            return tensor.reshape(view)

        if self.kind == "float":
            return torch.round(acc.float() * per_channel(self.multiplier, torch.float32)).long()
        if self.kind == "shift":
            n = per_channel([-power_of_two_exponent(m) for m in self.multiplier], torch.int64)
            left = torch.bitwise_left_shift(acc.long(), torch.clamp(-n, min=0))
            return rounding_right_shift(left, torch.clamp(n, min=0))
        product = acc.long() * per_channel(self.m0, torch.int64)
        return rounding_right_shift(product, per_channel(self.shift, torch.int64))

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def requantizer(multipliers: Sequence[float], method: str) -> Requantizer:
    """method "float" or "fixed_point"; fixed point becomes a pure shift when every M is a power of two."""
    pairs = [fixed_point_multiplier(m) for m in multipliers]
    kind = method
    if method == "fixed_point" and all(power_of_two_exponent(m) is not None for m in multipliers):
        kind = "shift"
    return Requantizer(kind, [float(m) for m in multipliers], [p[0] for p in pairs], [p[1] for p in pairs])
