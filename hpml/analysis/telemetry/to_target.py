"""Energy to a target accuracy, from a train point's NVML sidecars (issue 36; docs/studies/time-to-accuracy.md). Pure:
sidecars and the epoch of the first evaluation at the target in, numbers out.

The time-to-accuracy clock runs from the start of the first epoch to the end of the first evaluation at or above the
target (analysis.tta.runs). The train workload marks every epoch ("epoch", index = 0-based epoch) and every evaluation
("eval", index = the epoch it followed) as phases, and the sampler reads each GPU's total-energy counter
(nvmlDeviceGetTotalEnergyConsumption) at both edges of each. So:

- energy to target, per GPU = the sum of its "epoch" and "eval" phases' energy with index <= the target epoch: the
  counter's difference over each phase, read where the device reached the edge, or, for an edge within 0.5 s of the
  sampler's last read, interpolated in time between the reads around it (workloads/common/telemetry/sampler.py:
  each read stalls the workload for milliseconds; sidecars before that change have every edge read). The few
  milliseconds between one phase's end and the next one's start (the barrier, the epoch's print, a checkpoint save)
  are not metered; metered_s / window_s says how much of the window the phases cover (99.8 % on the committed H100
  runs). The cold first epoch is in it, as it is in the TTA clock.
- of the point = the sum over its GPUs, each once (analysis.telemetry.stats.counted_gpus: by UUID across nodes).
- None, with the reason, where a part is missing: a sidecar not read, an epoch's phase absent (a resumed run's earlier
  attempt is in another sidecar), a counter read that failed.

MLPerf's power rule as a check (mlcommons/training_policies, power measurement for training: at least 60 samples per
run at 1 Hz or more): power samples = the samples with a power reading inside the window (each node's own window: its
first phase's start to its target phase's end), of the GPU with the fewest; rate = samples / window. A run below either
bound is flagged. NVML's power reading is itself a 1-second average on Ampere and later, so samples closer than 1 s
are not independent: the rule's count is what is checked, not the energy (which comes from the counter).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from hpml.analysis.telemetry.points import point_sidecars
from hpml.analysis.telemetry.series import Phase, Sidecar
from hpml.analysis.telemetry.stats import counted_gpus

POWER_RULE_MIN_SAMPLES = 60  # MLPerf training power rules: samples per run
POWER_RULE_MIN_HZ = 1.0  # ... at this rate or more
TARGET_PHASES = ("epoch", "eval")  # the train workload's marks inside the TTA clock


@dataclass
class EnergyToTarget:
    energy_j: Optional[float]  # every counted GPU, start of training to the end of the target evaluation
    gpus: int  # GPUs counted (each once)
    window_s: Optional[float]  # the first node's window: its first phase's start to its last counted phase's end
    metered_s: Optional[float]  # the first node's counted phases' summed durations
    power_samples: Optional[int]  # in the window, of the GPU with the fewest power readings (any node)
    power_hz: Optional[float]  # power_samples / that GPU's window
    why: Optional[str] = None  # why energy_j is None

    @property
    def below_power_rule(self) -> Optional[bool]:
        """MLPerf's rule: fewer than 60 power samples, or fewer than 1 per second; None without samples counted."""
        if self.power_samples is None or self.power_hz is None:
            return None
        return self.power_samples < POWER_RULE_MIN_SAMPLES or self.power_hz < POWER_RULE_MIN_HZ


def none_to_target(why: str) -> EnergyToTarget:
    return EnergyToTarget(None, 0, None, None, None, None, why)


def _phases_to(sidecar: Sidecar, last_epoch: Optional[int]) -> Tuple[List[Phase], Optional[str]]:
    """The sidecar's epoch and eval phases up to the target epoch (every one when last_epoch is None: a run that
    did not converge, for its power-sample count), and why they cannot give the energy to target."""
    phases = [p for p in sidecar.phases if p.name in TARGET_PHASES and isinstance(p.index, int)
              and (last_epoch is None or p.index <= last_epoch)]
    if not phases:
        return [], f"{sidecar.path.name}: no epoch or evaluation phase marked"
    epochs = sorted(p.index for p in phases if p.name == "epoch")
    wanted = list(range(last_epoch + 1)) if last_epoch is not None else list(range(len(epochs)))
    if epochs != wanted:
        return phases, (f"{sidecar.path.name}: epoch phases {epochs[:3]}{'...' if len(epochs) > 3 else ''} are not "
                        f"0..{wanted[-1] if wanted else 0} (a resumed run's earlier epochs are in another attempt)")
    if any(p.start_s is None or p.end_s is None for p in phases):
        return phases, f"{sidecar.path.name}: a phase before the target was never opened or closed"
    return phases, None


def _power_samples(columns: Mapping[str, np.ndarray], start: float, end: float) -> int:
    t_s, power = columns["t_s"], columns["power_w"]
    return int(np.count_nonzero((t_s >= start) & (t_s <= end) & ~np.isnan(power)))


def energy_to_target(sidecars: Sequence[Sidecar], named: int, last_epoch: Optional[int]) -> EnergyToTarget:
    """sidecars: a point's, as read (analysis.telemetry.points.point_sidecars); named: how many its result names;
    last_epoch: the 0-based epoch after which the first evaluation at the target ran, None when none did (then the
    whole run is the window: its power samples are still checked, its energy is that of the whole run)."""
    counted = counted_gpus(sidecars)
    if not counted:
        return none_to_target("no GPU in the sidecars")
    windows = {}
    why = None if len({s.node_rank for s in sidecars}) >= named else f"{len(sidecars)} of {named} node sidecars read"
    energy = 0.0
    fewest: Optional[Tuple[int, float]] = None
    for sidecar, gpu in counted:
        if sidecar.node_rank not in windows:
            windows[sidecar.node_rank] = _phases_to(sidecar, last_epoch)
        phases, problem = windows[sidecar.node_rank]
        why = why or problem
        if not phases or problem:
            continue
        start, end = min(p.start_s for p in phases), max(p.end_s for p in phases)
        if gpu.columns:
            count = _power_samples(gpu.columns, start, end)
            rate = count / (end - start) if end > start else 0.0
            fewest = (count, rate) if fewest is None or count < fewest[0] else fewest
        readings = [p.energy_j.get(gpu.uuid) for p in phases]
        if any(value is None for value in readings):
            why = why or f"{gpu.uuid}: an energy counter read before the target failed (null)"
            continue
        energy += float(sum(readings))
    first = min(sidecars, key=lambda s: s.node_rank)
    phases, problem = windows.get(first.node_rank) or _phases_to(first, last_epoch)
    timed = phases and not problem
    return EnergyToTarget(
        energy_j=None if why else energy, gpus=len(counted),
        window_s=max(p.end_s for p in phases) - min(p.start_s for p in phases) if timed else None,
        metered_s=sum(p.end_s - p.start_s for p in phases) if timed else None,
        power_samples=fewest[0] if fewest else None, power_hz=fewest[1] if fewest else None, why=why)


def result_energy_to_target(doc: Mapping[str, Any], last_epoch: Optional[int]) -> EnergyToTarget:
    """energy_to_target of a result's own sidecars; its reason in one line where it has none (no GPU, telemetry
    off, a sidecar unreadable)."""
    sidecars, named, why = point_sidecars(doc)
    return none_to_target(why) if why else energy_to_target(sidecars, named, last_epoch)
