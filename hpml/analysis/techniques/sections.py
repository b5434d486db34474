"""The training-techniques sections (docs/studies/training-techniques.md): formatting of analysis.techniques'
frames. Each appears only where its results are: the phase profile for runs that recorded the loop's wall time,
precision where runs of one configuration differ only in precision, checkpointing where they differ in
workload.activation_checkpointing, utilization where a sweep has several configurations and GPU telemetry."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional

import pandas as pd

from hpml.analysis.stats import COMMON_VALUES, differing_labels, natural_key
from hpml.analysis.techniques import compare, profile
from hpml.analysis.techniques.plots import precision_curves, profile_pie
from hpml.analysis.techniques.runs import CHECKPOINTING_KEYS, PRECISION_KEYS, has_profile, telemetry_numbers
from hpml.analysis.techniques.setting_names import setting_names
from hpml.analysis.train.efficiency import (
    MFU_INTRO,
    TECHNIQUE_HEADERS,
    differs_in_technique,
    efficiency_table,
    na_lines,
    technique_cells,
)
from hpml.contract.units import MIB
from hpml.report_kit.numbers import mean_std, number
from hpml.report_kit.sections import MAX_GROUP_TABLES, Figure, Section, Table

MAX_PIES = 8  # pie charts per report: one per configuration, the first 8 (the tables cover every one)
PART_NAMES = {"forward": "forward + loss"}

PROFILE_INTRO = (
    "Where each pass of the epoch loop spent its wall time (rank 0), in seconds and as a share of the wall time; "
    "one row per epoch (mean over the runs that ran it, n), then \"timed\": the sums over each run's timed epochs "
    "(epoch 1 and the first after a resume are cold), averaged over runs, which the pie chart shows. wall = the "
    "loop's wall clock from the epoch's start (after a barrier) to the barrier after its evaluation. data = the "
    "sum over steps of (step time - train time): the wait for the next batch (host path) or its slicing and "
    "augmentation (device path), read on the device's timeline on a GPU. h2d, forward (the loss included), "
    "backward (zero_grad + backward) and optimizer: the step phases' sums. evaluation: the held-out evaluation "
    "after the epoch. other = wall - all of these (barriers, the epoch record's collectives, logging, a "
    "checkpoint save): the parts add up to the wall time by construction, and a row whose \"other\" falls below "
    f"-{profile.CONSISTENCY_TOLERANCE * 100:g} % of it (phases longer than the wall clock) is flagged below it.")

PRECISION_INTRO = (
    "Runs of one configuration that differ only in precision: fp32 (TF32 off), tf32 (fp32 with TF32 math in "
    "matmuls and convolutions), fp16 (autocast with a gradient scaler) and bf16 (autocast); the same model, data, "
    "seed and epochs. final loss: the last epoch's mean training loss (mean over runs; a non-finite loss is never "
    "averaged in, its epochs are listed); top-1: held-out, last evaluation and best (mean ± sample std over runs); "
    "epoch: mean over the timed epochs; peak memory: the allocator's (torch.cuda.max_memory_allocated, the "
    "largest of the timed epochs: epoch 1 holds cuDNN's benchmark workspaces) and NVML's (memory used on the device, the process's and the CUDA context's); power, "
    "utilization, SM activity and energy per sample: GPU telemetry over the timed epochs (— without a GPU).")

CHECKPOINTING_INTRO = (
    "Activation checkpointing (workload.activation_checkpointing: each model stage under torch.utils.checkpoint, "
    "non-reentrant) at the same per-device batch: the allocator's peak memory (largest timed epoch) and the mean step "
    "time of the timed epochs without and with; saved = 1 - with / without; extra step = with / without - 1; MB "
    "saved per extra ms of step time = (peak without - peak with) / (step with - step without); the largest "
    "per-device batch that fits (the batch probe, doubling until out of memory) without and with.")

UTILIZATION_INTRO = (
    "Each configuration of the sweep, named by the config-group choice its point was launched with "
    "(experiment=gpu_utilization: utilization=<setting>, conf/utilization/; the same setting launched twice adds "
    "what tells the two apart), or, where the points chose none, by where it departs from the value most of the "
    f"sweep's configurations share ({COMMON_VALUES}: a configuration at every such value): samples/s over the timed epochs "
    "(mean ± sample std over runs), and GPU telemetry over them: utilization.gpu (the share of time some kernel "
    "ran) and SM activity (GPM: the share of the SMs' cycles with a warp resident, how much of the GPU the "
    "kernels used). Closest to full use: the highest SM activity (utilization.gpu where no SM activity was "
    "sampled). Timed window: the timed epochs' total time (mean over runs), what the telemetry numbers cover; "
    f"under {compare.SHORT_WINDOW_S:g} s it is marked short: NVML averages utilization.gpu over its own period "
    "(1/6 s to 1 s), so the window's edges (warm-up, evaluation) weigh on its mean; run more epochs to measure "
    "such a setting.")




def _configurations(records: List[Dict[str, Any]]) -> Dict[str, List[Dict[str, Any]]]:
    by: Dict[str, List[Dict[str, Any]]] = {}
    for record in records:
        by.setdefault(f"{record['sweep']}\n{record['config_key']}", []).append(record)
    return by


PROFILE_HEADERS = ["epoch", "runs (n)", "wall [s]"] + [f"{PART_NAMES.get(p, p)} [s] (share)" for p in profile.PARTS]


def _profile_cells(r: Mapping[str, Any]) -> List[Any]:
    return ([r["epoch"], r["runs"], f"{r['wall']:.3f}"]
            + [f"{r[p]:.3f} ({r[f'{p}_share'] * 100:.1f} %)" for p in profile.PARTS])


def _flagged_line(flagged: List[str]) -> str:
    return (f"Phases longer than the wall clock (other below -{profile.CONSISTENCY_TOLERANCE * 100:g} %): epoch "
            f"{', '.join(flagged)}." if flagged else "")


def profile_sections(records: List[Dict[str, Any]]) -> List[Section]:
    profiled = _configurations([r for r in records if has_profile(r)])
    if not profiled:
        return []
    # labelled as the train report labels its groups: by what differs from the other configurations of the sweep
    by_sweep: Dict[str, Dict[str, Mapping[str, Any]]] = {}
    for key, runs in profiled.items():
        by_sweep.setdefault(runs[0]["sweep"], {})[key] = runs[0]["config_items"]
    labels = {key: label for configurations in by_sweep.values()
              for key, label in differing_labels(configurations).items()}
    keys = sorted(profiled, key=lambda k: (natural_key(labels[k]), k))
    many = len(keys) > MAX_GROUP_TABLES  # then one table, the configuration in its first column (issue 25)
    sections = [Section("Full phase profile", markdown=PROFILE_INTRO)]
    combined: List[Dict[str, Any]] = []
    for index, key in enumerate(keys):
        rows = profile.profile_rows(profiled[key])
        title = f"{profiled[key][0]['sweep']} {labels[key]}".rstrip()
        flagged = profile.inconsistent_epochs(rows)
        figures = []
        if index < MAX_PIES and not many:
            name = f"phase_profile_{index + 1}.png"
            shares = {p: float(rows[-1][f"{p}_share"]) for p in profile.PARTS}  # the "timed" row
            figures.append(Figure(name, lambda path, s=shares, t=f"Phase profile: {title}": profile_pie(s, path, t)))
        if many:  # the configuration's timed row; an epoch flagged anywhere is named after the table
            combined.append({"configuration": title, **rows[-1], "flagged": ", ".join(flagged)})
            continue
        after = " ".join(part for part in (_flagged_line(flagged), f"Pie chart (timed epochs): {figures[0].file}."
                                           if figures else "") if part)
        sections.append(Section(f"Phase profile: {title}", level=3, after=after, figures=figures,
                                tables=[Table("phase_profile", PROFILE_HEADERS, [_profile_cells(r) for r in rows],
                                              pd.DataFrame(rows))]))
    if many:  # one pie: the mean of the configurations' timed shares (each set sums to 1, so does the mean)
        shares = {p: sum(row[f"{p}_share"] for row in combined) / len(combined) for p in profile.PARTS}
        pies = [Figure("phase_profile_1.png", lambda path, s=shares, t=f"Phase profile: mean of {len(keys)} "
                       "configurations (timed epochs)": profile_pie(s, path, t))]
        flagged = [f"{row['configuration']} (epoch {row['flagged']})" for row in combined if row["flagged"]]
        after = (f"Phases longer than the wall clock (other below -{profile.CONSISTENCY_TOLERANCE * 100:g} %) in: "
                 f"{'; '.join(flagged)}. " if flagged else "") + \
            "Pie chart (phase_profile_1.png): the mean share of each part over the configurations' timed epochs."
        frame = pd.DataFrame(combined).drop(columns="flagged")
        sections.append(Section(f"Phase profile: {len(keys)} configurations", level=3, after=after, figures=pies,
                                markdown=f"{len(keys)} configurations in one table, one row each: its timed epochs "
                                         f"(per-epoch rows, and one table per configuration, up to "
                                         f"{MAX_GROUP_TABLES} configurations; past that they would not be read).",
                                tables=[Table("phase_profile", ["configuration"] + PROFILE_HEADERS,
                                              [[row["configuration"]] + _profile_cells(row) for row in combined],
                                              frame)]))
    return sections


def _with_telemetry(runs: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    return [{**run, **telemetry_numbers(run["doc"])} for run in runs]


def precision_sections(records: List[Dict[str, Any]]) -> List[Section]:
    if len({r["precision"] for r in records}) < 2:  # no group can hold two: skip keying thousands of runs
        return []
    groups = {key: runs for key, runs in compare.groups(records, PRECISION_KEYS).items()
              if len({r["precision"] for r in runs}) >= 2}
    if not groups:
        return []
    sections = [Section("Precision side by side", markdown=PRECISION_INTRO)]
    for index, (key, runs) in enumerate(sorted(groups.items()), start=1):
        runs = _with_telemetry(runs)
        frame = compare.precision_frame(runs)
        headers = ["precision", "runs (n)", "final train loss", "non-finite loss (runs; epochs)", "final top-1 [%]",
                   "best top-1 [%]", "epoch [s]", "peak allocated [MiB]", "peak NVML [MiB]", "power [W]",
                   "util.gpu [%]", "SM activity [%]", "energy/sample [mJ]"]
        body = [[r["precision"], r["runs"], number(r["final_train_loss_mean"], ".4f"),
                 f"{r['nonfinite_loss_runs']}" + (f" ({r['nonfinite_loss_epochs']})" if r["nonfinite_loss_runs"] else ""),
                 mean_std(r["final_top1_mean"], r["final_top1_std"], ".2f", 100), number(r["best_top1_mean"], ".2f", 100),
                 mean_std(r["epoch_s_mean"], r["epoch_s_std"], ".3f"), number(r["peak_allocated_bytes"], ".0f", 1 / MIB),
                 number(r["nvml_mem_peak_bytes"], ".0f", 1 / MIB), number(r["power_mean_w"], ".0f"),
                 number(r["util_gpu_mean"], ".1f"), number(r["sm_activity_mean"], ".1f"),
                 number(r["energy_per_sample_j"], ".3f", 1e3)] for r in frame.to_dict("records")]
        name = f"precision_curves_{index}.png"
        by_setting: Dict[str, List[Dict[str, Any]]] = {}
        for run in runs:
            by_setting.setdefault(run["precision"], []).append(run)
        title = f"Precision: {runs[0]['config_items'].get('workload.model', '')} ({runs[0]['sweep']})"
        sections.append(Section(title, level=3, tables=[Table("precision", headers, body, frame)],
                                after=f"Curves: {name}.",
                                figures=[Figure(name, lambda path, b=by_setting, t=title: precision_curves(b, path, t))]))
    return sections


def checkpointing_sections(records: List[Dict[str, Any]]) -> List[Section]:
    if len({r["activation_checkpointing"] for r in records}) < 2:  # nothing anywhere to compare
        return []
    sections = []
    for key, runs in sorted(compare.groups(records, CHECKPOINTING_KEYS).items()):
        if len({r["activation_checkpointing"] for r in runs}) < 2:  # nothing to compare: no frame to build
            continue
        frame = compare.checkpointing_frame(runs)
        if frame.empty:
            continue
        headers = ["per-device batch", "runs (without / with)", "peak without [MiB]", "peak with [MiB]", "saved",
                   "step without [ms]", "step with [ms]", "extra step", "MiB saved per extra ms",
                   "largest batch without", "largest batch with"]
        body = [[r["per_device_batch"], f"{r['runs_without']} / {r['runs_with']}",
                 number(r["peak_without_bytes"], ".0f", 1 / MIB), number(r["peak_with_bytes"], ".0f", 1 / MIB),
                 number(r["memory_saved_fraction"], ".1f", 100, " %"), number(r["step_without_s"], ".2f", 1e3),
                 number(r["step_with_s"], ".2f", 1e3), number(r["step_extra_fraction"], "+.1f", 100, " %"),
                 number(r["mib_saved_per_extra_ms"], ".1f"), number(r["largest_batch_without"], ".0f"),
                 number(r["largest_batch_with"], ".0f")] for r in frame.to_dict("records")]
        title = f"Activation checkpointing: {runs[0]['config_items'].get('workload.model', '')} ({runs[0]['sweep']})"
        sections.append(Section(title, markdown=CHECKPOINTING_INTRO,
                                tables=[Table("activation_checkpointing", headers, body, frame)]))
    return sections


def _best_line(best: Optional[Mapping[str, Any]]) -> str:
    if best is None:
        return "No GPU telemetry: no setting can be named closest to full use."
    what = "SM activity" if best["by"] == "sm_activity_mean" else "utilization.gpu"
    line = f"Closest to full use: **{best['setting']}** ({what} {best[best['by']]:.1f} %)."
    if best["short_window"]:
        line += (f" Its timed window ({best['timed_s']:.1f} s) is short: the window's edges (warm-up, evaluation) "
                 "weigh on the number; time more epochs to measure its steady state.")
    return line


def _window(row: Mapping[str, Any]) -> str:
    return number(row["timed_s"], ".1f") + (" (short)" if row["short_window"] else "")


def utilization_sections(records: List[Dict[str, Any]]) -> List[Section]:
    sections = []
    by_sweep: Dict[str, List[Dict[str, Any]]] = {}
    for record in records:
        by_sweep.setdefault(record["sweep"], []).append(record)
    for sweep, runs in sorted(by_sweep.items()):
        if len({r["config_key"] for r in runs}) < 2 or not any(r["doc"].get("telemetry", {}).get("status") == "ok"
                                                                for r in runs):
            continue
        runs = _with_telemetry(runs)
        frame = compare.utilization_frame(runs, setting_names(runs))
        # the baseline (by name, or as the configuration at every common value) first, the others by name
        frame = frame.sort_values("setting", key=lambda s: s.map(
            lambda setting: (not setting.startswith(("baseline", COMMON_VALUES)), natural_key(setting)))
        ).reset_index(drop=True)
        headers = ["setting", "runs (n)", "samples/s", "timed window [s]", "util.gpu [%]", "SM activity [%]"]
        body = [[r["setting"], r["runs"], mean_std(r["samples_per_s_mean"], r["samples_per_s_std"], ".0f"), _window(r),
                 number(r["util_gpu_mean"], ".1f"), number(r["sm_activity_mean"], ".1f")] for r in frame.to_dict("records")]
        sections.append(Section(f"GPU utilization per setting: {sweep}", markdown=UTILIZATION_INTRO,
                                tables=[Table("gpu_utilization", headers, body, frame)],
                                after=_best_line(compare.closest_to_full_use(frame))))
    return sections


def step_efficiency_sections(records: List[Dict[str, Any]]) -> List[Section]:
    """Precision, channels_last, compile modes and CUDA graphs side by side: step time, MFU, the verdict and what
    epoch 1 paid for compiling or capturing (issue 44; only where the runs differ in one of them)."""
    docs = [r["doc"] for r in records]
    if not differs_in_technique(docs):
        return []
    table = efficiency_table(docs, label_of=lambda doc: doc["identity"]["sweep"])
    body = [technique_cells(r) for r in table.to_dict("records")]
    intro = (MFU_INTRO + " First step extra: epoch 1's first step over the steady median step (compilation, "
             "capture, cuDNN tuning: paid once, and counted in a time to accuracy, whose clock starts before it); "
             "capture: the CUDA graph's own capture time." + na_lines(table))
    return [Section("Step efficiency by technique", markdown=intro,
                    tables=[Table("step_efficiency", TECHNIQUE_HEADERS, body, table)])]


def technique_sections(records: List[Dict[str, Any]]) -> List[Section]:
    return (step_efficiency_sections(records) + profile_sections(records) + precision_sections(records)
            + checkpointing_sections(records) + utilization_sections(records))


__all__ = ["technique_sections"]
