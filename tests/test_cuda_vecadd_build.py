"""cuda_vecadd's programs and their build cache, with the real compilers of this machine (no GPU needed):
the C++ CPU baseline builds, runs and checks its sums; the cache key follows the source and the compiler; a
cached build compiles nothing; two points building at once compile once; nvcc compiles vecadd.cu for sm_90."""

from __future__ import annotations

import configparser
import fnmatch
import json
import os
import shutil
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from hpml.workloads.cuda_vecadd.__main__ import WrongSum, check_sums, summarize
from hpml.workloads.cuda_vecadd.build_cache import build, cache_key, cache_root
from hpml.workloads.cuda_vecadd.cpu_path import build_cpu, cpu_request, run_cpu
from hpml.workloads.cuda_vecadd.nvrtc_path import THREADS_PER_BLOCK, blocks_for
from hpml.workloads.cuda_vecadd.programs import CPU_PROGRAM, HOST_HEADER, KERNELS_DIR

REPO = Path(__file__).resolve().parent.parent
C_COMPILER = shutil.which("c++") or shutil.which("g++")
pytestmark = pytest.mark.skipif(C_COMPILER is None, reason="needs a host C++ compiler")


@pytest.fixture(scope="module")
def cpu_binary(tmp_path_factory):
    return build_cpu(tmp_path_factory.mktemp("cache")).file


