"""The hardware probe: measured peaks of every GPU of the allocation, next to the published ones.

Started by torchrun, one worker per GPU (or one CPU worker):
    python -m hpml.workloads.probe --config <sweep>/points/<n>/config.yaml
Rank 0 writes result.json beside the config.

The GPUs are measured one after the other (rank 0 first, the others waiting at a barrier), so that each is
measured alone: host transfers of several GPUs at once would share the host's memory and PCIe root, which is
another question. Each worker measures its own device with workloads/common/device_peaks.py, in this order:
  1. for each workload.matmul_dtypes, in alternating rounds: workload.products_per_round products timed one by
     one (CUDA events; inputs rotated where they fit in L2), then as many plain torch.matmul in one loop timed
     by wall clock: the independent check that the probe's timing is right (issue 14: bf16 within 5 %), paired
     so that the clock's drift under the power cap hits both alike;
  2. device copy (2 x copy_bytes moved) and STREAM triad (3 x copy_bytes);
  3. on a GPU: host-to-device and device-to-host copies of transfer_bytes, pinned and pageable host memory.
Each is a warm-up of at least workload.warmup repetitions and workload.warmup_s seconds (past the burst a GPU
runs at before its power cap clocks it down), then at least workload.reps timed repetitions (matmul: rounds) and
workload.measure_s seconds (the clock swings under the cap; a few milliseconds would catch one swing), all kept
(measurements.devices, one record per rank). `published` is the device's entry in conf/hardware/gpu_peaks.py
(as_record(), per board), or null where no entry matches its name (and always on the CPU).

Derived numbers (the analysis recomputes them from the raw arrays): per repetition TFLOP/s = 2 n^3 / t / 1e12
and GB/s = bytes moved / t / 1e9, then the median over the repetitions; percent of peak = median / published
per device (the board's number / devices_per_board: a K80 board is two CUDA devices).
"""

from __future__ import annotations

import platform
import statistics
from typing import Any, Dict, List, Optional, Sequence

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record

from hpml.conf.hardware.gpu_peaks import peaks_for_device
from hpml.conf.workload.probe import ProbeConfig
from hpml.contract.rates import GBps, tflops_per_s
from hpml.workloads.common import device_peaks
from hpml.workloads.common.distributed import DistContext, all_gather_objects
from hpml.workloads.common.telemetry import NO_TELEMETRY, Telemetry
from hpml.workloads.common.worker import start_worker

TRANSFERS = [("h2d", True), ("h2d", False), ("d2h", True), ("d2h", False)]  # (direction, pinned host memory)


def describe_device(device: torch.device) -> Dict[str, Any]:
    """The measured device: its name (what the peak table matches) and what sizes its caches and memory."""
    if device.type != "cuda":
        return {"type": "cpu", "name": f"CPU ({platform.machine() or 'unknown machine'})",
                "threads": torch.get_num_threads()}
    props = torch.cuda.get_device_properties(device)
    return {"type": "cuda", "name": props.name, "index": device.index, "uuid": str(getattr(props, "uuid", "")),
            "capability": f"{props.major}.{props.minor}", "multiprocessors": props.multi_processor_count,
            "l2_bytes": device_peaks.l2_cache_bytes(device), "memory_bytes": props.total_memory}


