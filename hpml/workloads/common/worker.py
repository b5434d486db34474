"""What every torchrun worker does around its measurements: join the run, then leave a result.json behind.

    worker = start_worker(argv)                    # config slice, process group, environment, GPU telemetry
    with worker.reporting(timing) as body:         # rank 0 writes result.json, whatever happens inside
        with worker.telemetry.phase("epoch", index=e, timed=True, samples=n):   # marks, on every rank
            body.update(summarize(measure(...)))   # {"measurements": ..., "derived": ...}

A failure in start_worker (a bad config, a process group that cannot form) writes no result: there is no
environment to describe yet. The launcher then records the point as failed, with the tail of torchrun's
stderr as the reason (launcher/point_job.py).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, Optional, Sequence, Tuple

import torch
import torch.distributed as dist

from hpml.conf.workload_contract import WorkloadConfig
from hpml.contract.jsonio import utc_now
from hpml.contract.result_format import reason_line
from hpml.workloads import startup
from hpml.workloads.common.distributed import DistContext, all_gather_objects, host_identity, init_distributed
from hpml.workloads.common.environment import describe_environment
from hpml.workloads.common.point_config import parse_worker_args, read_point_config
from hpml.workloads.common.result import build_result, write_result
from hpml.workloads.common.telemetry import Telemetry, start_telemetry, telemetry_block


def original_message(message: str, type_name: str) -> str:
    """The message a DataLoader worker process's exception had: torch re-raises it in the training process as the
    same type with the message "Caught <Type> in DataLoader worker process <n>. Original Traceback ... <Type>:
    <message>", whose first line names no cause. Any other message is returned as it is."""
    if not message.startswith(f"Caught {type_name} in DataLoader worker process"):
        return message
    marker = f"{type_name}: "
    lines = [line.split(marker, 1)[1] for line in message.splitlines() if marker in line]
    return lines[-1] if lines else message


def one_line_reason(error: BaseException) -> str:
    """result.json's reason: "Type: first line of the message" (contract.result_format.reason_line; a DataLoader
    worker's error by its original message); the traceback stays in torchrun's stderr (points/<n>/logs/)."""
    message = reason_line(original_message(str(error), type(error).__name__)) or \
        ("interrupted (SIGINT)" if isinstance(error, KeyboardInterrupt) else "")
    return reason_line(f"{type(error).__name__}: {message}" if message else type(error).__name__)


def is_out_of_memory(error: BaseException) -> bool:
    """CUDA's allocator raises torch.OutOfMemoryError; the CPU allocator a RuntimeError that says so."""
    return isinstance(error, torch.OutOfMemoryError) or (
        isinstance(error, RuntimeError) and "can't allocate memory" in str(error))


@dataclass(frozen=True)
class Worker:
    """A joined worker and what it may know of its point: its workload's schema and the seed."""

    workload: WorkloadConfig  # the workload's typed schema (its slice of the config tree)
    seed: int  # sweep.seed
    raw_config: Dict[str, Any]  # the file as written (result.json's "config"), not the typed schema
    point_dir: Path
    started_at: str
    ctx: DistContext
    environment: Dict[str, Any]
    # phase marks for the GPU sampler (a do-nothing object where this rank samples nothing) and every node's
    # telemetry state as start_worker gathered it (rank 0 turns them into result.json's "telemetry" block)
    telemetry: Telemetry
    telemetry_nodes: Tuple[Optional[Dict[str, Any]], ...]
    telemetry_interval_ms: int

    @contextlib.contextmanager
    def reporting(self, timing: Dict[str, str], *,
                  oom_measurements: Optional[Callable[[], Dict[str, Any]]] = None
                  ) -> Iterator[Dict[str, Dict[str, Any]]]:
        """Runs the block; on rank 0 writes result.json with what the block put into the yielded body.

        An exception is recorded (status "oom" when is_out_of_memory says so, else "failed") and raised again, so the
        worker exits non-zero and torchrun's error file names it; what the body held by then is kept (the
        all-reduce records every size before it fails a wrong sum). On "oom", oom_measurements, if given,
        replaces the measurements (train keeps what its batch probe found, for the report).
        Only a success destroys the process group: after a failure the exit ends it, and another rank may
        still be inside a collective with this one.
        Before result.json, on success and failure alike, each node's sampler stops and writes its sidecar.
        """
        status, reason = "ok", None
        body: Dict[str, Dict[str, Any]] = {"measurements": {}, "derived": {}}
        startup.resume()  # the collector on for the measured work (hpml/workloads/startup.py)
        try:
            yield body
        # BaseException: a KeyboardInterrupt (Ctrl-C, SIGINT) or SystemExit inside the block is a failure too;
        # catching Exception only would write status "ok" with empty measurements.
        except BaseException as error:
            if is_out_of_memory(error):  # the sweep goes on past a point that does not fit
                status, reason = "oom", "out of memory: " + one_line_reason(error).split(": ", 1)[-1]
                if oom_measurements is not None:
                    body["measurements"] = oom_measurements()
            else:
                status, reason = "failed", one_line_reason(error)
            raise
        finally:
            own = self.telemetry.finish(self.point_dir)  # stops the sampler, writes the sidecar; never raises
            if self.ctx.is_main:
                write_result(self.point_dir, build_result(
                    config=self.raw_config, point_dir=self.point_dir, status=status, reason=reason,
                    environment=self.environment, timing=timing, started_at=self.started_at,
                    telemetry=telemetry_block(self.telemetry_nodes, self.telemetry_interval_ms, own), **body))
            if status == "ok":
                dist.destroy_process_group()


def start_worker(argv: Sequence[str] | None = None,
                 before_init: Optional[Callable[[WorkloadConfig], None]] = None) -> Worker:
    """Reads --config, joins the process group torchrun prepared and describes every rank's host.

    before_init(workload) runs once the config is read and before the process group exists: what a
    communicator reads from the environment when it is created (NCCL_ALGO) has to be set there.
    Each node's local rank 0 then starts the GPU sampler (workloads/common/telemetry/) for the CUDA ordinals
    its node's workers use: 0..LOCAL_WORLD_SIZE x devices per worker - 1 (DataParallel drives several).
    """
    args = parse_worker_args(argv)
    point_dir = Path(args.config).resolve().parent
    setup, raw_config = read_point_config(args.config)
    started_at = utc_now()
    if before_init is not None:
        before_init(setup.workload)
    ctx = init_distributed(setup)
    telemetry = start_telemetry(setup.telemetry, ctx.device.type, ctx.local_rank, node_gpus(setup.workload))
    gathered = all_gather_objects((host_identity(), telemetry.state()))  # one collective for both
    environment = describe_environment([host for host, _ in gathered], ctx.world_size, ctx.backend,
                                       ctx.device.type)
    return Worker(workload=setup.workload, seed=setup.seed, raw_config=raw_config, point_dir=point_dir,
                  started_at=started_at, ctx=ctx, environment=environment, telemetry=telemetry,
                  telemetry_nodes=tuple(state for _, state in gathered),
                  telemetry_interval_ms=setup.telemetry.interval_ms)


def node_gpus(workload: WorkloadConfig) -> int:
    """CUDA ordinals this node's workers use: one per worker, or DataParallel's devices per worker (train);
    never more than this process sees."""
    wanted = int(os.environ.get("LOCAL_WORLD_SIZE", 1)) * workload.devices_per_worker
    return min(wanted, torch.cuda.device_count()) if torch.cuda.is_available() else 0
