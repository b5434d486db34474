"""The time-to-accuracy sections: analysis.tta.tables' table as rounded Markdown/LaTeX cells (its frame, full
precision, is tta.csv), the two figures per configuration, and where two hardware types can be compared,
analysis.tta.compare's table (tta_hardware.csv) with its rule and verdicts. Formatting only."""

from __future__ import annotations

from typing import Any, Dict, List

import pandas as pd

from hpml.analysis.stats import OLYMPIC_MIN_RUNS, SAMPLE_DDOF, SPREAD_Z, differing_labels, natural_key
from hpml.analysis.tta import energy
from hpml.analysis.tta.compare import MIN_CONVERGED
from hpml.analysis.tta.plots import curves_png, spread_png
from hpml.report_kit.numbers import is_missing, number, row_mean_std
from hpml.report_kit.sections import Figure, Section, Table

TABLE = "tta"
ENERGY_TABLE = "tta_energy"
COMPARISON_TABLE = "tta_hardware"

# mlcommons/training_policies, CONTRIBUTING.md, "How to choose the number of submission runs (N) needed?"
# (its table of the MLPerf Training 3.1 reference convergence points, read at commit 01d9c262)
MLPERF_CONTEXT = (
    "Context: in MLPerf Training's reference convergence points (v3.1), the CoV of epochs to target is 0.000 "
    "(SSD, batch 256) to 0.088 (RNN-T, batch 512) for every benchmark but U-Net3D (0.179-0.219, which is why it "
    "takes 40 runs); ResNet-50: 0.031 at batch 1,632, 0.007 at batch 67,840 (mlcommons/training_policies, "
    "CONTRIBUTING.md, \"How to choose the number of submission runs (N) needed?\"). MLPerf scores image "
    "classification over 5 runs by the olympic mean (training_rules.adoc, \"Benchmark Results\").")

INTRO = (
    "Per configuration (the point's config without sweep, cluster, resource requests and the keys that only "
    "describe the hardware or its price; nodes and workers per node kept) and hardware (the result's first GPU "
    "model; cpu without one), kept apart by data path: host (a DataLoader, per-sample transforms on the CPU, a "
    "copy to the device per batch) or device (the split resident on the GPU, batches sliced and augmented there), "
    "as the result records it (measurements.data_placement; host for results without it). n: the runs with a "
    "target; converged: those whose validation top-1 reached it (k / n). TTA: wall-clock from the start of "
    "training to the first evaluation at or above the target, evaluation time included; \"w/o eval\": the same "
    "clock with the time spent evaluating left out. Over the k converged runs: mean ± sample std (ddof="
    f"{SAMPLE_DDOF}), CoV = std / mean (— for k < 2), median [min, max]. Olympic mean (MLPerf): the converged "
    "times without the fastest and the slowest; one non-converged run counts as the slowest and is dropped; "
    f"with more than one it is invalid (—), and undefined for n < {OLYMPIC_MIN_RUNS}. A run that never reached "
    "the target is not converged, never a time.\n\n" + MLPERF_CONTEXT)

HEADERS = ["hardware", "data path", "runs (n)", "converged", "TTA [s] mean ± std", "CoV", "TTA median [min, max] [s]",
           "olympic mean [s]", "TTA w/o eval [s] mean ± std", "CoV w/o eval", "olympic w/o eval [s]",
           "epochs to target mean ± std", "CoV epochs", "steps to target (mean)", "MFU (mean)", "bound"]




def _olympic(r: Dict[str, Any], key: str) -> str:
    return number(r[key], ".2f") if not is_missing(r[key]) else f"— ({r['olympic_status']})"


def _mfu(r: Dict[str, Any]) -> str:
    return "n/a" if is_missing(r["mfu_mean"]) else f"{100 * r['mfu_mean']:.1f} %"


def table_rows(rows: pd.DataFrame) -> List[List[Any]]:
    body = []
    for r in rows.to_dict("records"):
        median = ("—" if is_missing(r["tta_s_median"])
                  else f"{r['tta_s_median']:.2f} [{r['tta_s_min']:.2f}, {r['tta_s_max']:.2f}]")
        converged = f"{r['converged']}/{r['runs']} ({r['converged_fraction'] * 100:.0f} %)"
        body.append([r["hardware"], r["data_placement"], r["runs"], converged,
                     row_mean_std(r, "tta_s", ".2f", n_key="converged"), number(r["tta_s_cov"], ".4f"), median, _olympic(r, "tta_s_olympic"),
                     row_mean_std(r, "tta_train_s", ".2f", n_key="converged"), number(r["tta_train_s_cov"], ".4f"),
                     _olympic(r, "tta_train_s_olympic"), row_mean_std(r, "epochs", ".2f", n_key="converged"), number(r["epochs_cov"], ".4f"),
                     number(r["steps_mean"], ".1f"), _mfu(r), r["bound"] or "n/a"])
    return body


MEASURE_NAMES = {"tta_s": ("TTA (evaluation included)", "s"), "epochs": ("epochs to target", "epochs")}
# ASCII formulas: the headers and the text are also the LaTeX table's header and caption (report_kit.latex)
COMPARISON_HEADERS = ["data path", "target", "measure", "hardware A", "mean A (n)", "hardware B", "mean B (n)",
                      "difference A - B", "% of the slower", "threshold", "verdict"]
VERDICTS = {True: "exceeds the spread", False: "within the spread"}


