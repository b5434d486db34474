"""Published peak rates of the GPUs our studies run on: dense TFLOP/s per dtype, memory and host-link bandwidth.

What the numbers are
- `tflops` holds DENSE rates (no 2:4 structured sparsity) in TFLOP/s (1e12 FLOP/s), at the boost clock.
  Where the GPU has a tensor-core rate for a dtype it is that rate, because cuBLAS uses tensor cores for such a
  matmul: so "fp64" is the FP64 tensor-core rate on A100/H100/H200 (a DGEMM runs on DMMA and beats the vector
  rate), "fp32" is always the plain (non-tensor) FP32 rate (matmul with TF32 off), "tf32" exists only from
  Ampere on. None: the GPU has no such rate (e.g. no bf16 on a K80 or V100).
- Datasheets since Ampere print tensor rates "with sparsity" (marked *): those are exactly 2x the dense rate,
  and the dense value here is half of the printed one. The whitepapers print both; where they do, we take the
  whitepaper's dense value (H100 989.4, not the datasheet's 1,979*/2 = 989.5).
- `memory_GBps` and `host_link_GBps` are GB/s = 1e9 B/s. The host link is PCIe x16, per direction, the
  datasheets' both-directions figure halved, before line encoding: Gen3 16, Gen4 32, Gen5 64 GB/s, the
  convention of conf/hardware/pcie_gen{4,5}.yaml (after 128b/130b encoding: 15.75, 31.5, 63.0).

Matching a CUDA device name (torch.cuda.get_device_name()) to an entry, see `peaks_for_device`:
case-insensitive whole-word substrings, so "H200" does not match "NVIDIA GH200 480GB", and a name with a
variant word ("PCIe", "NVL") matches only an entry whose own substring has that word: an H100 PCIe or an H200
NVL has other peaks (lower clocks and power) and is not in the table, so it gets None rather than SXM numbers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Dict, Mapping, Optional, Tuple

DTYPES = ("fp64", "fp32", "tf32", "bf16", "fp16")

# PCIe x16, GB/s per direction: the datasheets' "PCIe GenN: X GB/s" (both directions) halved, no encoding taken off.
PCIE_X16_GBPS = {3: 16.0, 4: 32.0, 5: 64.0}

# Words that make a board a different product with different peaks (see the module docstring).
VARIANT_WORDS = ("pcie", "nvl")


@dataclass(frozen=True)
class GpuPeaks:
    key: str                      # "h200_sxm"
    name: str                     # "NVIDIA H200 SXM 141GB"
    match: Tuple[str, ...]        # whole-word substrings of torch.cuda.get_device_name() that identify it
    tflops: Mapping[str, Optional[float]]   # DTYPES -> dense TFLOP/s, the tensor-core rate where there is one;
    #                                         None: no such rate
    memory_GBps: float            # device memory bandwidth, GB/s = 1e9 B/s
    host_link_GBps: float         # host link per direction (PCIe), GB/s
    source: str                   # datasheet / whitepaper title (and version/date), what was halved and why
    # CUDA devices on one board. The published numbers are per board; a K80 board is two GK210 GPUs and CUDA
    # shows each as one device, which gets half of the board's FLOP/s and memory bandwidth (see per_device()).
    devices_per_board: int = 1

    def __post_init__(self) -> None:
        if set(self.tflops) != set(DTYPES):
            raise ValueError(f"GpuPeaks {self.key}: tflops must name exactly {DTYPES}, got {sorted(self.tflops)}")
        object.__setattr__(self, "tflops", MappingProxyType(dict(self.tflops)))  # read-only, like the rest

    def per_device(self) -> "GpuPeaks":
        """The share of one CUDA device: FLOP/s and memory bandwidth / devices_per_board. The host link is not
        divided: the two GPUs of a K80 sit behind one PCIe switch and either one alone can use the whole x16 link."""
        n = self.devices_per_board
        if n == 1:
            return self
        return GpuPeaks(key=f"{self.key}_per_device", name=f"{self.name}, one of {n} devices",
                        match=self.match,
                        tflops={d: None if v is None else v / n for d, v in self.tflops.items()},
                        memory_GBps=self.memory_GBps / n, host_link_GBps=self.host_link_GBps,
                        source=f"{self.source} Divided by {n}: one of the board's {n} CUDA devices.",
                        devices_per_board=1)

    def as_record(self) -> Dict[str, Any]:
        """JSON-ready, for result.json."""
        return {"key": self.key, "name": self.name, "match": list(self.match), "tflops": dict(self.tflops),
                "memory_GBps": self.memory_GBps, "host_link_GBps": self.host_link_GBps, "source": self.source,
                "devices_per_board": self.devices_per_board}


def _dense(with_sparsity: float) -> float:
    """A datasheet's "with sparsity" tensor rate (2:4 structured sparsity doubles it) as the dense rate."""
    return with_sparsity / 2


