"""The layout of a sweep directory (written by the launcher and the workloads, read by status and analysis).

    <sweep>/manifest.json              every point: overrides, resources, array, job id (launcher)
    <sweep>/points/<n>/config.yaml     the point's resolved config (the workers read it)
    <sweep>/points/<n>/state.json      the job's own account: running / completed / failed + reason
    <sweep>/points/<n>/result.json     the workload's result (docs/result-schema.md)
    <sweep>/points/<n>/slurm_energy.json  SLURM's accounting of the point's job's energy (launcher, once the job
                                       ended; SLURM sweeps only): SLURM_ENERGY_KEYS below
    <sweep>/points/<n>/checkpoint.pt   the last epoch's checkpoint (training workloads), for requeue and resume
    <sweep>/points/<n>/logs/           torchrun's stdout and stderr, one file per node
    <sweep>/points/<n>/attempts/<k>/   an earlier attempt's result, state and logs, moved aside by `hpml resume`
    <sweep>/jobs/                      submitit's pickles and logs
"""

from __future__ import annotations

from pathlib import Path

MANIFEST_FILE = "manifest.json"
MANIFEST_VERSION = 1
POINTS_DIR = "points"
CONFIG_FILE = "config.yaml"
STATE_FILE = "state.json"
RESULT_FILE = "result.json"
CHECKPOINT_FILE = "checkpoint.pt"
LOGS_DIR = "logs"
ATTEMPTS_DIR = "attempts"
ATTEMPT_RECORD = "attempt.json"  # in attempts/<k>/: its job id, how it ended, the resources it had
JOBS_DIR = "jobs"
SLURM_ENERGY_FILE = "slurm_energy.json"
# Its keys: the job, sacct's ConsumedEnergyRaw of the job's own line in joules (null where sacct gave it empty or 0:
# no energy plugin), the cluster's AcctGatherEnergyType (`scontrol show config`; null where it could not be asked),
# the command, and when it was asked. ConsumedEnergy is the job's whole allocation on every node, from whatever the
# plugin reads (RAPL: CPU and DRAM; IPMI: the node; gpu: the GPUs), not the timed window.
SLURM_ENERGY_KEYS = ("job_id", "consumed_energy_j", "acct_gather_energy_type", "command", "queried_at")


def point_dir(sweep_dir: str | Path, point: int) -> Path:
    """The folder of sweep point `point`: <sweep>/points/<point>."""
    return Path(sweep_dir) / POINTS_DIR / str(point)


def point_number(folder: str | Path) -> int | None:
    """The point number a folder names (points/<n>/ -> n); None for a folder outside that layout."""
    name = Path(folder).name
    return int(name) if name.isdigit() else None
