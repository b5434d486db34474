"""PALEO's formulas (analysis/paleo/model.py) against values computed by hand."""

from __future__ import annotations

import math

import pytest

from hpml.analysis.paleo.model import (
    achieved_ppp,
    compute_time_s,
    memory_bytes,
    memory_time_s,
    predicted_time_s,
    ratio,
    relative_error,
    time_per_image_s,
)
from hpml.conf.hardware.gpu_peaks import peaks_by_key


def test_memory_bytes_reads_inputs_and_parameters_once_and_writes_the_output_once():
    # hpml_cnn's first convolution at batch 2, fp32: input 2*3*32*32*4 = 24,576 B; weights 32*3*3*3*4 +
    # bias 32*4 = 3,456 B; output 2*32*32*32*4 = 262,144 B
    assert memory_bytes(24_576, 3_456, 262_144) == 290_176


def test_the_compute_term_is_flops_over_ppp_times_peak():
    # 3,538,944 FLOPs at half of 1 TFLOP/s: 3,538,944 / 0.5e12 = 7.077888 µs
    assert compute_time_s(3_538_944, peak_tflops=1.0, ppp=0.5) == pytest.approx(7.077888e-6, rel=1e-12)


def test_the_memory_term_is_bytes_over_bandwidth():
    # 290,176 B at 100 GB/s = 2.90176 µs
    assert memory_time_s(290_176, 100.0) == pytest.approx(2.90176e-6, rel=1e-12)


def test_paleo_adds_the_two_terms():
    assert predicted_time_s(3_538_944, 290_176, 1.0, 100.0, 0.5) == pytest.approx(7.077888e-6 + 2.90176e-6)
    # a VGG-like layer on an H200 in bf16 (989.5 TFLOP/s dense, 4,800 GB/s), PPP 1:
    # 10 GFLOP / 989.5e12 = 10.10611 µs; 6 MB / 4.8e12 B/s = 1.25 µs; sum 11.35611 µs
    assert predicted_time_s(1e10, 6e6, 989.5, 4800.0, 1.0) == pytest.approx(11.35611419909045e-6, rel=1e-12)


def test_achieved_ppp_is_the_share_of_the_peak_and_none_without_flops():
    # 3,538,944 FLOPs in 10 µs = 0.3538944 TFLOP/s: 35.38944 % of 1 TFLOP/s
    assert achieved_ppp(3_538_944, 1e-5, 1.0) == pytest.approx(0.3538944, rel=1e-12)
    # 10 GFLOP in 25 µs = 400 TFLOP/s: 400 / 989.5 = 40.4245 %
    assert achieved_ppp(1e10, 25e-6, 989.5) == pytest.approx(0.40424456796361796, rel=1e-12)
    assert achieved_ppp(0, 1e-5, 1.0) is None  # a ReLU: no counted FLOPs, no PPP


def test_a_layer_at_its_achieved_ppp_and_infinite_bandwidth_is_predicted_exactly():
    ppp = achieved_ppp(1e10, 25e-6, 989.5)
    assert compute_time_s(1e10, 989.5, ppp) == pytest.approx(25e-6, rel=1e-12)


def test_the_error_is_signed_and_relative_to_the_measurement():
    assert relative_error(9.979648e-6, 1e-5) == pytest.approx(-0.0020352, rel=1e-9)
    assert relative_error(2.0, 1.0) == 1.0 and relative_error(0.5, 1.0) == -0.5
    with pytest.raises(ValueError):
        relative_error(1.0, 0.0)


@pytest.mark.parametrize("call", [lambda: compute_time_s(1, 0.0, 1.0), lambda: compute_time_s(1, 1.0, 0.0),
                                  lambda: compute_time_s(1, 1.0, 1.5), lambda: memory_time_s(1, 0.0),
                                  lambda: achieved_ppp(1, 0.0, 1.0), lambda: time_per_image_s(1, 0.0)])
def test_impossible_inputs_raise(call):
    with pytest.raises(ValueError):
        call()


def test_ratio_of_a_zero_denominator_is_nan():
    assert ratio(3.0, 2.0) == 1.5 and math.isnan(ratio(1.0, 0.0))


def test_the_k80_answer_for_vgg19():
    """The study's question: VGG19's inference time per image from its FLOPs and the K80's published peaks.
    VGG19 at 224x224: 19.63 G MACs (torchvision's metadata) = 39.26 GFLOPs. K80 board (two GK210, GPU Boost):
    8.73 TFLOP/s fp32, 2.91 fp64; one CUDA device (one GK210) half of that.
      fp32: 39.26e9 / 8.73e12 = 4.497 ms (board), 8.995 ms (one device)
      fp64: 39.26e9 / 2.91e12 = 13.491 ms (board), 26.983 ms (one device)"""
    k80 = peaks_by_key("k80")
    flops = 2 * 19.63e9
    assert time_per_image_s(flops, k80.tflops["fp32"]) == pytest.approx(4.4971363e-3, rel=1e-6)
    assert time_per_image_s(flops, k80.tflops["fp64"]) == pytest.approx(13.4914089e-3, rel=1e-6)
    device = k80.per_device()
    assert time_per_image_s(flops, device.tflops["fp32"]) == pytest.approx(8.9942726e-3, rel=1e-6)
    assert time_per_image_s(flops, device.tflops["fp64"]) == pytest.approx(26.9828179e-3, rel=1e-6)
