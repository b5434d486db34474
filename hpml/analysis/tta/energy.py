"""What reaching the target cost (issue 36): energy, energy per sample, GPU-hours and cost to target, and MLPerf's
power-sampling check, per run (run_fields) and per table row (row_fields, over a row's runs); the rows as cells
(table_rows). Used by the time-to-accuracy and the batch augmentation reports alike.

Per run, converged (a run that was not has none of them; it is counted as the slowest in the olympic means):
- energy to target [J]: analysis.telemetry.to_target (NVML's total-energy counter over the epochs and evaluations up
  to the target, every GPU of every node once);
- energy per sample [J] = energy to target / samples trained until the target (steps to target x the global batch:
  every rank's samples; a batch-augmentation copy is not a new sample);
- GPU-hours to target = TTA [s] / 3600 x the GPUs the point held (resources.nodes x resources.gpus_per_node: a GPU
  held is paid for whether it computes or not); none for a CPU run;
- cost to target [US$] = GPU-hours x workload.gpu_hour_usd, the price the point was launched with (pricing=<name>,
  conf/pricing/); none without a price.
Per row: mean ± sample std (ddof = 1) over the converged runs that have the number, and MLPerf's olympic mean
"over the same runs as the time score" (analysis.stats.olympic_mean_by_time: the runs the TTA olympic mean keeps),
defined only where every converged run has the number.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

import pandas as pd

from hpml.analysis.stats import olympic_mean_by_time
from hpml.analysis.telemetry.to_target import POWER_RULE_MIN_HZ, POWER_RULE_MIN_SAMPLES, result_energy_to_target
from hpml.analysis.tta.tables import COLUMNS, olympic_status, row, row_groups, spread
from hpml.contract.jsonio import STATE_LIMIT, DamagedFile, load_json
from hpml.contract.sweep_layout import SLURM_ENERGY_FILE
from hpml.report_kit.numbers import is_missing
from hpml.report_kit.sections import Section, Table

NAN = float("nan")
SECONDS_PER_HOUR = 3600.0
MEASURES = ("energy_j", "energy_per_sample_j", "gpu_hours", "cost_usd")


def held_gpus(config: Mapping[str, Any]) -> int:
    resources = config["resources"]
    return int(resources["nodes"]) * int(resources.get("gpus_per_node") or 0)


def run_fields(doc: Mapping[str, Any], last_epoch: Optional[int], tta_s: Optional[float],
               steps: Optional[int]) -> Dict[str, Any]:
    """One result's numbers to target. last_epoch: the 0-based epoch of its first evaluation at the target (None:
    not converged); tta_s and steps: that evaluation's clock and global step."""
    found = result_energy_to_target(doc, last_epoch)
    whole = found if last_epoch is None else result_energy_to_target(doc, None)
    converged = last_epoch is not None
    energy = found.energy_j if converged else None
    samples = steps * doc["measurements"]["global_batch"] if converged and steps else None
    gpus = held_gpus(doc["config"])
    gpu_hours = tta_s / SECONDS_PER_HOUR * gpus if converged and gpus else None
    price = doc["config"]["workload"].get("gpu_hour_usd")  # results before the train workload had a price: none
    return {
        "energy_j": energy, "energy_per_sample_j": energy / samples if energy is not None and samples else None,
        "energy_why": found.why, "gpus_counted": found.gpus, "gpus_held": gpus,
        "metered_share": found.metered_s / found.window_s if found.window_s else None,
        "power_samples": found.power_samples, "power_hz": found.power_hz, "below_power_rule": found.below_power_rule,
        "gpu_hours": gpu_hours, "gpu_hour_usd": price,
        "cost_usd": gpu_hours * price if gpu_hours is not None and price is not None else None,
        "nvml_run_j": whole.energy_j, **slurm_energy(doc),
    }


