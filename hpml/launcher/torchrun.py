"""The torchrun command each job runs: one torchrun per node, which starts one worker per GPU/CPU slot."""

from __future__ import annotations

import contextlib
import ctypes
import os
import random
import re
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, List, Mapping, Optional, Sequence

from hpml.launcher.child_python import python_argv
from hpml.launcher.jobspec import JobSpec

# torchrun's --run-path takes a file, not a module; found beside this package, not imported (the launcher never
# imports a workload)
FORK_ENTRY = Path(__file__).resolve().parent.parent / "workloads" / "fork_entry.py"
# what torchrun's environment gets with the fork: torch's device check in the agent through NVML, so that CUDA stays
# uninitialized for the forked workers (workers_forkable)
FORK_ENV = {"PYTORCH_NVML_BASED_CUDA_CHECK": "1"}
# torchrun, started with the cyclic GC paused while it imports torch (torchrun_agent.py): `python -m AGENT <args>`
# runs torch.distributed.run.main as `torchrun <args>` does
AGENT = "hpml.launcher.torchrun_agent"


@dataclass(frozen=True)
class Rendezvous:
    """Where the nodes of a multi-node job meet (c10d store on the allocation's first node)."""

    host: str
    port: int
    run_id: str


def rendezvous_port(job_id: str) -> int:
    """A port derived from the job id, so two jobs sharing a node do not collide on a fixed 29500
    (the same rule as submitit's TorchDistributedEnvironment)."""
    return random.Random(job_id).randint(20000, 60000)


def node_addr_of(scontrol_node: str, node: str) -> str:
    """NodeAddr from `scontrol show node <node> -o`; the node's name when the record has none."""
    match = re.search(r"\bNodeAddr=(\S+)", scontrol_node)
    return match.group(1) if match else node


def node_address(node: str) -> str:
    """A node's address as SLURM knows it (NodeAddr), resolved: a node name need not be in DNS."""
    text = subprocess.run(["scontrol", "show", "node", node, "-o"], check=True, capture_output=True,
                          text=True).stdout
    return socket.gethostbyname(node_addr_of(text, node))


def first_host(nodelist: str) -> str:
    """The allocation's first node (`scontrol show hostnames`), as an address."""
    names = subprocess.run(["scontrol", "show", "hostnames", nodelist], check=True, capture_output=True,
                           text=True).stdout.split()
    return node_address(names[0])


def slurm_rendezvous(env: Mapping[str, str]) -> Rendezvous:
    job_id = env.get("SLURM_ARRAY_JOB_ID") and f"{env['SLURM_ARRAY_JOB_ID']}_{env['SLURM_ARRAY_TASK_ID']}"
    job_id = job_id or env["SLURM_JOB_ID"]
    return Rendezvous(host=first_host(env["SLURM_JOB_NODELIST"]), port=rendezvous_port(job_id), run_id=job_id)


def nvml_answers() -> bool:
    """Whether NVML (nvidia-ml-py) initializes here and sees a GPU."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # no library, no driver: NVML's errors are its own classes
        return False
    try:
        return pynvml.nvmlDeviceGetCount() > 0
    except Exception:
        return False
    finally:
        with contextlib.suppress(Exception):  # the answer is had; a failed shutdown must not fail the point
            pynvml.nvmlShutdown()


def workers_forkable(gpus_per_node: int, nvml_works: Callable[[], bool] = nvml_answers) -> bool:
    """Whether torchrun may fork this point's workers. Without GPUs, always. With GPUs, torchrun's agent asks torch
    whether an accelerator is there (LaunchConfig's NUMA default), which initializes CUDA in the agent, and a worker
    forked after that cannot use CUDA, unless torch answers through NVML (PYTORCH_NVML_BASED_CUDA_CHECK=1, which the
    point job sets with the fork). Where NVML does not answer, torch falls back to asking CUDA: the workers are then
    started as new interpreters, torchrun's default."""
    return gpus_per_node == 0 or nvml_works()


def torchrun_command(spec: JobSpec, rendezvous: Optional[Rendezvous], python: str = sys.executable,
                     fork: bool = True) -> List[str]:
    shape = spec.shape
    cmd = [*python_argv(python), "-m", AGENT, "--nnodes", str(shape.nodes),
           "--nproc_per_node", str(shape.workers_per_node), "--max_restarts", "0"]
    if rendezvous is None:
        if shape.nodes != 1:
            raise ValueError(f"point {spec.point}: {shape.nodes} nodes need a rendezvous (run under SLURM)")
        cmd += ["--standalone"]  # single node: a local store on a free port
    else:
        cmd += ["--rdzv_backend", "c10d", "--rdzv_endpoint", f"{rendezvous.host}:{rendezvous.port}",
                "--rdzv_id", rendezvous.run_id]
    worker = [f"hpml.workloads.{spec.workload}", "--config", spec.config_path]
    return cmd + (forked(*worker) if fork else ["-m", *worker])


def forked(module: str, *args: str) -> List[str]:
    """torchrun's arguments that fork the workers from its agent, which has imported torch already, instead of
    starting them as new interpreters that import it again, and run `module` in each (hpml/workloads/fork_entry.py).
    Run with FORK_ENV in torchrun's environment."""
    return ["--start-method", "fork", "--run-path", str(FORK_ENTRY), module, *args]


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent(death_signal: int = signal.SIGTERM, ignored: Sequence[int] = ()) -> Callable[[], None]:
    """A preexec_fn for the torchrun child: Linux sends it death_signal when the process that started it (the
    point job) dies, even by SIGKILL, so torchrun never outlives it. SIGTERM, not SIGKILL: torchrun then stops
    its workers itself (SIGTERM, and SIGKILL 30 s later). Elsewhere than Linux it does nothing.

    The signals in `ignored` are ignored by torchrun and, since an ignored disposition survives exec and fork, by
    its workers: SLURM's time-limit warning (sbatch --signal without B:) goes to every process of the step, and
    it is meant for the point job's handler (submitit requeues, or records the timeout); SIGUSR2's default
    action would kill torchrun first, and the point would read as failed by a signal instead of timed out."""
    parent = os.getpid()
    try:  # looked up here, in the parent: the child runs between fork and exec, where loading could deadlock
        prctl = ctypes.CDLL(None, use_errno=True).prctl if sys.platform == "linux" else None
    except (OSError, AttributeError):
        prctl = None

    def arm() -> None:
        for signum in ignored:
            signal.signal(signum, signal.SIG_IGN)
        if prctl is None or prctl(PR_SET_PDEATHSIG, int(death_signal), 0, 0, 0) != 0:
            return
        if os.getppid() != parent:  # the parent died before the prctl: the signal will never come
            os.kill(os.getpid(), death_signal)

    return arm
