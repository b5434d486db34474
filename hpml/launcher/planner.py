"""Planning a launch: every point's config is composed, validated and turned into a JobSpec before
anything is written or submitted, so a bad value in any point stops the launch with nothing to undo.

Every launch is a Hydra multirun (conf/config.yaml sets hydra.mode=MULTIRUN): hpml's sweeper
(hydra_plugins/hpml_sweeper) hands each point to the active Plan; a launch without sweep values is
a sweep of one point.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import yaml

from hpml.conf.schema import HpmlConfig, config_from_dict
from hpml.contract.sweep_layout import CONFIG_FILE, point_dir
from hpml.launcher.backends import check_config
from hpml.launcher.jobspec import JobSpec, jobspec_of


@dataclass
class PlannedPoint:
    spec: JobSpec
    config: HpmlConfig
    values: Dict[str, Any]  # the resolved config, written to the point's config.yaml
    sweep_dir: Path


class Plan:
    """The points of one `hpml launch`."""

    def __init__(self) -> None:
        self.points: List[PlannedPoint] = []

    def add(self, values: Dict[str, Any], point: int, sweep_dir: Path, overrides: Sequence[str]) -> None:
        values["sweep"]["dir"] = str(sweep_dir)  # the directory the point really lives in
        config = config_from_dict(values)  # runs every __post_init__ check
        check_config(config)  # and the keys that depend on the backend
        folder = point_dir(sweep_dir, point)
        spec = jobspec_of(config, point, str(folder), list(overrides))
        self.points.append(PlannedPoint(spec=spec, config=config, values=values, sweep_dir=sweep_dir))

    def write_configs(self) -> None:
        for planned in self.points:
            folder = Path(planned.spec.point_dir)
            folder.mkdir(parents=True, exist_ok=True)
            text = yaml.dump(planned.values, Dumper=yaml.CSafeDumper, sort_keys=False)
            (folder / CONFIG_FILE).write_text(text)


_active: Optional[Plan] = None


def start_plan() -> Plan:
    global _active
    _active = Plan()
    return _active


def active_plan() -> Plan:
    if _active is None:
        raise RuntimeError("no launch is being planned (start_plan() was not called)")
    return _active
