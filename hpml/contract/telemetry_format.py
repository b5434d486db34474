"""GPU telemetry on disk: the sidecar files the workers' NVML samplers write and the report reads.

Each node's local rank 0 samples the GPUs its node's workers use and, when the point ends, writes one sidecar
beside result.json: points/<n>/telemetry.node<k>.json.gz (gzip'd JSON; k = the node's rank, 0 on one node).
result.json's "telemetry" block says whether telemetry ran and names the sidecars:

    "telemetry": {"status": "ok" | "unavailable" | "disabled", "reason": null | "one line",
                  "interval_ms": 100, "sidecars": ["telemetry.node0.json.gz", ...]}

A sidecar (version TELEMETRY_VERSION):

    telemetry_version  1
    host, node_rank    where it was sampled
    interval_ms        the sampling period asked for
    t0_unix            time.time() when sampling started; every t_s below is seconds after it
    decimation         1 while raw; 2, 4, ... once the buffer reached MAX_SAMPLES_PER_GPU and every other
                       sample was dropped (the effective period is interval_ms x decimation)
    gpus               [{"cuda_index", "nvml_index", "uuid", "name", "mig": bool,
                         "unavailable": {field: "why"}}]   fields this GPU cannot give (GPM off Hopper, MIG)
    samples            {uuid: {field: [value or null, ...]}}  one column per SAMPLE_FIELDS, equal lengths
    phases             [{"name", "index", "timed": bool, "start_s", "end_s" (null: never closed), "samples": int or null,
                         "energy_j": {uuid: joules or null}}]   the workload's marks (warm-up, epoch, eval,
                       benchmark size); energy from the total-energy counter at the phase's two edges: read
                       there, or, for an edge within 0.5 s of the last read, interpolated linearly in time between
                       the reads around it (reads cost milliseconds of the workload's time: issue 36)
    sampler            {"kind", "gpus", "ticks", "overruns", "tick_read_s", "energy_reads": how many times the
                        counters were read, "energy_min_gap_s", "errors"}

A value NVML cannot give is null, never 0 (MIG instances report no utilization).
"""

from __future__ import annotations

from typing import Tuple

TELEMETRY_VERSION = 1
TELEMETRY_STATUSES = ("ok", "unavailable", "disabled")

# Per sample and GPU. Units are in the names; utilizations are percent (0-100), as NVML gives them.
SAMPLE_FIELDS: Tuple[str, ...] = (
    "t_s",  # seconds after t0_unix
    "util_gpu",  # utilization.gpu: % of the period in which any kernel ran
    "util_mem",  # utilization.memory: % of the period in which device memory was read or written
    "mem_used_bytes",
    "power_w",  # nvmlDeviceGetPowerUsage (a 1-second average on Ampere and later)
    "sm_clock_mhz",
    "mem_clock_mhz",
    "temp_c",
    "throttle_reasons",  # nvmlDeviceGetCurrentClocksThrottleReasons bit mask
    "sm_activity",  # GPM SM activity, % (Hopper and later; null elsewhere)
    "sm_occupancy",  # GPM SM occupancy, % (Hopper and later; null elsewhere)
)

# Bounded memory and sidecar size: at 100 ms this many samples are 14.6 h; past it every other sample goes.
MAX_SAMPLES_PER_GPU = 2 ** 19


SIDECAR_GLOB = "telemetry.node*.json.gz"


def sidecar_name(node_rank: int) -> str:
    return f"telemetry.node{node_rank}.json.gz"
