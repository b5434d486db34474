"""Point configs written by an earlier hpml, brought to today's schema before they are read again (`hpml resume`).

A point's config.yaml is the resolved config its launch wrote; `hpml resume` reruns a point from it. When a key
changes type or meaning, a config written before is refused by config_from_dict, one line naming the key, and the
point could not be resumed. `migrated(values)` returns the values in today's schema and one line per change; values
already current come back unchanged, with no line. It changes only what it recognizes (a config of another shape
is left to config_from_dict to refuse, with its own line).

Migrations, oldest first:
- result schema version 2 (issue 44, commit 2d194b9): `workload.compile` of the train workload was a bool and is
  now torch.compile's mode (conf/workload/train.py CompileMode). `false` ran the model eager: `none`. `true` ran
  `torch.compile(model)`, torch's default mode: `default`. The same change added `workload.cuda_graphs` (a config
  without it never captured a graph: `false`) and `workload.bound_probe_steps` (today's launch default from
  conf/workload/train.yaml: the probe runs after training, outside the timed epochs, and gives a GPU result its
  busy share).

Imports neither Hydra nor OmegaConf, like the schemas.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any, List, Tuple

import yaml

TRAIN_YAML = Path(__file__).resolve().parent / "workload" / "train.yaml"
COMPILE_OF_BOOL = {False: "none", True: "default"}  # what `compile: false` / `compile: true` ran before 2d194b9


@functools.lru_cache(maxsize=None)
def train_default(key: str) -> Any:
    """The value a launch of today writes for workload.<key> when nothing overrides it (conf/workload/train.yaml)."""
    return yaml.safe_load(TRAIN_YAML.read_text())["workload"][key]


def migrated(values: Any) -> Tuple[Any, List[str]]:
    """(the values in today's schema, one line per key changed: "workload.compile: false -> none (...)").
    The values given are not modified; without a change, they come back as they are."""
    workload = values.get("workload") if isinstance(values, dict) else None
    if not isinstance(workload, dict) or workload.get("name") != "train" or type(workload.get("compile")) is not bool:
        return values, []
    out = copy.deepcopy(values)
    new = out["workload"]
    why = "written before result schema 2 made it a mode name"
    old = new["compile"]
    new["compile"] = COMPILE_OF_BOOL[old]
    lines = [f"workload.compile: {str(old).lower()} -> {new['compile']} ({why})"]
    for key, value, reason in (("cuda_graphs", False, "added by schema 2; before it no step was captured"),
                               ("bound_probe_steps", train_default("bound_probe_steps"),
                                "added by schema 2; today's launch default")):
        if key not in new:
            new[key] = value
            lines.append(f"workload.{key}: (absent) -> {str(value).lower()} ({reason})")
    return out, lines