def slurm_energy(doc: Mapping[str, Any]) -> Dict[str, Any]:
    """SLURM's accounting of the point's job, as the launcher kept it beside the result (launcher/backends/slurm/energy.py):
    slurm_asked (the file exists: a SLURM sweep whose status was asked after the job ended), slurm_energy_j (sacct's
    ConsumedEnergy, J; None where the cluster records none), slurm_plugin (AcctGatherEnergyType)."""
    path = Path(str(doc.get("path") or "")).parent / SLURM_ENERGY_FILE
    try:
        found = load_json(path, STATE_LIMIT) if doc.get("path") else None
    except (FileNotFoundError, DamagedFile):
        found = None
    if not isinstance(found, dict):
        return {"slurm_asked": False, "slurm_energy_j": None, "slurm_plugin": None}
    value = found.get("consumed_energy_j")
    return {"slurm_asked": True, "slurm_plugin": found.get("acct_gather_energy_type"),
            "slurm_energy_j": float(value) if type(value) in (int, float) and value > 0 else None}


def _olympic(members: Sequence[Mapping[str, Any]], key: str, missed: int) -> float:
    done = [r for r in members if r["converged"]]
    if any(r[key] is None for r in done):
        return NAN  # a converged run without the number: an olympic mean of the others would not be MLPerf's
    result = olympic_mean_by_time([r[key] for r in done], [r["tta_s"] for r in done], missed)
    return NAN if result is None else result


def row_fields(members: Sequence[Mapping[str, Any]]) -> Dict[str, Any]:
    """A table row's numbers to target over its runs (each with run_fields and "converged", "tta_s")."""
    done = [r for r in members if r["converged"]]
    missed = len(members) - len(done)
    out: Dict[str, Any] = {"energy_olympic_status": olympic_status(len(members), missed)}
    for key in MEASURES:
        known = [r[key] for r in done if r[key] is not None]
        out.update(spread(known, key), **{f"{key}_runs": len(known), f"{key}_olympic": _olympic(members, key, missed)})
    checked = [r for r in members if r["below_power_rule"] is not None]
    below = [r for r in checked if r["below_power_rule"]]
    out.update(
        power_checked=len(checked), power_below=len(below),
        power_samples_min=min((r["power_samples"] for r in checked), default=NAN),
        power_hz_min=min((r["power_hz"] for r in checked), default=NAN),
        gpus_counted=max((r["gpus_counted"] for r in members), default=0),
        gpus_held=members[0]["gpus_held"] if members else 0,
        gpu_hour_usd=next((r["gpu_hour_usd"] for r in members if r["gpu_hour_usd"] is not None), None),
        **slurm_row(members),
        energy_why="; ".join(sorted({r["energy_why"] for r in done if r["energy_j"] is None and r["energy_why"]})))
    return out


def energy_table(runs: Sequence[Dict[str, Any]]) -> pd.DataFrame:
    """tta_table's rows (configuration, target, data path, hardware), with what reaching the target cost."""
    kept = COLUMNS + ["tta_s_olympic", "paths"]
    rows = [{key: value for key, value in row(members).items() if key in kept} | row_fields(members)
            for members in row_groups(runs)]
    return pd.DataFrame(rows) if rows else pd.DataFrame(columns=COLUMNS)


def slurm_row(members: Sequence[Mapping[str, Any]]) -> Dict[str, Any]:
    """SLURM's ConsumedEnergy beside NVML's over the same runs: mean of each over the runs that have both, and the
    mean of their per-run ratios; slurm_asked / slurm_recorded: how many runs' jobs were asked / had a number."""
    both = [r for r in members if r["slurm_energy_j"] is not None and r["nvml_run_j"]]
    plugins = sorted({r["slurm_plugin"] for r in members if r["slurm_asked"] and r["slurm_plugin"]})
    return {"slurm_asked": sum(r["slurm_asked"] for r in members),
            "slurm_recorded": sum(r["slurm_energy_j"] is not None for r in members), "slurm_runs": len(both),
            "slurm_energy_j_mean": statistics.fmean(r["slurm_energy_j"] for r in both) if both else NAN,
            "nvml_run_j_mean": statistics.fmean(r["nvml_run_j"] for r in both) if both else NAN,
            "slurm_over_nvml_mean": statistics.fmean(r["slurm_energy_j"] / r["nvml_run_j"] for r in both) if both
            else NAN, "slurm_plugin": ", ".join(plugins)}


