"""environment.cpu (workloads/common/cpu.py): the CPU model and the SIMD flags that decide int8 kernels' answers."""

from __future__ import annotations

from hpml.workloads.common.cpu import describe_cpu, parse_cpuinfo

# Two processors of a /proc/cpuinfo, abridged: the first one's lines are taken
EPYC_AVX2_ONLY = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 7B13 64-Core Processor
flags\t\t: fpu sse sse2 avx avx2 fma bmi2
processor\t: 1
model name\t: another
flags\t\t: avx512f avx512_vnni
"""


def test_cpuinfo_model_and_flags_of_the_first_processor():
    info = parse_cpuinfo(EPYC_AVX2_ONLY)
    assert info == {"model": "AMD EPYC 7B13 64-Core Processor", "flags": ["fpu", "sse", "sse2", "avx", "avx2",
                                                                           "fma", "bmi2"]}
    assert parse_cpuinfo("") == {"model": None, "flags": []}


def test_this_machines_cpu_is_described_with_its_capability():
    import torch

    cpu = describe_cpu()
    assert cpu["model"] and cpu["capability"] == torch.backends.cpu.get_cpu_capability()
    flags = set(parse_cpuinfo(open("/proc/cpuinfo").read())["flags"])
    assert cpu["vnni"] == bool(flags & {"avx512_vnni", "avx_vnni"})
    assert set(cpu["simd"]) <= flags
