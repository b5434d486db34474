"""conf/hardware/gpu_peaks.py: the published GPU peaks, their look-up by CUDA device name, the dense halving of
the datasheets' sparse tensor rates, the K80's per-board numbers, and the formulas that put a measurement into
the table's units (against hand-computed values)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from hpml.conf.hardware.gpu_peaks import DTYPES, PCIE_X16_GBPS, PEAKS, GpuPeaks, peaks_by_key, peaks_for_device
from hpml.contract.rates import GBps, matmul_flops, tflops_per_s

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("device_name, key", [
    ("NVIDIA H100 80GB HBM3", "h100_sxm"),       # what torch.cuda.get_device_name() says on an H100 SXM5
    ("NVIDIA H200", "h200_sxm"),                 # ... on an H200 SXM (seen on this workplace's machines)
    ("NVIDIA A100-SXM4-80GB", "a100_sxm4_80gb"),
    ("NVIDIA A100-SXM-80GB", "a100_sxm4_80gb"),
    ("Tesla V100-SXM2-16GB", "v100_sxm2"),
    ("Tesla V100-SXM2-32GB", "v100_sxm2"),
    ("Tesla K80", "k80"),
    ("nvidia h200", "h200_sxm"),                 # case does not matter
])
def test_a_device_name_finds_its_entry(device_name, key):
    assert peaks_for_device(device_name).key == key


@pytest.mark.parametrize("device_name", [
    "NVIDIA H100 PCIe",          # other clocks and power than the SXM5: its peaks are not h100_sxm's
    "NVIDIA H100 NVL",
    "NVIDIA H200 NVL",           # the PCIe H200: 600 W, lower peaks
    "NVIDIA GH200 480GB",        # "H200" inside a longer word is not the H200
    "NVIDIA A100-SXM4-40GB",     # 1,555 GB/s, not the 80GB's 2,039
    "NVIDIA A100 80GB PCIe",
    "Tesla V100-PCIE-16GB",
    "NVIDIA GeForce RTX 4090",
    "CPU (x86_64)",
    "",
])
def test_a_board_not_in_the_table_gets_none_rather_than_another_boards_peaks(device_name):
    assert peaks_for_device(device_name) is None


def test_datasheet_rates_with_sparsity_are_twice_the_dense_rates_kept_here():
    h200 = PEAKS["h200_sxm"]
    # NVIDIA H200 datasheet: TF32 989*, BF16 1,979*, FP16 1,979* TFLOPS, * with sparsity
    assert (h200.tflops["tf32"] * 2, h200.tflops["bf16"] * 2, h200.tflops["fp16"] * 2) == (989, 1979, 1979)
    # NVIDIA A100 datasheet: TF32 312*, BF16/FP16 624* (dense 156 / 312)
    a100 = PEAKS["a100_sxm4_80gb"]
    assert (a100.tflops["tf32"], a100.tflops["bf16"], a100.tflops["fp16"]) == (156, 312, 312)
    # H100 whitepaper, dense: TF32 494.7, BF16/FP16 989.4 (sparse 989.4 / 1,978.9)
    h100 = PEAKS["h100_sxm"]
    assert (h100.tflops["tf32"], h100.tflops["bf16"]) == (494.7, 989.4)


def test_the_published_numbers_as_sourced():
    expected = {  # key: (fp64, fp32, tf32, bf16, fp16, memory GB/s, host link GB/s)
        "k80": (2.91, 8.73, None, None, None, 480, 16),
        "v100_sxm2": (7.8, 15.7, None, None, 125, 900, 16),
        "a100_sxm4_80gb": (19.5, 19.5, 156, 312, 312, 2039, 32),
        "h100_sxm": (66.9, 66.9, 494.7, 989.4, 989.4, 3350, 64),
        "h200_sxm": (67, 67, 494.5, 989.5, 989.5, 4800, 64),
    }
    assert set(PEAKS) == set(expected)
    for key, values in expected.items():
        peaks = PEAKS[key]
        assert tuple(peaks.tflops[d] for d in DTYPES) + (peaks.memory_GBps, peaks.host_link_GBps) == values, key
        assert peaks.source and peaks.key == key


def test_fp64_is_the_tensor_core_rate_where_there_is_one_and_fp32_never_is():
    """A DGEMM runs on the FP64 tensor cores of an A100/H100: the vector rate (9.7, 33.5) would be beaten."""
    assert PEAKS["a100_sxm4_80gb"].tflops["fp64"] == 19.5 and PEAKS["h100_sxm"].tflops["fp64"] == 66.9
    assert "9.7" in PEAKS["a100_sxm4_80gb"].source and "33.5" in PEAKS["h100_sxm"].source
    assert PEAKS["h100_sxm"].tflops["fp32"] == 66.9  # FP32 vector; TF32 is its own key


def test_the_k80_numbers_are_per_board_and_one_cuda_device_gets_half():
    board = PEAKS["k80"]
    assert board.devices_per_board == 2
    device = board.per_device()
    assert device.tflops == {"fp64": 1.455, "fp32": 4.365, "tf32": None, "bf16": None, "fp16": None}
    assert device.memory_GBps == 240 and device.devices_per_board == 1
    assert device.host_link_GBps == 16  # not halved: either GPU alone can use the board's x16 link
    assert PEAKS["h200_sxm"].per_device() is PEAKS["h200_sxm"]


def test_pcie_per_direction_follows_the_hardware_groups_convention():
    for gen, link in ((4, "pcie_gen4"), (5, "pcie_gen5")):
        doc = yaml.safe_load((REPO / "hpml" / "conf" / "hardware" / f"{link}.yaml").read_text())
        assert PCIE_X16_GBPS[gen] == doc["workload"]["link_peak_GBps"]
    assert PCIE_X16_GBPS[3] == 8 * 16 / 8  # 8 GT/s x 16 lanes / 8 bits, before 128b/130b encoding


def test_as_record_is_json_and_says_everything():
    record = PEAKS["h200_sxm"].as_record()
    assert json.loads(json.dumps(record)) == record
    assert record["tflops"]["bf16"] == 989.5 and record["match"] == ["H200"] and record["devices_per_board"] == 1


def test_an_unknown_key_names_the_known_ones():
    assert peaks_by_key("a100_sxm4_80gb") is PEAKS["a100_sxm4_80gb"]
    with pytest.raises(ValueError, match="unknown GPU peaks key 'h300': one of k80, v100_sxm2, a100_sxm4_80gb, "
                                         "h100_sxm, h200_sxm"):
        peaks_by_key("h300")


def test_an_entry_must_name_every_dtype_and_is_read_only():
    with pytest.raises(ValueError, match="tflops must name exactly"):
        GpuPeaks(key="x", name="x", match=("x",), tflops={"fp32": 1.0}, memory_GBps=1, host_link_GBps=1, source="x")
    with pytest.raises(TypeError):
        PEAKS["h200_sxm"].tflops["bf16"] = 1.0


def test_formulas_against_hand_computed_values():
    assert matmul_flops(8192) == 1_099_511_627_776  # 2 * 8192^3
    assert matmul_flops(1000) == 2_000_000_000
    assert tflops_per_s(2_000_000_000, 0.002) == pytest.approx(1.0)  # 2e9 FLOP in 2 ms = 1e12 FLOP/s
    assert tflops_per_s(matmul_flops(8192), 1.25e-3) == pytest.approx(879.6093022208)
    assert GBps(2 * 2 ** 30, 0.5e-3) == pytest.approx(4294.967296)  # a 1 GiB copy (2 GiB moved) in 0.5 ms
    assert GBps(3e9, 1.0) == 3.0
    for formula in (tflops_per_s, GBps):
        with pytest.raises(ValueError, match="seconds must be > 0, got 0"):
            formula(1, 0)