LEAD_HEADERS = ["hardware", "data path"]
HEADERS = ["converged", "GPUs", "energy to target [J] olympic / mean ± sd",
           "per sample [mJ] olympic / mean ± sd", "GPU-hours to target olympic / mean ± sd",
           "cost to target [US$] olympic / mean ± sd",
           f"power samples in window (MLPerf: ≥ {POWER_RULE_MIN_SAMPLES} at ≥ {POWER_RULE_MIN_HZ:g} Hz)"]


def _fmt(value: float, fmt: str, scale: float) -> str:
    return format(value * scale, fmt)


def measure_cell(r: Mapping[str, Any], key: str, fmt: str, scale: float = 1.0) -> str:
    """"olympic / mean ± sd (n=k)"; "—" where no converged run has the number."""
    if is_missing(r[f"{key}_mean"]):
        return "—"
    olympic = "—" if is_missing(r[f"{key}_olympic"]) else _fmt(r[f"{key}_olympic"], fmt, scale)
    std = "" if is_missing(r[f"{key}_std"]) else f" ± {_fmt(r[f'{key}_std'], fmt, scale)}"
    return f"{olympic} / {_fmt(r[f'{key}_mean'], fmt, scale)}{std} (n={r[f'{key}_runs']})"


def power_cell(r: Mapping[str, Any]) -> str:
    """The rule's check: how many runs are below it, with the fewest samples and the lowest rate."""
    if not r["power_checked"]:
        return "— (no power samples)"
    fewest = f"fewest {int(r['power_samples_min'])} at {r['power_hz_min']:.1f} Hz"
    if r["power_below"]:
        return f"BELOW in {r['power_below']}/{r['power_checked']} runs: {fewest}"
    return f"ok ({r['power_checked']} runs): {fewest}"


def hardware_lead(r: Mapping[str, Any]) -> List[Any]:
    return [r["hardware"], r["data_placement"]]


def table_rows(rows: Sequence[Mapping[str, Any]], lead: Callable[[Mapping[str, Any]], List[Any]] = hardware_lead
               ) -> List[List[Any]]:
    """The cells of HEADERS after lead(row)'s (the TTA table's hardware and data path; batch augmentation's variant)."""
    body = []
    for r in rows:
        gpus = f"{r['gpus_held']} held" + (f", {r['gpus_counted']} metered" if r["gpus_counted"] else "")
        price = r["gpu_hour_usd"]
        cost = measure_cell(r, "cost_usd", ".4f") if price is not None else "— (no price: launch with pricing=<name>)"
        body.append(lead(r) + [f"{r['converged']}/{r['runs']}", gpus,
                     measure_cell(r, "energy_j", ",.1f"), measure_cell(r, "energy_per_sample_j", ".3f", 1000),
                     measure_cell(r, "gpu_hours", ".3g"), cost, power_cell(r)])
    return body


def missing_lines(rows: Sequence[Mapping[str, Any]], lead: Callable[[Mapping[str, Any]], List[Any]] = hardware_lead
                  ) -> List[str]:
    """Why a row's converged runs have no energy, one line per row that has such a reason."""
    return [f"{', '.join(str(cell) for cell in lead(r))}: no energy to target for "
            f"{r['converged'] - r['energy_j_runs']} converged run(s): {r['energy_why']}" for r in rows if r["energy_why"]]


