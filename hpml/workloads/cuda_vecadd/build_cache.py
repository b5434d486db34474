"""Builds on first use, cached by what the build depends on, safe for points that build at the same time.

    key = sha256(build path, compiler command, its version text, flags, target arch, each source's name and bytes)
    <cache root>/cuda_vecadd/<key>/<output>      the build; <key>/build.json says how it was made

The cache root is $HPML_CACHE_DIR, else $XDG_CACHE_HOME/hpml, else ~/.cache/hpml: a user directory, shared by
every point and sweep of that user (and by the nodes of a cluster where home is shared: the arch in the key
keeps an sm_80 build from an sm_90 node).

Concurrent points: each takes an exclusive flock on <key>.lock, builds into a temporary folder beside the
final one and renames it into place (atomic within one file system); a point that waited on the lock finds
the folder and reuses it. So a sweep of 30 points compiles once, and nobody reads a half-written binary. A hit
costs no compile time: the record says cache_hit true and compile_s 0.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Mapping, Sequence, Tuple

from hpml.contract.cache_dir import hpml_cache_dir

WORKLOAD_DIR = "cuda_vecadd"
BUILD_RECORD = "build.json"


def cache_root(environ: Mapping[str, str] = os.environ) -> Path:
    """<$HPML_CACHE_DIR | $XDG_CACHE_HOME/hpml | ~/.cache/hpml>/cuda_vecadd."""
    return hpml_cache_dir(environ) / WORKLOAD_DIR


def version_text(command: Sequence[str]) -> str:
    """What `<compiler> --version` prints: it names the compiler's release, so a new one builds anew."""
    done = subprocess.run([*command, "--version"], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} --version failed: {(done.stderr or done.stdout).strip()[:200]}")
    return done.stdout.strip()


@dataclass(frozen=True)
class Toolchain:
    """Who builds, and how: everything about the compiler that goes into the key and into the result."""

    path: str  # "nvcc" | "nvrtc" | "host-cxx"
    compiler: Tuple[str, ...]  # the command (a full path first), or ("nvrtc",) for the library
    version: str  # the compiler's version text
    flags: Tuple[str, ...]
    arch: str  # "sm_90" for GPU builds, the CPU's machine name ("x86_64") for the host build

    def record(self) -> Dict[str, Any]:
        return {"path": self.path, "compiler": " ".join(self.compiler), "compiler_version": self.version,
                "flags": list(self.flags), "arch": self.arch}


@dataclass(frozen=True)
class BuildRequest:
    toolchain: Toolchain
    sources: Tuple[Path, ...]  # every file the build reads (a header included), hashed into the key
    output: str  # the file the build makes, inside the key's folder
    compile: Callable[[Path], None]  # compile(folder) writes `output` into folder; raises on failure


@dataclass(frozen=True)
class Built:
    file: Path  # the cached build
    record: Dict[str, Any]  # result.json's build record: toolchain, cache key and folder, hit, compile_s


def cache_key(request: BuildRequest) -> str:
    digest = hashlib.sha256()
    for part in (request.toolchain.path, "\0".join(request.toolchain.compiler), request.toolchain.version,
                 "\0".join(request.toolchain.flags), request.toolchain.arch, request.output):
        digest.update(part.encode() + b"\n")
    for source in request.sources:
        data = source.read_bytes()
        digest.update(f"{source.name} {len(data)}\n".encode() + data)
    return digest.hexdigest()


def build(request: BuildRequest, root: Path | None = None) -> Built:
    """The cached build of `request`, compiling it only if no point has yet (see the module docstring)."""
    root = cache_root() if root is None else root
    key = cache_key(request)
    final = root / key
    record = {**request.toolchain.record(), "cache_key": key, "cache_dir": str(final)}
    if (final / request.output).is_file():
        return Built(final / request.output, {**record, "cache_hit": True, "compile_s": 0.0, "lock_wait_s": 0.0})
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f"{key}.lock", "w") as lock:
        waited = time.perf_counter()
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if this process dies
        lock_wait_s = time.perf_counter() - waited
        if (final / request.output).is_file():  # another point built it while this one waited
            return Built(final / request.output,
                         {**record, "cache_hit": True, "compile_s": 0.0, "lock_wait_s": lock_wait_s})
        scratch = Path(tempfile.mkdtemp(prefix=f".{key[:16]}-", dir=root))
        try:
            started = time.perf_counter()
            request.compile(scratch)
            compile_s = time.perf_counter() - started
            if not (scratch / request.output).is_file():
                raise RuntimeError(f"the {request.toolchain.path} build made no {request.output}")
            (scratch / BUILD_RECORD).write_text(json.dumps(
                {**record, "compile_s": compile_s, "sources": [str(s) for s in request.sources]}, indent=1))
            if final.exists():  # a folder left without its output (deleted by hand): replace it
                shutil.rmtree(final)
            os.rename(scratch, final)
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise
    return Built(final / request.output, {**record, "cache_hit": False, "compile_s": compile_s,
                                          "lock_wait_s": lock_wait_s})


def run_compiler(command: Sequence[str], what: str) -> None:
    """Runs a compiler command; its error output, cut to its last lines, becomes the exception."""
    done = subprocess.run(list(command), capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-15:])
        raise RuntimeError(f"{what} failed (exit {done.returncode}): {' '.join(command)}\n{tail}")