_ENTRIES = (
    GpuPeaks(
        key="k80", name="NVIDIA Tesla K80 (board of two GK210)", match=("Tesla K80",),
        # Per BOARD. One CUDA device (one GK210) gets half: fp32 4.365, fp64 1.455 TFLOP/s, 240 GB/s.
        # Base clocks (no GPU Boost): 5.6 / 1.87 TFLOP/s per board. No tensor cores.
        tflops={"fp64": 2.91, "fp32": 8.73, "tf32": None, "bf16": None, "fp16": None},
        memory_GBps=480.0, host_link_GBps=PCIE_X16_GBPS[3], devices_per_board=2,
        source=("NVIDIA Tesla K80 datasheet (Nov 2014): 'up to 8.73 Tflops single-precision, 2.91 Tflops "
                "double-precision with NVIDIA GPU Boost' (5.6 / 1.87 at base clocks), 480 GB/s, per board of "
                "two GK210 (press copies round 2 x 2496 cores x 2 x 875 MHz = 8.736 to 8.74); PCIe Gen3 x16. "
                "No fp16/bf16/tf32 rate: no tensor cores."),
    ),
    GpuPeaks(
        key="v100_sxm2", name="NVIDIA Tesla V100 SXM2", match=("V100-SXM2", "V100 SXM2"),
        tflops={"fp64": 7.8, "fp32": 15.7, "tf32": None, "bf16": None, "fp16": 125.0},
        memory_GBps=900.0, host_link_GBps=PCIE_X16_GBPS[3],
        source=("NVIDIA Tesla V100 GPU Accelerator datasheet (2017/2018), V100 for NVLink (SXM2): double 7.8, "
                "single 15.7, tensor 125 TFLOPS (dense: Volta has no sparsity); HBM2 900 GB/s; host PCIe Gen3 "
                "x16. No tf32/bf16 (Ampere and later)."),
    ),
    GpuPeaks(
        key="a100_sxm4_80gb", name="NVIDIA A100 SXM4 80GB", match=("A100-SXM4-80GB", "A100-SXM-80GB"),
        # fp64 is the FP64 tensor-core rate (DGEMM uses it); the vector FP64 rate is 9.7.
        tflops={"fp64": 19.5, "fp32": 19.5, "tf32": _dense(312.0), "bf16": _dense(624.0), "fp16": _dense(624.0)},
        memory_GBps=2039.0, host_link_GBps=PCIE_X16_GBPS[4],
        source=("NVIDIA A100 Tensor Core GPU datasheet (2021, A100 80GB SXM): FP64 9.7, FP64 Tensor Core 19.5, "
                "FP32 19.5, TF32 156 | 312*, BF16 312 | 624*, FP16 312 | 624* TFLOPS (* with sparsity, halved "
                "here), HBM2e 2,039 GB/s, PCIe Gen4 64 GB/s (both directions)."),
    ),
    GpuPeaks(
        key="h100_sxm", name="NVIDIA H100 SXM5 80GB", match=("H100 80GB HBM3", "H100 SXM5", "H100-SXM5"),
        # fp64 is the FP64 tensor-core rate (DGEMM uses it); the vector FP64 rate is 33.5.
        tflops={"fp64": 66.9, "fp32": 66.9, "tf32": 494.7, "bf16": 989.4, "fp16": 989.4},
        memory_GBps=3350.0, host_link_GBps=PCIE_X16_GBPS[5],
        source=("NVIDIA H100 Tensor Core GPU Architecture whitepaper (GTC 2022, v1.0x), H100 SXM5 table: FP64 "
                "33.5, FP64 Tensor 66.9, FP32 66.9, TF32 Tensor 494.7, BF16/FP16 Tensor 989.4 TFLOPS dense "
                "(1,978.9 with sparsity; the datasheet's 1,979* / 989* are the sparse values); HBM3 3.35 TB/s "
                "(datasheet); PCIe Gen5 128 GB/s (both directions)."),
    ),
    GpuPeaks(
        key="h200_sxm", name="NVIDIA H200 SXM 141GB", match=("H200",),
        # The same GH100 compute as the H100 SXM (the datasheet rounds: 34 / 67 / 989* / 1,979*); more and faster HBM.
        tflops={"fp64": 67.0, "fp32": 67.0, "tf32": _dense(989.0), "bf16": _dense(1979.0), "fp16": _dense(1979.0)},
        memory_GBps=4800.0, host_link_GBps=PCIE_X16_GBPS[5],
        source=("NVIDIA H200 Tensor Core GPU datasheet (2024), H200 SXM: FP64 34, FP64 Tensor Core 67, FP32 67, "
                "TF32 Tensor Core 989*, BF16/FP16 Tensor Core 1,979* TFLOPS (* with sparsity: halved here to "
                "the dense 494.5 / 989.5); 141 GB HBM3e at 4.8 TB/s; PCIe Gen5 128 GB/s (both directions)."),
    ),
)

PEAKS: Dict[str, GpuPeaks] = {p.key: p for p in _ENTRIES}


def _whole_word(needle: str, haystack: str) -> bool:
    return re.search(rf"(?<![a-z0-9]){re.escape(needle.lower())}(?![a-z0-9])", haystack.lower()) is not None


def _identifies(needle: str, device_name: str) -> bool:
    """`needle` names the device: a whole-word substring, and every variant word of the name is in the needle."""
    variants = [w for w in VARIANT_WORDS if _whole_word(w, device_name)]
    return _whole_word(needle, device_name) and all(_whole_word(w, needle) for w in variants)


def peaks_for_device(device_name: str) -> Optional[GpuPeaks]:
    """The entry whose `match` identifies torch.cuda.get_device_name(); None when no entry does."""
    for peaks in PEAKS.values():
        if any(_identifies(needle, device_name) for needle in peaks.match):
            return peaks
    return None


def peaks_by_key(key: str) -> GpuPeaks:
    """The entry called `key`; an unknown key is a ValueError that names the known keys."""
    if key not in PEAKS:
        raise ValueError(f"unknown GPU peaks key {key!r}: one of {', '.join(PEAKS)}")
    return PEAKS[key]