def any_energy(rows: Sequence[Mapping[str, Any]]) -> bool:
    return any(not is_missing(r["energy_j_mean"]) or r["power_checked"] for r in rows)



NOTE = (
    "What reaching the target cost (\"Energy to target\", after each table of runs). Energy to target: NVML's "
    "total-energy counter (nvmlDeviceGetTotalEnergyConsumption) differenced over every epoch and evaluation from the "
    "start of training to the end of the first evaluation at the target (the TTA clock's window; the milliseconds "
    "between phases are not metered), summed over the point's GPUs, each GPU once (by UUID, across nodes). Per sample: "
    "energy / (steps to target x global batch). GPU-hours: TTA x the GPUs the point held (nodes x GPUs per node); "
    "cost: GPU-hours x the point's price (pricing=<name>, conf/pricing/). Each: MLPerf's olympic mean over the runs the "
    "TTA olympic mean keeps (a non-converged run is the slowest; — where undefined or a converged run lacks the "
    "number) / mean ± sample std (ddof=1) over the converged runs that have it. Power samples: MLPerf's power rule "
    f"asks for at least {POWER_RULE_MIN_SAMPLES} power samples per run at {POWER_RULE_MIN_HZ:g} Hz or more; a run "
    "below it is flagged BELOW with the fewest samples of any of its GPUs in the window. A short run cannot meet it "
    "(a 1.6 s run at 10 Hz has 16): train longer per process (more repeats in one process, a higher target, a larger "
    "data set) rather than sampling faster, since NVML's power reading is a 1-second average.")


def energy_section(rows: pd.DataFrame, title: str, table: str, lead_headers: Sequence[str] = tuple(LEAD_HEADERS),
                   lead: Callable[[Mapping[str, Any]], List[Any]] = hardware_lead, per: str = "hardware row") -> Section:
    """A table's cost to target (one row per its rows), or one line where none of its runs has NVML energy (a CPU
    run, telemetry off): the reason of the first run that has one."""
    records = rows.to_dict("records")
    heading = f"Energy to target: {title}"
    if not any_energy(records):
        why = next((r["energy_why"] for r in records if r["energy_why"]), "no converged run")
        line = f"Energy to target: none, no run here has NVML energy ({why})."
        return Section(heading, level=4, markdown="\n\n".join([line] + slurm_lines(records)))
    headers, body = list(lead_headers) + HEADERS, table_rows(records, lead)
    if any(r["slurm_recorded"] for r in records):
        headers.append(SLURM_HEADER)
        body = [cells + [slurm_cell(r)] for cells, r in zip(body, records)]
    lines = missing_lines(records, lead) + slurm_lines(records)
    return Section(heading, level=4, markdown=f"Per {per}; how each number is made: the section's introduction.",
                   tables=[Table(table, headers, body, rows)], after="\n".join(f"- {line}" for line in lines))


SLURM_HEADER = "SLURM ConsumedEnergy [J] / NVML whole run [J] (ratio)"
NO_SLURM_ENERGY = "SLURM accounting records no energy on this cluster (AcctGatherEnergyType={plugin})"


def slurm_cell(r: Mapping[str, Any]) -> str:
    if not r["slurm_runs"]:
        return "—"
    return (f"{r['slurm_energy_j_mean']:,.1f} / {r['nvml_run_j_mean']:,.1f} ({r['slurm_over_nvml_mean']:.3f}, "
            f"n={r['slurm_runs']})")


def slurm_lines(rows: Sequence[Mapping[str, Any]]) -> List[str]:
    """One line where the jobs' accounting was asked and holds no energy (the test cluster: no plugin)."""
    asked = [r for r in rows if r["slurm_asked"]]
    if not asked or any(r["slurm_recorded"] for r in asked):
        return []
    plugin = ", ".join(sorted({r["slurm_plugin"] for r in asked if r["slurm_plugin"]})) or "unknown"
    return [NO_SLURM_ENERGY.format(plugin=plugin)]
