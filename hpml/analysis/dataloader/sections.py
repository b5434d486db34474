"""The data-loader study's report sections: per group, the settings table, the answer to "is the default optimal?"
and the host's load; one figure of samples/s against num_workers. Formatting only: the numbers are
analysis.dataloader.tables'. Files: dataloader.csv (and .tex), dataloader_workers.png.
"""

from __future__ import annotations

import math
from typing import Any, List, Mapping

import pandas as pd

from hpml.analysis.dataloader.plots import workers_plot
from hpml.analysis.dataloader.runs import DEVICE
from hpml.analysis.dataloader.tables import verdict
from hpml.analysis.stats import differing_labels
from hpml.report_kit.numbers import is_missing
from hpml.report_kit.sections import Figure, Section, Table

IN_TITLE = ("workload.dataset", "hardware", "cpus")  # group items the section's title names already
HEADERS = ["data path", "num_workers", "pin_memory", "persistent_workers", "prefetch_factor",
           "epoch [s] (mean ± std, n)", "samples/s (mean ± std)", "speedup vs default", "first batch [ms] (mean)",
           "set-up [s]", "note"]

METHOD = ("Each point iterates the training set as training would: read and decode every image, random crop + flip + "
          "ToTensor + Normalize, batches of {batch}, each batch copied to the device (non_blocking), one synchronize "
          "at the epoch's end; {samples} samples per epoch. Epoch 1 is warm-up; epoch time: mean ± sample std "
          "(ddof=1) over the timed epochs of every run of the setting (n); samples/s: samples / time per epoch, "
          "mean ± std over the same epochs; speedup vs default = the default's mean epoch time / the setting's. "
          "The default is PyTorch's DataLoader defaults (num_workers=0, pin_memory=False, persistent_workers=False, "
          "no prefetch); prefetch_factor is shown as it ran (PyTorch's 2 when workers were given none). First "
          "batch: from the epoch's start to the first batch (starting the worker processes, unless persistent). "
          "Set-up: building the data set once before epoch 1 (the device path decodes the whole split then).")


def setting_label(row: Mapping[str, Any]) -> str:
    """A setting in words: "device path", "0 workers", "4 workers, pin_memory, persistent, prefetch 4"."""
    if row["placement"] == DEVICE:
        return "device path"
    workers = int(row["workers"])
    parts = [f"{workers} worker{'s' if workers != 1 else ''}"]
    parts += ["pin_memory"] if row["pin_memory"] else []
    parts += ["persistent"] if row["persistent_workers"] else []
    parts += [f"prefetch {int(row['prefetch_factor'])}"] if not is_missing(row["prefetch_factor"]) else []
    return ", ".join(parts)


def _cell(value: Any) -> str:
    return "–" if is_missing(value) else str(value)


def display_row(row: Mapping[str, Any]) -> List[str]:
    notes = ["default"] * bool(row["default"]) + ["fastest"] * bool(row["fastest"])
    first_batch = row["first_batch_mean_s"]
    return [row["placement"], _cell(row["workers"]), _cell(row["pin_memory"]), _cell(row["persistent_workers"]),
            _cell(row["prefetch_factor"]),
            f"{row['epoch_time_mean_s']:.3f} ± {row['epoch_time_std_s']:.3f} (n={row['n']})",
            f"{row['samples_per_s_mean']:,.0f} ± {row['samples_per_s_std']:,.0f}",
            "–" if math.isnan(row["speedup_vs_default"]) else f"{row['speedup_vs_default']:.2f}x",
            "–" if math.isnan(first_batch) else f"{first_batch * 1e3:.1f}", f"{row['setup_mean_s']:.2f}",
            ", ".join(notes)]


def load_note(records: List[Mapping[str, Any]]) -> str:
    loads = [r[key] for r in records for key in ("load_before", "load_after")]
    return (f"Host: {records[0]['cpus']} usable CPUs; 1-minute load average {min(loads):.2f} to {max(loads):.2f} "
            "(read before and after each point's epochs). A load above what the study itself runs is other "
            "processes' work, and it is inside these times.")


def group_section(table: pd.DataFrame, records: List[Mapping[str, Any]], differs: str) -> Section:
    first = table.iloc[0]
    title = (f"{first['sweep']} · data loader: {first['dataset']}, {first['hardware']}, {first['cpus']} CPUs"
             + (f" ({differs})" if differs else ""))
    method = METHOD.format(batch=first["batch_size"], samples=first["samples_per_epoch"])
    rows = [display_row(row) for row in table.to_dict("records")]
    return Section(title, markdown=method + "\n\n" + load_note(records),
                   tables=[Table("dataloader", HEADERS, rows, table.drop(columns=["group"]))],
                   after=verdict(table, setting_label))


def dataloader_sections(tables: List[pd.DataFrame], records: List[Mapping[str, Any]]) -> List[Section]:
    """tables: analysis.dataloader.tables.dataloader_tables(records); [] when there is none."""
    if not tables:
        return []
    items = {r["group"]: {key: value for key, value in r["group_items"].items() if key not in IN_TITLE}
             for r in records}
    labels = differing_labels(items)
    sections = []
    for table in tables:
        group = table.iloc[0]["group"]
        mine = [r for r in records if r["group"] == group and r["sweep"] == table.iloc[0]["sweep"]]
        sections.append(group_section(table, mine, labels[group]))
    sections[0].figures.append(Figure("dataloader_workers.png", lambda path: workers_plot(tables, path)))
    return sections
