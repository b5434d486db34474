"""Typed schema of the base hpml config tree: sweep, resources, cluster and the whole point (HpmlConfig).

The dataclasses say which keys exist and what type each has; the YAML files under ``conf/`` set the values
(fields without a value here are ``MISSING`` and must come from YAML). Hydra validates types and rejects
unknown keys while composing; ``config_from_dict`` then builds the typed tree from the resolved values and
``__post_init__`` checks the rest, with messages that name the field. The launcher calls it for every point
it plans, and every worker calls it on its point's config.yaml (workloads/common/point_config.py): one
validation path.

The workloads' schemas (the `workload` group) are in conf/workload/<name>.py, registered in
conf/workload/__init__.py; HpmlConfig reaches a workload only through the hooks of
conf/workload_contract.py. ResourcesConfig has its own module (conf/resources.py) because the workload
schemas take it too; MISSING, ConfigValueError and require are in conf/validation.py.

This module imports neither Hydra nor OmegaConf so that workers can use it to read their config.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
import typing
import unicodedata
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, Dict, List, Optional

from hpml.conf.resources import MAX_GPUS_PER_NODE, ResourcesConfig
from hpml.conf.validation import MISSING, ConfigValueError, require, shown
from hpml.conf.workload import WORKLOAD_SCHEMAS

SBATCH_OPTION = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
# A node feature's name, as a --constraint expression holds it (its operators & | , [ ] ( ) * are not part of it)
FEATURE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
# sweep.name becomes part of a folder name under sweep.root: no path separator, no "..", no line break, and
# short enough that the timestamped folder name stays under the file systems' 255-byte limit.
SWEEP_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+=-]{0,99}")


def require_plain_text(key: str, value: Any) -> None:
    """Every text in a value (inside lists and mappings, keys too) is one line without control characters: a line
    break would start a new shell line in a job script, a tab or ESC garbles names in folders, tables and terminals."""
    texts = [value] if isinstance(value, str) else []
    if isinstance(value, (list, tuple)):
        texts = [t for v in value for t in ([v] if isinstance(v, str) else [])]
    elif isinstance(value, dict):
        texts = [t for k, v in value.items() for t in (k, v) if isinstance(t, str)]
    for text in texts:
        require(not any(unicodedata.category(c) == "Cc" for c in text), key,
                "one line of text without control characters (line break, tab, NUL, ESC)", value)


def require_element_type(key: str, hint: Any, value: Any) -> None:
    """The items of a List[str], List[int] or List[float] field are of that type: OmegaConf lets a list or a
    mapping through as an item of a list it merges (`cluster.setup=[[a]]`), which broke far from the key."""
    if typing.get_origin(hint) not in (list, List) or not isinstance(value, list):
        return
    (item_type,) = typing.get_args(hint)
    types = {str: (str,), int: (int,), float: (int, float)}.get(item_type)
    for index, item in enumerate(value):
        if types and (isinstance(item, bool) or not isinstance(item, types)):
            require(False, key, f"a list of {item_type.__name__} values (item {index} is {shown(item)})", value)


# Bounds of cluster.poll_s (seconds between two looks at a waiting sweep's points). Below 0.1 s the launcher's
# loop would mostly read state files beside the points it times; above 10 minutes a SLURM launch with
# sweep.wait=true could wait that long after its last point ended (1e12 overflowed time_t in the wait).
POLL_S = (0.1, 600.0)
# Bounds of cluster.report_time_min and cluster.report_mem_gb (the report job of a sweep that nobody waits for):
# `hpml report` reads result files and writes tables, minutes and a few GB at most, whatever the sweep.
REPORT_TIME_MIN = (1, 1440)
REPORT_MEM_GB = (0, 64)
MAX_REQUEUES = 100  # a point requeued more often than this is not making progress (each attempt costs a queue wait)
# cluster.max_parallel: one launch plans at most 10,000 points (hpml_sweeper.MAX_POINTS), so a larger cap is no cap;
# SLURM reads the array's %N as a 32-bit number and refuses a larger one only at sbatch time
MAX_PARALLEL = 10_000
MAX_SEED = 2 ** 32 - 1  # sweep.seed
# cluster.points_per_job: a job of more points than this runs for hours of queue-free time on one allocation, and a
# failure of its node loses them all; 1,000 is already far past the point where packing pays (docs/decisions.md)
MAX_POINTS_PER_JOB = 1000
MAX_ATTEMPTS = 10  # cluster.max_attempts: doubling 10 times is 1024 x the first request, past any partition


class ClusterKind(str, Enum):
    """Where points run; each kind has one backend (launcher/backends/, docs/adding-a-backend.md)."""
    local = "local"
    slurm = "slurm"


@dataclass
class SweepConfig:
    name: str = MISSING  # names the study in the sweep directory and in reports
    root: str = MISSING  # sweeps are created under this directory
    dir: str = MISSING  # this sweep's directory (a default in conf/config.yaml derives it)
    wait: bool = MISSING  # block until every point has finished (SLURM; a local run always waits: false is refused)
    repeat: int = MISSING  # repeat index; sweep it (repeat=0,1,2) to measure run-to-run spread
    seed: int = MISSING

    def __post_init__(self) -> None:
        require(bool(SWEEP_NAME.fullmatch(self.name)), "sweep.name",
                "1-100 characters: letters, digits and . _ + = - (not first), no '/' or line break", self.name)
        for key in ("root", "dir"):
            require(getattr(self, key) != "", f"sweep.{key}", "a folder path (give . for the current directory)", "")
        require(self.repeat >= 0, "sweep.repeat", "an integer >= 0", self.repeat)
        # workers seed torch generators with seed + rank or + epoch: torch takes at most 2**64 - 1 and numpy's
        # generators 2**32 - 1; negative seeds are valid for neither everywhere
        require(0 <= self.seed <= MAX_SEED, "sweep.seed", f"an integer from 0 to {MAX_SEED:,} (2**32 - 1)", self.seed)


@dataclass
class ClusterConfig:
    kind: ClusterKind = MISSING
    max_parallel: int = MISSING  # points running at once (local) / array parallelism (SLURM); 0: no cap
    poll_s: float = MISSING  # how often a waiting launch refreshes its progress line
    # A waiting SLURM launch looks again after poll_s, doubling the pause while nothing changes, up to this (or
    # poll_s, if larger) (launcher/progress.py; default in conf/cluster/slurm.yaml, reason in docs/decisions.md)
    poll_max_s: float = 30.0
    # SLURM: how many times a point that reaches its time limit is requeued to continue from its last epoch
    # checkpoint (submitit's max_num_timeout; its default 3); then it is failed ("timed-out too many times")
    max_requeues: int = 3
    # Local only: plan as if this machine had this many visible GPUs (a --dry-run of a sweep meant for a GPU
    # host, checked on a laptop); None counts them (launcher/backends/local/preflight.py).
    assume_gpus: Optional[int] = None
    # SLURM only (None: the cluster's default). Kept in one schema so a sweep can switch clusters.
    partition: Optional[str] = None
    account: Optional[str] = None
    qos: Optional[str] = None
    constraint: Optional[str] = None
    exclusive: bool = False
    sbatch_extra: Dict[str, str] = field(default_factory=dict)
    setup: List[str] = field(default_factory=list)
    srun_args: List[str] = field(default_factory=list)
    # SLURM only: the job that runs `hpml report` once every array of a sweep has ended (launcher/backends/slurm/report_job.py);
    # its partition (None: the sweep's own), time limit and memory
    report_partition: Optional[str] = None
    report_time_min: int = 5
    report_mem_gb: int = 2
    # SLURM: array tasks of one job array running at once (sbatch --array=0-99%N); null: cluster.max_parallel
    array_parallelism: Optional[int] = None
    # SLURM: sweep points run one after another inside one array task (one allocation), for many short points;
    # more than 1 only on a kind whose backend packs points (launcher/backends' check_config, at launch)
    points_per_job: int = 1
    # SLURM: `hpml resume --grow` resubmits a point that ran out of memory or time until it has had this many
    # attempts (the first run included)
    max_attempts: int = 3
    # SLURM: node features ordered by GPU memory (e.g. [a100_40g, a100_80g, h200]); `hpml resume --grow` moves a
    # point that ran out of CUDA memory one rung up (its cluster.constraint becomes the next feature)
    gpu_ladder: List[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        # Values end up in the sbatch script: #SBATCH lines (quoted by submitit) and the srun line. A line
        # break would start a new shell line: _build refuses control characters in every text (require_plain_text);
        # sbatch option names are plain words, and an empty name would be an empty #SBATCH option.
        for key in ("partition", "account", "qos", "constraint", "report_partition"):
            require(getattr(self, key) != "", f"cluster.{key}", "a name, or null for the cluster's default", "")
        for option, value in self.sbatch_extra.items():
            require(bool(SBATCH_OPTION.fullmatch(option)), f"cluster.sbatch_extra.{option}",
                    "an sbatch option name (letters, digits, '-', '_')", option)
            require(isinstance(value, str), f"cluster.sbatch_extra.{option}",
                    "one value as text (e.g. gpu:a100:4), not a list or mapping", value)
        require(0 <= self.max_parallel <= MAX_PARALLEL, "cluster.max_parallel",
                f"an integer from 0 (no cap) to {MAX_PARALLEL:,} (the most points a launch plans)", self.max_parallel)
        require(self.assume_gpus is None or 0 <= self.assume_gpus <= MAX_GPUS_PER_NODE, "cluster.assume_gpus",
                f"null (count this machine's GPUs) or an integer from 0 to {MAX_GPUS_PER_NODE}", self.assume_gpus)
        require(0 <= self.max_requeues <= MAX_REQUEUES, "cluster.max_requeues",
                f"an integer from 0 to {MAX_REQUEUES} (requeues of a point at its time limit)", self.max_requeues)
        require(self.array_parallelism is None or 1 <= self.array_parallelism <= MAX_PARALLEL,
                "cluster.array_parallelism", f"null (use cluster.max_parallel) or an integer from 1 to {MAX_PARALLEL:,} "
                "(array tasks running at once)", self.array_parallelism)
        require(1 <= self.points_per_job <= MAX_POINTS_PER_JOB, "cluster.points_per_job",
                f"an integer from 1 to {MAX_POINTS_PER_JOB:,} (sweep points run one after another in one job)",
                self.points_per_job)
        for rung in self.gpu_ladder:
            require(isinstance(rung, str) and bool(FEATURE_NAME.fullmatch(rung)), "cluster.gpu_ladder",
                    "a list of node feature names (letters, digits, '_', '-', '.'), ordered by GPU memory", rung)
        require(len(set(self.gpu_ladder)) == len(self.gpu_ladder), "cluster.gpu_ladder",
                "each feature once", self.gpu_ladder)
        require(1 <= self.max_attempts <= MAX_ATTEMPTS, "cluster.max_attempts",
                f"an integer from 1 to {MAX_ATTEMPTS} (runs of a point, the first included, for `hpml resume --grow`)",
                self.max_attempts)
        low, high = POLL_S
        require(low <= self.poll_s <= high, "cluster.poll_s", f"a number from {low:g} to {high:g} (seconds)",
                self.poll_s)
        require(low <= self.poll_max_s <= high, "cluster.poll_max_s", f"a number from {low:g} to {high:g} (seconds; "
                "below cluster.poll_s it is poll_s)", self.poll_max_s)
        low, high = REPORT_TIME_MIN
        require(low <= self.report_time_min <= high, "cluster.report_time_min",
                f"an integer from {low} to {high} (minutes)", self.report_time_min)
        low, high = REPORT_MEM_GB
        require(low <= self.report_mem_gb <= high, "cluster.report_mem_gb",
                f"an integer from {low} (the cluster's default) to {high} (GB)", self.report_mem_gb)


# Bounds of telemetry.interval_ms. Below 10 ms the sampler would read faster than NVML refreshes most of its
# counters (utilization.gpu integrates over 1/6 s to 1 s) and the thread's share of the GIL grows for nothing;
# above a minute a run of a few minutes has no series left to plot.
TELEMETRY_INTERVAL_MS = (10, 60000)


@dataclass
class TelemetryConfig:
    """GPU telemetry (NVML sampling by each node's local rank 0: workloads/common/telemetry/)."""

    enabled: bool = MISSING  # false: no sampler; result.json says "disabled"
    interval_ms: int = MISSING  # sampling period of the cheap NVML counters

    def __post_init__(self) -> None:
        require(type(self.enabled) is bool, "telemetry.enabled", "true or false", self.enabled)
        low, high = TELEMETRY_INTERVAL_MS
        require(type(self.interval_ms) is int and low <= self.interval_ms <= high, "telemetry.interval_ms",
                f"an integer from {low} to {high} (milliseconds)", self.interval_ms)


@dataclass
class HpmlConfig:
    """The whole tree of one sweep point."""

    sweep: SweepConfig = MISSING
    resources: ResourcesConfig = MISSING
    cluster: ClusterConfig = MISSING
    telemetry: TelemetryConfig = MISSING
    # one of the workload schemas (a WorkloadConfig), chosen by the `workload` config group. Typed Any for
    # Hydra: a field typed WorkloadConfig would accept only the base class's keys.
    workload: Any = MISSING

    def __post_init__(self) -> None:
        # the points of one packed job share its allocation's rendezvous (job id, port): one node each, in turn
        require(self.cluster.points_per_job == 1 or self.resources.nodes == 1, "cluster.points_per_job",
                f"1 for a point of resources.nodes={self.resources.nodes} (only 1-node points share a job)",
                self.cluster.points_per_job)
        self.workload.check_resources(self.resources)


@functools.lru_cache(maxsize=None)
def _fields_of(schema: type) -> tuple:
    """(type hints, field names) of a schema; cached: get_type_hints is slow and a sweep builds many."""
    return typing.get_type_hints(schema), frozenset(f.name for f in dataclasses.fields(schema))


def _build(schema: type, values: Dict[str, Any], path: str) -> Any:
    """A dataclass of `schema` from plain values (YAML/JSON), converting enums and nested dataclasses."""
    hints, names = _fields_of(schema)
    unknown = sorted(set(values) - names)
    if unknown:
        raise ConfigValueError(f"unknown key '{path}{unknown[0]}'; allowed keys: {', '.join(sorted(names))}")
    kwargs = {}
    for name, value in values.items():
        hint = hints[name]
        if name == "workload" and schema is HpmlConfig:
            workload = WORKLOAD_SCHEMAS.get(value.get("name"))
            require(workload is not None, "workload.name", f"one of {sorted(WORKLOAD_SCHEMAS)}", value.get("name"))
            kwargs[name] = _build(workload, value, "workload.")
        elif isinstance(hint, type) and dataclasses.is_dataclass(hint):
            kwargs[name] = _build(hint, value, f"{path}{name}.")
        elif isinstance(hint, type) and issubclass(hint, Enum) and not isinstance(value, hint):
            allowed = [m.name for m in hint]
            require(value in allowed, f"{path}{name}", f"one of {allowed}", value)
            kwargs[name] = hint[value]
        else:
            # Every number must be finite, and every integer fit in 64 bits: inf or nan pass a `> 0` check
            # (or any check, for nan), and 10**20 passes `>= 1`; each only breaks the run later (torch and
            # C++ take int64), so they are refused here for every field at once, inside lists too.
            require(not _any_number(value, lambda v: isinstance(v, float) and not math.isfinite(v)),
                    f"{path}{name}", "a finite number (not inf or nan)", value)
            require(not _any_number(value, lambda v: type(v) is int and not -2 ** 63 <= v < 2 ** 63),
                    f"{path}{name}", "an integer that fits in 64 bits (below 2**63)", value)
            require_element_type(f"{path}{name}", hint, value)
            require_plain_text(f"{path}{name}", value)
            kwargs[name] = value
    return schema(**kwargs)


def _any_number(value: Any, bad: Callable[[Any], bool]) -> bool:
    """Whether `bad` holds for the value or for any number in its lists and mappings."""
    if isinstance(value, (list, tuple)):
        return any(_any_number(v, bad) for v in value)
    if isinstance(value, dict):
        return any(_any_number(v, bad) for v in value.values())
    return bad(value)


def config_from_dict(values: Dict[str, Any]) -> HpmlConfig:
    """The typed config of one point from its resolved values; runs every __post_init__ check.

    Used by the launcher after Hydra composed (and type-checked) the values, and by the workers, which
    read their point's config.yaml without Hydra or OmegaConf.
    """
    return _build(HpmlConfig, values, "")