def comparison_intro(rows: pd.DataFrame) -> str:
    """The rule, then one sentence per pair and measure saying which way it went (the numbers are in the table)."""
    rule = (f"Hardware difference vs spread, for the hardware rows with at least {MIN_CONVERGED} converged runs: "
            f"the difference of the means exceeds the spread when |mean_A - mean_B| > threshold = {SPREAD_Z:g} * "
            f"sqrt(s_A^2/n_A + s_B^2/n_B) (s: sample std, ddof={SAMPLE_DDOF}; n: the converged runs of each), "
            "an approximate 95 % interval of the difference of means, Welch-style (each side its own variance; the "
            f"normal quantile rounded to {SPREAD_Z:g}, so with few runs a difference near the threshold is "
            "borderline). % of the slower: |A - B| / the larger mean.")
    verdicts = [f"{r['hardware_a']} vs {r['hardware_b']} ({r['data_placement']} path), "
                f"{MEASURE_NAMES[r['measure']][0]}: {VERDICTS[bool(r['exceeds_spread'])]}."
                for r in rows.to_dict("records")]
    return "\n\n".join([rule, " ".join(verdicts)])


def comparison_rows(rows: pd.DataFrame) -> List[List[Any]]:
    body = []
    for r in rows.to_dict("records"):
        name, unit = MEASURE_NAMES[r["measure"]]
        body.append([r["data_placement"], f"{r['target'] * 100:g} %", name,
                     r["hardware_a"], f"{r['mean_a']:.2f} {unit} (n={r['n_a']})",
                     r["hardware_b"], f"{r['mean_b']:.2f} {unit} (n={r['n_b']})", f"{r['difference']:+.2f} {unit}",
                     f"{r['difference_share_of_slower'] * 100:.1f} %", f"{r['threshold']:.2f} {unit}",
                     VERDICTS[bool(r["exceeds_spread"])]])
    return body


def _figure_name(stem: str, index: int, count: int) -> str:
    return f"{stem}.png" if count == 1 else f"{stem}_{index}.png"


def _label_data_paths(members: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The figures draw one colour and one box per hardware: where a configuration's runs used both data paths,
    each hardware is named with its path so the figures never pool them either."""
    if len({run["data_placement"] for run in members}) < 2:
        return members
    return [{**run, "hardware": f"{run['hardware']} ({run['data_placement']})"} for run in members]


def _by_config(frame: pd.DataFrame) -> Dict[str, pd.DataFrame]:
    """Each configuration's rows, split once (a filter per configuration was quadratic in their number)."""
    if frame.empty:
        return {}
    return {key: rows.reset_index(drop=True) for key, rows in frame.groupby("config_key", sort=False)}


def tta_sections(runs: List[Dict[str, Any]], table: pd.DataFrame, comparison: pd.DataFrame,
                 energy_rows: pd.DataFrame | None = None) -> List[Section]:
    """The heading section, then one per configuration: its table (runs with a target) and its two figures, and
    after it, where two hardware types can be compared, the comparison (analysis.tta.compare)."""
    by_config: Dict[str, List[Dict[str, Any]]] = {}
    for run in runs:
        by_config.setdefault(run["config_key"], []).append(run)
    labels = differing_labels({key: members[0]["config_items"] for key, members in by_config.items()})
    sections = [Section("Time to accuracy", markdown=INTRO + "\n\n" + energy.NOTE)]
    table_of, comparison_of = _by_config(table), _by_config(comparison)
    energy_of = _by_config(energy_rows) if energy_rows is not None else {}
    for index, key in enumerate(sorted(by_config, key=lambda k: (natural_key(labels[k]), k)), start=1):
        members = by_config[key]
        targets = sorted({run["target"] for run in members if run["target"] is not None})
        goal = f" to {', '.join(f'{t * 100:g} %' for t in targets)} top-1" if targets else ", no target"
        title = f"Time to accuracy: {members[0]['model']}{goal} {labels[key]}".rstrip()
        untargeted = sum(run["target"] is None for run in members)
        text = f"{len(members)} run(s) with an evaluation record" + (
            f"; {untargeted} evaluated without a target: plotted, not tabulated" if untargeted else "") + "."
        rows = table_of.get(key)
        tables = [Table(TABLE, HEADERS, table_rows(rows), rows)] if rows is not None else []
        plotted = _label_data_paths(members)
        curves, spread = (_figure_name(stem, index, len(by_config)) for stem in ("tta_curves", "tta_spread"))
        drawn = [curves] + ([spread] if any(run["converged"] for run in members) else [])
        sections.append(Section(title, markdown=text, tables=tables, level=3, after=f"Figures: {', '.join(drawn)}.",
                                figures=[Figure(curves, lambda path, m=plotted, t=title: curves_png(m, path, t)),
                                         Figure(spread, lambda path, m=plotted, t=title: spread_png(m, path, t))]))
        if key in energy_of:
            sections.append(energy.energy_section(energy_of[key], title.removeprefix("Time to accuracy: "),
                                                   ENERGY_TABLE))
        pairs = comparison_of.get(key)
        if pairs is not None:
            heading = f"Hardware difference vs spread: {members[0]['model']}{goal} {labels[key]}".rstrip()
            sections.append(Section(heading, markdown=comparison_intro(pairs), level=4, tables=[
                Table(COMPARISON_TABLE, COMPARISON_HEADERS, comparison_rows(pairs), pairs)]))
    return sections
