"""Evidence whose labels agree with its data (issue 32, item 5): every committed result under docs/results, packed
or not, ran on the GPU that its folder and its sweep's name say (h100, h200), and a result whose labels name no
GPU family names none. Read from the archives themselves (tools/pack_sweeps.py), result by result."""

from __future__ import annotations

import json
import re
import tarfile
from pathlib import Path
from typing import Iterator, Set, Tuple

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "docs" / "results"
FAMILY = re.compile(r"h(100|200)", re.IGNORECASE)


def committed_results() -> Iterator[Tuple[str, dict]]:
    """(where: archive or folder and member, result) of every committed result.json, packed or not."""
    for archive in sorted(RESULTS.rglob("*.tgz")) + sorted(RESULTS.rglob("*.tar.gz")):
        with tarfile.open(archive) as tar:
            for member in tar.getmembers():
                if member.isfile() and member.name.endswith("result.json") and "/attempts/" not in member.name:
                    yield f"{archive.relative_to(RESULTS)}:{member.name}", json.load(tar.extractfile(member))
    for path in sorted(RESULTS.rglob("result.json")):
        if "attempts" not in path.parts:
            yield str(path.relative_to(RESULTS)), json.loads(path.read_text())


def named(text: str) -> Set[str]:
    return {f"H{match}" for match in FAMILY.findall(text)}


def recorded(result: dict) -> Set[str]:
    return {f"H{match}" for gpu in result.get("environment", {}).get("gpus") or [] for match in FAMILY.findall(gpu)}


def test_every_committed_result_ran_on_the_gpu_its_labels_name():
    checked, wrong = 0, []
    for where, result in committed_results():
        sweep = result.get("identity", {}).get("sweep") or ""
        labels = named(where) | named(sweep)
        if not labels:
            continue
        checked += 1
        if labels != recorded(result):
            wrong.append(f"{where}: labelled {sorted(labels)} (sweep {sweep!r}), ran on "
                         f"{result.get('environment', {}).get('gpus')}")
    assert checked > 300  # the packed archives are really read (345 results name a GPU family)
    assert wrong == [], "\n".join(wrong[:20])


def test_a_label_that_disagrees_is_found():
    """The check can fail: an H100 result under a name that says h200."""
    result = {"identity": {"sweep": "precision_h200"}, "environment": {"gpus": ["NVIDIA H100 80GB HBM3"]}}
    assert named("training_techniques/sweeps.tgz:x") | named(result["identity"]["sweep"]) != recorded(result)