def published_for(described: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The peak table's entry for a GPU's name (as_record: per board), None on the CPU or for an unknown GPU."""
    if described["type"] != "cuda":
        return None
    peaks = peaks_for_device(described["name"])
    return None if peaks is None else peaks.as_record()


def measure_device(cfg: ProbeConfig, device: torch.device, seed: int) -> Dict[str, Any]:
    """Every measurement of one device, raw (see the module docstring for the order)."""
    described = describe_device(device)
    reps, warm = cfg.reps, {"warmup": cfg.warmup, "warmup_s": cfg.warmup_s, "measure_s": cfg.measure_s}
    matmul = {}
    for dtype in cfg.matmul_dtypes:
        matmul[dtype] = device_peaks.matmul_paired_times(device, cfg.matmul_n, dtype, cfg.products_per_round,
                                                         rounds=reps, seed=seed, **warm)
    copied = device_peaks.copy_times(device, cfg.copy_bytes, reps=reps, seed=seed, **warm)
    triad = device_peaks.triad_times(device, cfg.copy_bytes, reps=reps, seed=seed, **warm)
    transfers = None
    if device.type == "cuda":
        transfers = [device_peaks.transfer_times(device, cfg.transfer_bytes, direction, pinned, reps=reps, **warm)
                     for direction, pinned in TRANSFERS]
    return {"device": described, "published": published_for(described), "matmul": matmul, "copy": copied,
            "triad": triad, "transfers": transfers}


def measure_in_turn(cfg: ProbeConfig, ctx: DistContext, seed: int,
                    telemetry: Telemetry = NO_TELEMETRY) -> List[Dict[str, Any]]:
    """Each rank measures its device while the others wait; every rank's record, in rank order."""
    own = None
    for turn in range(ctx.world_size):
        with telemetry.phase("gpu", index=turn, timed=True):  # sampled by each node's local rank 0
            if ctx.rank == turn:
                own = {"rank": ctx.rank, **measure_device(cfg, ctx.device, seed)}
            dist.barrier()
    return all_gather_objects(own)


def _median_tflops(result: Dict[str, Any]) -> float:
    """The median over repetitions of each repetition's TFLOP/s."""
    return statistics.median(tflops_per_s(result["flops"], t) for t in result["times_s"])


def _median_GBps(result: Dict[str, Any]) -> float:
    """The median over repetitions of each repetition's GB/s."""
    return statistics.median(GBps(result["bytes_moved"], t) for t in result["times_s"])


def _share(measured: float, published: Optional[Dict[str, Any]], key: str, dtype: Optional[str] = None
           ) -> Optional[float]:
    """measured / the published per-device peak; None where there is none."""
    if published is None:
        return None
    peak = published["tflops"][dtype] if dtype else published[key]
    return None if peak is None else measured / (peak / published["devices_per_board"])


def derive_device(measured: Dict[str, Any]) -> Dict[str, Any]:
    """Medians, rates and shares of peak of one device's record."""
    published = measured["published"]
    matmul = {}
    for dtype, both in measured["matmul"].items():
        probe, reference = _median_tflops(both["probe"]), _median_tflops(both["reference"])
        matmul[dtype] = {"tflops": probe, "reference_tflops": reference, "probe_over_reference": probe / reference,
                         "of_peak": _share(probe, published, "tflops", dtype)}
    memory = {kind: {"GBps": _median_GBps(measured[kind]),
                     "of_peak": _share(_median_GBps(measured[kind]), published, "memory_GBps")}
              for kind in ("copy", "triad")}
    transfers = None if measured["transfers"] is None else [
        {"direction": t["direction"], "pinned": t["pinned"], "GBps": _median_GBps(t),
         "of_peak": _share(_median_GBps(t), published, "host_link_GBps")} for t in measured["transfers"]]
    return {"rank": measured["rank"], "name": measured["device"]["name"],
            "published_key": None if published is None else published["key"],
            "matmul": matmul, "memory": memory, "transfers": transfers}


def _percent(share: Optional[float]) -> str:
    return "" if share is None else f"({share:.0%})"


def summary_lines(derived: Dict[str, Any]) -> List[str]:
    """What rank 0 prints of one device: rates (percent of the published peak) and the reference ratio."""
    lines = [f"[rank {derived['rank']}] {derived['name']}: published peaks {derived['published_key'] or 'unknown'}"]
    for dtype, m in derived["matmul"].items():
        lines.append(f"  matmul {dtype:5} {m['tflops']:10.2f} TFLOP/s {_percent(m['of_peak']):>7}   torch.matmul "
                     f"wall clock {m['reference_tflops']:10.2f}   probe / reference {m['probe_over_reference']:.3f}")
    for kind, m in derived["memory"].items():
        lines.append(f"  {kind:12} {m['GBps']:10.1f} GB/s {_percent(m['of_peak']):>7}")
    for t in derived["transfers"] or []:
        name = f"{t['direction']} {'pinned' if t['pinned'] else 'pageable'}"
        lines.append(f"  {name:12} {t['GBps']:10.2f} GB/s {_percent(t['of_peak']):>7}")
    return lines


def timing_methods(device: torch.device) -> Dict[str, str]:
    return {"matmul": device_peaks.repetition_method(device) + "; one torch.matmul(a, b, out=c) per repetition"
                      + device_peaks.PAIRED_NOTE,
            "matmul_reference": device_peaks.REFERENCE_METHOD + device_peaks.PAIRED_NOTE,
            "copy_triad": device_peaks.repetition_method(device),
            "transfers": device_peaks.TRANSFER_METHOD,
            "order": "the GPUs one after the other, each alone (the others wait at a barrier)"}


@record
def main(argv: Sequence[str] | None = None) -> None:
    worker = start_worker(argv)
    cfg: ProbeConfig = worker.workload
    ctx = worker.ctx
    with worker.reporting(timing_methods(ctx.device)) as body:
        devices = measure_in_turn(cfg, ctx, worker.seed, worker.telemetry)
        derived = [derive_device(d) for d in devices]
        body.update({"measurements": {"devices": devices}, "derived": {"devices": derived}})
        if ctx.is_main:
            print("\n".join(line for d in derived for line in summary_lines(d)), flush=True)


if __name__ == "__main__":
    main()
