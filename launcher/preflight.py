"""Checks made before anything is submitted: each problem is one line that says what to change.

What to check is each workload's business (its schema's preflight_problems hook, conf/workload_contract.py):
this module names no workload.
"""

from __future__ import annotations

from typing import List, Sequence

from conf.schema import HpmlConfig


def config_problems(configs: Sequence[HpmlConfig]) -> List[str]:
    """Problems of the points' values that the schema alone cannot see, each reported once."""
    problems: List[str] = []
    for config in configs:
        problems.extend(config.workload.preflight_problems())
    return list(dict.fromkeys(problems))
