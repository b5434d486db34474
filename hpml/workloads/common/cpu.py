"""Which CPU a result ran on: its model, the SIMD extensions that change what int8 and float kernels compute,
and the capability PyTorch's kernels dispatched to.

Why it is recorded: the same torch and the same inputs give different int8 results on different x86 CPUs.
Without VNNI, fbgemm and oneDNN multiply u8 x s8 pairs with vpmaddubsw, whose int16 pair sum saturates with
full-range 8-bit activations; with VNNI (vpdpbusd) the products accumulate straight into int32. A result that
names only "x86" cannot be read without knowing which of the two ran.
"""

from __future__ import annotations

import platform
from typing import Dict, List, Optional

import torch

# The flags (as Linux's /proc/cpuinfo spells them) that decide which kernels fbgemm, oneDNN and ATen pick.
SIMD_FLAGS = ("avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx_vnni", "avx512_bf16",
              "amx_int8", "amx_bf16")
VNNI_FLAGS = ("avx512_vnni", "avx_vnni")

# Variables that cap the instruction set a library dispatches to (what a test or a user sets to reproduce
# another CPU's kernels on this one); recorded beside the flags, since they change the answer as much.
ISA_OVERRIDES = ("ATEN_CPU_CAPABILITY", "FBGEMM_ENABLE_INSTRUCTIONS", "ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA")


def parse_cpuinfo(text: str) -> Dict[str, object]:
    """The first processor's model name and flags from /proc/cpuinfo's text."""
    model: Optional[str] = None
    flags: List[str] = []
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name" and model is None:
            model = value.strip()
        elif key == "flags" and not flags:
            flags = value.split()
    return {"model": model, "flags": flags}


def _cpuinfo() -> Dict[str, object]:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as file:
            return parse_cpuinfo(file.read())
    except OSError:  # not Linux: the model from platform, no flags
        return {"model": None, "flags": []}


def describe_cpu() -> Dict[str, object]:
    """{"model", "capability" (torch.backends.cpu.get_cpu_capability()), "simd" (the SIMD_FLAGS present),
    "vnni" (true, false, or null where the flags cannot be read)}."""
    info = _cpuinfo()
    flags = set(info["flags"])
    try:
        capability: Optional[str] = torch.backends.cpu.get_cpu_capability()
    except (AttributeError, RuntimeError):  # a torch without the call
        capability = None
    return {
        "model": info["model"] or platform.processor() or platform.machine() or None,
        "capability": capability,
        "simd": [flag for flag in SIMD_FLAGS if flag in flags],
        "vnni": any(flag in flags for flag in VNNI_FLAGS) if flags else None,
    }
