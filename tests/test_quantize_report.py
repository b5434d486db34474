"""The quantize report's formulas against hand-computed values: bytes per stage (contract/quantize_format.py),
top-1 and agreement, the spread over runs and the paired difference from float, the bars."""

from __future__ import annotations

import pandas as pd
import pytest

from hpml.analysis.quantize.tables import bar_frame, stage_frame
from hpml.contract.quantize_format import agreement, payload_bytes, top1

# hw5_cnn's layers: weights 450 + 2,400 + 48,000 + 10,080 + 840 = 61,770; biases 6 + 16 + 120 + 84 + 10 = 236
HW5 = [(6, 450), (16, 2400), (120, 48000), (84, 10080), (10, 840)]


def layers(per_channel: bool, kind: str = "fixed_point"):
    return [{"weights": w, "biases": b, "weight_scale": [0.01] * (b if per_channel else 1),
             "requantize": {"kind": kind}} for b, w in HW5]


@pytest.mark.parametrize("stage, per_channel, kind, expected", [
    ("float", False, "fixed_point", 4 * 62006),  # 248,024: every parameter float32
    ("w8", False, "fixed_point", 61770 + 4 * 236 + 4 * 5),  # int8 weights, float32 biases, 5 scales
    ("w8", True, "fixed_point", 61770 + 4 * 236 + 4 * 236),  # a scale per output channel: 236 of them
    ("w8a8", False, "fixed_point", 61770 + 4 * 236 + 4 * 5 + 4 * 6),  # + the input's and 5 outputs' scales
    ("w8a8b32", False, "fixed_point", 61770 + 4 * 236 + 4 * 5 + 4 * 6),  # an int32 bias is as large as a float
    ("integer", False, "fixed_point", 61770 + 4 * 236 + 5 * 5 + 8),  # M0 (4) + shift (1) per layer, 2 scales
    ("integer", False, "shift", 61770 + 4 * 236 + 1 * 5 + 8),  # power-of-two scales: a shift byte per layer
    ("integer", True, "float", 61770 + 4 * 236 + 4 * 236 + 8),  # a float32 M per channel
])
def test_bytes_per_stage(stage, per_channel, kind, expected):
    assert payload_bytes(stage, layers(per_channel, kind)) == expected


def test_top1_and_agreement():
    assert top1([1, 2, 3, 4], [1, 2, 0, 4]) == 0.75
    assert agreement([1, 2, 3, 4], [1, 0, 3, 0]) == 0.5
    with pytest.raises(ValueError):
        top1([1, 2], [1])


def run(seed: int, float_top1: float, w8a8: float, integer: float) -> dict:
    stages = ["float", "w8a8", "integer"]
    record = {"seed": seed, "stages": stages, "test_samples": 100, "top1_float": float_top1, "top1_w8a8": w8a8,
              "top1_integer": integer}
    for stage in stages:
        record.update({f"inference_s_{stage}": 0.01 * (seed + 1), f"payload_bytes_{stage}": 1000,
                       f"serialized_bytes_{stage}": 1500})
    return record


def test_stage_spread_is_over_runs_and_the_float_difference_is_paired():
    frame = stage_frame([run(0, 0.97, 0.96, 0.96), run(1, 0.95, 0.95, 0.93), run(2, 0.96, 0.96, 0.96)])
    integer = frame[frame["stage"] == "integer"].iloc[0]
    assert integer["runs"] == 3
    assert integer["top1_pct_mean"] == pytest.approx(95.0)  # (96 + 93 + 96) / 3
    assert integer["top1_pct_std"] == pytest.approx(3 ** 0.5)  # deviations 1, -2, 1: sqrt(6 / 2), ddof=1
    assert integer["delta_pts_mean"] == pytest.approx(-1.0)  # -1, -2, 0 run by run
    assert integer["delta_pts_std"] == pytest.approx(1.0)
    assert integer["inference_ms_median"] == pytest.approx(20.0) and integer["inference_ms_max"] == pytest.approx(30)


def test_bars_compare_the_means():
    stages = pd.DataFrame({"stage": ["float", "integer", "w8a8", "torch_ao_own"],
                           "top1_pct_mean": [97.0, 96.2, 96.5, 95.9]})
    bars = bar_frame(stages)
    assert bars["difference_pts"].tolist() == pytest.approx([-0.8, 0.6])
    assert bars["passes"].tolist() == [True, False]
    assert len(bar_frame(stages[stages["stage"] != "torch_ao_own"])) == 1  # no torch.ao: only the float bar


def test_the_cross_check_text_says_which_engine_why_and_on_which_cpu():
    from hpml.analysis.quantize.sections import _torch_ao_text

    ao = {"available": True, "reason": None, "engine": "qnnpack", "notes": [],
          "engine_reason": "qnnpack: x86, fbgemm, onednn saturate full-range int8 sums here (this CPU has no VNNI: "
                           "int16 pair sums saturate); qnnpack computes them exactly"}
    cpu = {"model": "AMD EPYC 7B13", "capability": "AVX2", "simd": ["avx2", "fma"], "vnni": False}
    run = {"torch_ao": ao, "cpu": cpu, "integer_agrees_torch_ao_hpml": 1.0}
    text = _torch_ao_text([run, dict(run)])
    assert text.startswith("torch.ao cross-check on the qnnpack engine (qnnpack: x86, fbgemm, onednn saturate")
    assert "on AMD EPYC 7B13 (torch's CPU capability AVX2; avx2, fma)" in text and "100.00 %" in text
    other = dict(run, torch_ao=dict(ao, engine_reason="x86 computes full-range int8 sums exactly here"))
    assert "the runs chose 2 ways" in _torch_ao_text([run, other])
    # a result from before the engine's reason and the CPU were recorded
    old = {"torch_ao": {"available": True, "reason": None, "engine": "x86", "notes": []}, "cpu": None}
    assert _torch_ao_text([old]) == "torch.ao cross-check on the x86 engine."
