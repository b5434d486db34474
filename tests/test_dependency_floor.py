"""setup.cfg's lower bounds are versions the test suite has passed on (issue 31): for every declared dependency,
its bound is the release of the oldest recorded passing run, either this environment (which runs this very suite)
or the GPU machine's image (docs/results/dependency_floor/device_versions.txt, its suite's tail beside it)."""

from __future__ import annotations

import configparser
import importlib.metadata
import platform
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

REPO = Path(__file__).resolve().parent.parent
FLOOR = REPO / "docs" / "results" / "dependency_floor"


def declared() -> dict:
    parser = configparser.ConfigParser()
    parser.read(REPO / "setup.cfg")
    lines = parser["options"]["install_requires"].strip().splitlines()
    lines += [line for line in parser["options.extras_require"]["test"].strip().splitlines()
              if line.strip() and not line.strip().startswith("#")]
    requirements = [Requirement(line.strip()) for line in lines]
    return {r.name: next(Version(s.version) for s in r.specifier if s.operator == ">=") for r in requirements}


def recorded_device_versions() -> dict:
    versions = {}
    for line in (FLOOR / "device_versions.txt").read_text().splitlines():
        name, _, version = line.partition(" ")
        if version and version[0].isdigit() and name.replace("-", "").isalnum():
            versions[name] = Version(version)
    return versions


def same_release(bound: Version, version: Version) -> bool:
    """2.11 is the release of 2.11.0; 13.610 of 13.610.43: the bound names the tested version to its precision."""
    return version.release[:len(bound.release)] == bound.release


def test_every_lower_bound_is_the_oldest_passing_release():
    device = recorded_device_versions()
    assert "passed" in (FLOOR / "device_pytest_tail.txt").read_text()
    for name, bound in declared().items():
        tested = [Version(importlib.metadata.version(name))] + ([device[name]] if name in device else [])
        oldest = min(tested)
        assert same_release(bound, oldest) and bound <= oldest, (name, str(bound), [str(v) for v in tested])


def test_python_requires_is_the_oldest_python_it_ran_on():
    parser = configparser.ConfigParser()
    parser.read(REPO / "setup.cfg")
    bound = Version(parser["options"]["python_requires"].strip().removeprefix(">="))
    oldest = min(Version(platform.python_version()), recorded_device_versions()["python"])
    assert same_release(bound, oldest)
