"""Which code made a result, and on which GPUs: hpml's version, the git commit of the checkout the workers
imported (and whether it was modified), the GPU driver and the GPU topology.

Every lookup is bounded (GIT_TIMEOUT_S, NVIDIA_SMI_TIMEOUT_S, TOPOLOGY_MAX_CHARS) and never raises: a value
that cannot be known is null, and a `*_error` key beside it says why. No torch import here, so the module can
be checked on a host whose Python has only the standard library.
"""

from __future__ import annotations

import re
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Dict, List, Optional, Tuple

GIT_TIMEOUT_S = 5.0
NVIDIA_SMI_TIMEOUT_S = 10.0
TOPOLOGY_MAX_CHARS = 8000  # `nvidia-smi topo -m` of 8 GPUs and their NICs is ~2 KB
DISTRIBUTION = "hpml"
# nvidia-smi 580 underlines the topology's header even into a pipe (seen on an H100 host): keep plain text.
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

# The folder that holds the imported `hpml` package: the checkout for an editable install (or a run from the
# checkout), site-packages for a plain install.
CODE_ROOT = Path(__file__).resolve().parents[3]


def run_bounded(command: List[str], cwd: Optional[Path] = None,
                timeout: float = GIT_TIMEOUT_S) -> Tuple[Optional[str], Optional[str]]:
    """(stdout, None) on success, else (None, why) in one line; never raises."""
    try:
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        return None, f"{command[0]} not found on PATH"
    except subprocess.TimeoutExpired:
        return None, f"`{' '.join(command)}` timed out after {timeout:g} s"
    except OSError as error:
        return None, f"`{' '.join(command)}` could not start: {error}"
    if done.returncode != 0:
        first = next((line.strip() for line in done.stderr.splitlines() if line.strip()), "")
        return None, f"`{' '.join(command)}` exited {done.returncode}: {first}"[:300]
    return done.stdout, None


def hpml_version() -> Tuple[Optional[str], Optional[str]]:
    try:
        return metadata.version(DISTRIBUTION), None
    except metadata.PackageNotFoundError:
        return None, f"the {DISTRIBUTION} distribution is not installed (run from a bare checkout?)"


def git_state(root: Path = CODE_ROOT) -> Dict[str, object]:
    """The commit at `root` and whether its tree differs from it (tracked changes or untracked files).
    --no-optional-locks: a worker's `git status` must not take the index lock a user's git command needs.

    Only when `root` is itself the top of a checkout: an installed copy in a virtual environment that lives
    inside some checkout must not be credited with that checkout's commit.
    """
    state: Dict[str, object] = {"git_commit": None, "git_dirty": None, "git_changes": None, "git_error": None}
    out, why = run_bounded(["git", "rev-parse", "--show-toplevel", "HEAD"], cwd=root)
    if out is None:
        state["git_error"] = why
        return state
    top, commit = (out.splitlines() + ["", ""])[:2]
    if Path(top).resolve() != root.resolve():
        state["git_error"] = f"hpml's code at {root} is an installed copy, not a git checkout"
        return state
    changes, why = run_bounded(["git", "--no-optional-locks", "status", "--porcelain"], cwd=root)
    state["git_commit"] = commit.strip()
    if changes is None:
        state["git_error"] = why
    else:
        lines = [line for line in changes.splitlines() if line.strip()]
        state["git_dirty"], state["git_changes"] = bool(lines), len(lines)
    return state


def code_provenance() -> Dict[str, object]:
    """environment["hpml"]: the version and the checkout of the code that ran (docs/result-schema.md)."""
    version, version_error = hpml_version()
    return {"version": version, "version_error": version_error, "code_root": str(CODE_ROOT), **git_state()}


def gpu_driver() -> Tuple[Optional[str], Optional[str]]:
    """The NVIDIA driver's version, from NVML (nvidia-ml-py), else from nvidia-smi."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            version = pynvml.nvmlSystemGetDriverVersion()
            return (version.decode() if isinstance(version, bytes) else str(version)), None
        finally:
            pynvml.nvmlShutdown()
    except Exception as error:  # noqa: BLE001 - no NVML library, no driver: try nvidia-smi, then say why
        nvml_error = f"NVML: {type(error).__name__}: {error}"
    out, why = run_bounded(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                           timeout=NVIDIA_SMI_TIMEOUT_S)
    if out and out.strip():
        return out.splitlines()[0].strip(), None
    return None, f"{nvml_error}; {why or 'nvidia-smi printed no driver version'}"


def gpu_topology() -> Tuple[Optional[str], Optional[str]]:
    """`nvidia-smi topo -m` (how the GPUs and NICs connect: NVLink, PCIe switch, socket), at most
    TOPOLOGY_MAX_CHARS characters."""
    out, why = run_bounded(["nvidia-smi", "topo", "-m"], timeout=NVIDIA_SMI_TIMEOUT_S)
    if out is None:
        return None, why
    text = ANSI_ESCAPE.sub("", out).rstrip()
    if len(text) > TOPOLOGY_MAX_CHARS:
        text = text[:TOPOLOGY_MAX_CHARS] + f"\n... (cut at {TOPOLOGY_MAX_CHARS} characters)"
    return text, None


def gpu_provenance(has_gpu: bool) -> Dict[str, object]:
    """The driver and the topology on a GPU host; null (no error) on a host without GPUs."""
    if not has_gpu:
        return {"gpu_driver": None, "gpu_topology": None, "gpu_info_error": None}
    driver, driver_error = gpu_driver()
    topology, topology_error = gpu_topology()
    errors = "; ".join(e for e in (driver_error, topology_error) if e) or None
    return {"gpu_driver": driver, "gpu_topology": topology, "gpu_info_error": errors}
