"""The probe's measuring functions on a real GPU (`pytest -m gpu`; skipped without CUDA): rates below the
published ceilings, input rotation where matrices fit in L2, and issue 14's bar: the probe's bf16 matmul within
5 % of plain torch.matmul timed another way. Measured output: docs/results/probe/README.md.
"""

from __future__ import annotations

import statistics

import pytest
import torch

from hpml.conf.hardware.gpu_peaks import peaks_for_device
from hpml.contract.rates import GBps, tflops_per_s
from hpml.workloads.common import device_peaks

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]

GPU = torch.device("cuda", 0)


def published():
    peaks = peaks_for_device(torch.cuda.get_device_name(GPU))
    if peaks is None:
        pytest.skip(f"no published peaks for {torch.cuda.get_device_name(GPU)!r} in conf/hardware/gpu_peaks.py")
    return peaks.per_device()


def median_tflops(record):
    return statistics.median(tflops_per_s(record["flops"], t) for t in record["times_s"])


def median_GBps(record):
    return statistics.median(GBps(record["bytes_moved"], t) for t in record["times_s"])


def test_bf16_matmul_is_within_5_percent_of_torch_matmul_timed_by_wall_clock():
    # as the probe runs it (conf/workload/probe.yaml): past the power cap's burst, paired rounds for >= 1 s
    paired = device_peaks.matmul_paired_times(GPU, 8192, "bf16", calls=10, rounds=20, warmup=5, warmup_s=1.0,
                                              measure_s=1.0)
    probe, reference = paired["probe"], paired["reference"]
    assert len(probe["times_s"]) == 10 * len(reference["times_s"]) >= 200
    ratio = median_tflops(probe) / median_tflops(reference)
    assert abs(ratio - 1) <= 0.05, (median_tflops(probe), median_tflops(reference))


def test_matmul_rates_stay_under_the_published_dense_peak():
    peaks = published()
    for dtype in ("fp32", "tf32", "bf16"):
        rate = median_tflops(device_peaks.matmul_times(GPU, 8192, dtype, warmup=3, reps=5))
        assert 0.3 * peaks.tflops[dtype] < rate < 1.05 * peaks.tflops[dtype], (dtype, rate)


def test_small_matrices_rotate_through_more_than_the_l2():
    l2 = device_peaks.l2_cache_bytes(GPU)
    record = device_peaks.matmul_times(GPU, 512, "fp16", warmup=2, reps=4)
    set_bytes = 2 * 512 * 512 * 2
    assert record["input_sets"] == min(device_peaks.MAX_INPUT_SETS, -(-2 * l2 // set_bytes)) > 1
    assert len(record["times_s"]) == 4 and min(record["times_s"]) > 0


def test_copy_and_triad_stay_under_the_memory_bandwidth():
    peaks = published()
    for measure in (device_peaks.copy_times, device_peaks.triad_times):
        rate = median_GBps(measure(GPU, 2 ** 30, warmup=3, reps=10))
        assert 0.5 * peaks.memory_GBps < rate < peaks.memory_GBps, (measure.__name__, rate)


def test_triad_computes_b_plus_s_times_c_on_the_gpu():
    b, c = torch.randn(1000, device=GPU), torch.randn(1000, device=GPU)
    a = torch.full_like(b, float("nan"))  # poisoned: every element must be written
    device_peaks.triad(a, b, c)
    # Against float64: torch.add(alpha=) may fuse the multiply-add (one rounding instead of two), so where
    # b and s*c nearly cancel a float32 reference differs in relative terms; absolutely, by at most about
    # one float32 ulp of |s*c| (< 1e-6 for |c| < 8).
    reference = b.double() + device_peaks.TRIAD_SCALAR * c.double()
    torch.testing.assert_close(a.double(), reference, rtol=0, atol=2e-6)


@pytest.mark.parametrize("direction", device_peaks.TRANSFER_DIRECTIONS)
@pytest.mark.parametrize("pinned", [True, False])
def test_host_transfers_move_data_and_stay_under_the_host_link(direction, pinned):
    peaks = published()
    record = device_peaks.transfer_times(GPU, 64 * 2 ** 20, direction, pinned, warmup=2, reps=5)
    assert record["bytes_moved"] == 64 * 2 ** 20 and len(record["times_s"]) == 5
    assert 0 < median_GBps(record) < peaks.host_link_GBps