def wrapper(folder: Path, name: str, version: str, log: Path | None = None, sleep_s: float = 0) -> Path:
    """A real compiler behind a script that prints another version (and, given a log, notes each compile)."""
    script = folder / name
    script.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        if [ "$1" = "--version" ]; then echo "{version}"; exit 0; fi
        {f'echo compile >> {log}' if log else ''}
        sleep {sleep_s}
        exec {C_COMPILER} "$@"
        """))
    script.chmod(0o755)
    return script


def test_the_cpu_baseline_adds_right_and_records_every_part(cpu_binary):
    run = run_cpu(cpu_binary, [1000, 2_000_000], repetitions=3, warmup=1)
    assert [case["elements"] for case in run.cases] == [1000, 2_000_000]
    for case in run.cases:
        assert (case["shape"], case["memory"], case["repetitions"], case["warmup"]) == ("cpu", "host", 3, 1)
        assert case["mismatches"] == [0, 0, 0]
        assert all(len(case[part]) == 3 and min(case[part]) >= 0 for part in ("alloc_s", "kernel_s", "free_s"))
        assert case["h2d_s"] is None and case["d2h_s"] is None and case["kernel_resident_s"] is None
    assert run.cases[1]["kernel_s"][0] > run.cases[0]["kernel_s"][0]  # 2,000 times the work


def test_a_wrong_sum_is_caught_and_fails_the_point(cpu_binary):
    run = run_cpu(cpu_binary, [1000], repetitions=2, warmup=0, extra=["--corrupt-one"])
    assert run.cases[0]["mismatches"] == [1, 1]  # one element changed after the add, in each repetition
    body = summarize(None, {"build": {}, "cases": run.cases, "program_wall_s": 0.0})
    assert body["derived"]["all_correct"] is False
    with pytest.raises(WrongSum, match=r"c != a \+ b in 1 case\(s\) \(first: cpu/host at 1000 elements\)"):
        check_sums(body["derived"])


def test_a_bad_argument_is_one_line_and_exit_2(cpu_binary):
    done = subprocess.run([str(cpu_binary), "--sizes", "0", "--reps", "1", "--warmup", "0"], capture_output=True,
                          text=True)
    assert done.returncode == 2
    assert done.stderr.strip() == "vecadd: --sizes takes element counts >= 1, got '0'"


def test_the_cache_key_changes_with_the_source(tmp_path):
    base = cpu_request()
    copy = tmp_path / CPU_PROGRAM.name
    shutil.copy(HOST_HEADER, tmp_path / HOST_HEADER.name)
    copy.write_text(CPU_PROGRAM.read_text())
    same = cpu_request(program=copy)
    assert cache_key(same) == cache_key(base)  # the same bytes under the same names: the same key
    copy.write_text(CPU_PROGRAM.read_text() + "\n// changed\n")
    changed = cpu_request(program=copy)
    changed_key = cache_key(changed)  # keys are read from the files as they are now
    assert changed_key != cache_key(base)
    built = build(changed, tmp_path / "cache")  # and it builds anew, from the changed file
    assert built.record["cache_hit"] is False and built.record["cache_key"] == changed_key
    (tmp_path / HOST_HEADER.name).write_text(HOST_HEADER.read_text() + "\n// header changed\n")
    assert cache_key(cpu_request(program=copy)) != changed_key  # the included header counts too


def test_the_cache_key_changes_with_the_compiler(tmp_path):
    plain = cpu_request()
    other = wrapper(tmp_path, "other-cxx", "other-cxx (hpml test) 99.1")
    request = cpu_request(environ={**os.environ, "CXX": str(other)})
    assert request.toolchain.version == "other-cxx (hpml test) 99.1"
    assert cache_key(request) != cache_key(plain)
    built = build(request, tmp_path / "cache")  # a real compile through the wrapper
    assert built.record["compiler"] == str(other) and built.record["cache_hit"] is False
    assert run_cpu(built.file, [1000], 1, 0).cases[0]["mismatches"] == [0]
    assert cache_key(replace(plain, toolchain=replace(plain.toolchain, flags=("-O2",)))) != cache_key(plain)


def test_a_cached_build_costs_no_compile_time(tmp_path):
    first = build_cpu(tmp_path)
    second = build_cpu(tmp_path)
    assert first.record["cache_hit"] is False and first.record["compile_s"] > 0
    assert second.record["cache_hit"] is True and second.record["compile_s"] == 0.0
    assert second.file == first.file == tmp_path / first.record["cache_key"] / "vecadd_cpu"
    written = json.loads((first.file.parent / "build.json").read_text())
    assert written["cache_key"] == first.record["cache_key"] and written["compile_s"] == first.record["compile_s"]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no scratch folder left


def test_two_concurrent_builds_compile_once(tmp_path):
    log = tmp_path / "compiles.log"
    slow = wrapper(tmp_path, "slow-cxx", "slow-cxx 1.0", log=log, sleep_s=1)
    code = ("import json, sys; from pathlib import Path; from hpml.workloads.cuda_vecadd.cpu_path import build_cpu; "
            "print(json.dumps(build_cpu(Path(sys.argv[1])).record))")
    env = {**os.environ, "CXX": str(slow)}
    processes = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "cache")], cwd=REPO, env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    records = []
    for process in processes:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        records.append(json.loads(out))
    assert log.read_text().splitlines() == ["compile"]
    assert sorted(r["cache_hit"] for r in records) == [False, True]
    assert len({r["cache_key"] for r in records}) == 1
    assert [r["compile_s"] for r in records if r["cache_hit"]] == [0.0]
    assert max(r["lock_wait_s"] for r in records) > 0.5  # the second one waited for the first's compile


def test_the_cache_root_follows_the_environment(tmp_path):
    assert cache_root({"HPML_CACHE_DIR": "/c", "XDG_CACHE_HOME": "/x", "HOME": "/h"}) == Path("/c/cuda_vecadd")
    assert cache_root({"XDG_CACHE_HOME": "/x", "HOME": "/h"}) == Path("/x/hpml/cuda_vecadd")
    assert cache_root({"HOME": "/h"}) == Path("/h/.cache/hpml/cuda_vecadd")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_nvcc_compiles_the_host_program_for_sm_90(tmp_path):
    from hpml.workloads.cuda_vecadd.nvcc_path import build_nvcc

    built = build_nvcc("sm_90", tmp_path)
    assert built.record["path"] == "nvcc" and built.record["arch"] == "sm_90"
    assert "-arch=sm_90" in built.record["flags"] and "-O3" in built.record["flags"]
    assert "release" in built.record["compiler_version"]
    assert build_nvcc("sm_90", tmp_path).record["cache_hit"] is True
    cuobjdump = shutil.which("cuobjdump") or shutil.which("cuobjdump", path=f"{os.environ.get('CUDA_HOME', '/usr/local/cuda')}/bin")
    if cuobjdump:  # the machine code is Hopper's, not only PTX for the driver to compile
        listed = subprocess.run([cuobjdump, "--list-elf", str(built.file)], capture_output=True, text=True)
        assert listed.returncode == 0 and "sm_90" in listed.stdout, listed.stdout + listed.stderr


def test_the_launch_geometry_of_the_nvrtc_path_is_the_headers():
    assert THREADS_PER_BLOCK == 256  # read from vecadd_kernels.h, the file vecadd.cu includes
    assert blocks_for("many_blocks", 1_000_001) == 3907  # ceil(1,000,001 / 256)
    assert blocks_for("many_blocks", 100_000_000) == 390_625
    assert blocks_for("many_blocks_vec4", 100_000_000) == 97_657  # ceil(1e8 / 1024)
    assert blocks_for("one_block", 100_000_000) == blocks_for("one_thread", 5) == 1


def test_the_package_ships_every_source_the_builds_read():
    """setup.cfg's package_data patterns (relative to the workloads package) match every kernel source."""
    parser = configparser.ConfigParser()
    parser.read(REPO / "setup.cfg")
    patterns = [p.strip() for p in parser["options.package_data"]["hpml.workloads"].split(",")]
    sources = [p for p in KERNELS_DIR.iterdir() if p.is_file()]
    assert {p.suffix for p in sources} == {".h", ".cu", ".cpp"}
    for source in sources:
        relative = source.relative_to(REPO / "hpml" / "workloads").as_posix()
        assert any(fnmatch.fnmatch(relative, pattern) and relative.count("/") == pattern.count("/")
                   for pattern in patterns), relative


def test_the_nvrtc_paths_inputs_are_the_c_programs_pattern():
    from hpml.workloads.cuda_vecadd.nvrtc_path import Inputs, count_mismatches, poison

    inputs = Inputs(2000)
    assert (inputs.a[999], inputs.a[1000], inputs.a[1001]) == (499.5, 0.0, 0.5)  # (i % 1000) / 2
    assert (inputs.b[996], inputs.b[997], inputs.b[1999]) == (250.0, 1.0, 2.25)  # (i % 997) / 4 + 1; 1999 % 997 = 5
    c = inputs.a + inputs.b
    assert count_mismatches(c, inputs.sum) == 0
    c[7] += 1
    assert count_mismatches(c, inputs.sum) == 1
    poison(c)
    assert count_mismatches(c, inputs.sum) == 2000  # NaN everywhere: nothing equals
