"""How many times a launch composes the config (issue 41: each composition is about 0.4 s of CPU a launch), and the
refusal of hydra.mode that lets the launch skip Hydra's composition for reading it (launcher/launch.py)."""

from __future__ import annotations

import pytest
from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra._internal.hydra import Hydra

from tests.conftest import hpml_here


@pytest.fixture
def compositions(monkeypatch):
    """Counts Hydra's real compositions (the method still runs: a spy, not a stand-in)."""
    count = {"n": 0}
    real = ConfigLoaderImpl.load_configuration

    def counted(self, *args, **kwargs):
        count["n"] += 1
        return real(self, *args, **kwargs)

    monkeypatch.setattr(ConfigLoaderImpl, "load_configuration", counted)
    return count


def test_a_one_point_launch_composes_twice_the_multiruns_config_and_the_points(tmp_path, compositions):
    done = hpml_here(["launch", "experiment=tiny/train", "--dry-run"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "1 point(s)" in done.stdout + done.stderr
    assert compositions["n"] == 2  # Hydra's get_mode composed a third time, only to read hydra.mode
    assert Hydra.get_mode.__name__ == "get_mode"  # Hydra's own again after the launch


@pytest.mark.parametrize("override", ["hydra.mode=RUN", "hydra.mode=MULTIRUN", "+hydra.mode=RUN"])
def test_hydra_mode_is_refused_in_one_line_before_anything_is_written(tmp_path, override):
    done = hpml_here(["launch", "experiment=tiny/train", override], cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "hydra.mode=" in lines[0] and "is not allowed: every hpml launch is a multirun" in lines[0]
    assert not (tmp_path / "sweeps").exists()
