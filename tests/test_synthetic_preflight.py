"""The synthetic workload's preflight: its worker builds workload.model with torchvision.models.get_model, so a name
that is not torchvision's (hpml's own included) or a model that cannot take the input size is one line before the
sweep is written, not a failed point after it."""

from __future__ import annotations

import pytest

from hpml.conf.schema import config_from_dict
from hpml.launcher.preflight import config_problems

TINY = "experiment=tiny/synthetic"


@pytest.mark.parametrize("override, problem", [
    ("workload.model=hpml_cnn", "workload.model='hpml_cnn': not a torchvision classification model (the synthetic "
                                "benchmark builds it with torchvision.models.get_model; e.g. resnet50, resnet18)"),
    ("workload.model=''", "workload.model='': not a torchvision classification model"),
    ("workload.model=" + "a" * 5000, "workload.model='aaaa"),
    ("workload.model=alexnet", "workload.image_size=32: alexnet cannot run on a 3x32x32 input"),
])
def test_a_model_the_worker_cannot_build_or_feed_is_one_line(compose_values, override, problem):
    [found] = config_problems([config_from_dict(compose_values([TINY, override, "workload.image_size=32"]))])
    assert found.startswith(problem) and len(found) < 400, found


def test_the_tiny_preset_passes(compose_values):
    assert config_problems([config_from_dict(compose_values([TINY]))]) == []
