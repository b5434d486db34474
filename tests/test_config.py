"""Config composition: every preset composes and validates; bad overrides fail with one clear line."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpml.conf.schema import HpmlConfig, config_from_dict
from hpml.conf.validation import ConfigValueError
from hpml.conf.workload_contract import Scaling
from tests.conftest import GROSS, timed_against

EXPERIMENTS = Path(__file__).resolve().parent.parent / "hpml" / "conf" / "experiment"
PRESETS = sorted(p.relative_to(EXPERIMENTS).with_suffix("").as_posix() for p in EXPERIMENTS.rglob("*.yaml"))


def test_defaults_compose_to_a_valid_config(compose_values):
    config = config_from_dict(compose_values())
    assert isinstance(config, HpmlConfig)
    assert config.cluster.kind.value == "local"
    assert config.workload.name == "train" and config.workload.model == "resnet18"
    assert config.workload.image_size == 32  # CIFAR-shaped input by default


@pytest.mark.parametrize("preset", PRESETS)
def test_every_experiment_preset_composes(compose_values, preset):
    values = compose_values([f"experiment={preset}"])
    config = config_from_dict(values)
    # every preset names its sweeps after itself (tiny/train: tiny_train), not after its workload
    assert config.sweep.name == preset.replace("/", "_")


def test_quickstart_is_weak_scaling_over_one_and_two_workers(compose_values):
    values = compose_values(["experiment=quickstart"])
    assert values["sweep"]["name"] == "quickstart"
    # what the README says it runs (test_local_launch.py launches it on fewer images)
    assert (values["workload"]["model"], values["workload"]["synthetic_samples"], values["workload"]["epochs"]) == (
        "resnet18", 512, 3)
    assert config_from_dict(values).workload.scaling == Scaling.weak


def test_config_from_dict_rejects_unknown_keys(compose_values):
    values = compose_values()
    values["workload"]["lrr"] = 0.1
    with pytest.raises(ConfigValueError, match="unknown key 'workload.lrr'"):
        config_from_dict(values)


@pytest.mark.parametrize("key, value, message", [
    ("resources.nodes", 0, "resources.nodes=0 is not allowed: an integer >= 1"),
    ("workload.epochs", 1, "workload.epochs=1 is not allowed"),
    ("resources.workers_per_node", 4, "at most resources.gpus_per_node=2"),
    ("cluster.poll_s", 1e12, "cluster.poll_s=1000000000000.0 is not allowed: a number from 0.1 to 600 (seconds)"),
    ("cluster.poll_s", 0.01, "cluster.poll_s=0.01 is not allowed: a number from 0.1 to 600 (seconds)"),
    ("cluster.max_requeues", -1, "cluster.max_requeues=-1 is not allowed: an integer from 0 to 100"),
    ("cluster.max_requeues", 1000, "cluster.max_requeues=1000 is not allowed: an integer from 0 to 100"),
    ("resources.time_min", 10**12, "resources.time_min=1000000000000 is not allowed: an integer from 1 to 525600 "
                                   "(minutes: a year at most)"),
    # SGD's own ValueError once the point had started (its folder written)
    ("workload.momentum", -1.0, "workload.momentum=-1.0 is not allowed: a number >= 0 and < 1"),
    ("workload.momentum", 1.0, "workload.momentum=1.0 is not allowed: a number >= 0 and < 1"),
    ("workload.weight_decay", -1.0, "workload.weight_decay=-1.0 is not allowed: a number >= 0"),
])
def test_schema_checks_name_the_field(compose_values, key, value, message):
    values = compose_values(["resources.gpus_per_node=2"] if "workers" in key else [])
    section, field = key.split(".")
    values[section][field] = value
    with pytest.raises(ConfigValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        config_from_dict(values)


def test_strong_scaling_needs_a_global_batch_divisible_by_the_workers(compose_values):
    values = compose_values(["workload.scaling=strong", "workload.batch_size=30",
                             "resources.workers_per_node=4"])
    with pytest.raises(ConfigValueError, match="multiple of the world size 4"):
        config_from_dict(values)


@pytest.mark.parametrize("override, expected", [
    ("workload.lrr=0.1",
     "hpml: error: unknown key 'workload.lrr'; allowed keys: name, device, backend, model,"),
    ("workload.backend=ncl", "hpml: error: workload.backend: Invalid value 'ncl', expected one of [auto, gloo, nccl]"),
    ("workload.epochs=abc", "hpml: error: workload.epochs: Value 'abc' of type 'str' could not be converted to Integer"),
    ("workload=nope", "hpml: error: no config 'workload/nope'; available options: "),
    ("resources.nodes=0", "hpml: error: resources.nodes=0 is not allowed: an integer >= 1"),
    ("workload.model=resnet19", "hpml: error: workload.model=resnet19: neither one of hpml's models (hpml_cnn, "
     "cifar_resnet8, cifar_resnet20, cifar_resnet32, cifar_resnet44, cifar_resnet56, cifar_resnet110) nor a torchvision "
     "classification model"),
    ("workload.dataset=cifar10", "hpml: error: workload.data_root=None is not allowed"),
])
def test_bad_override_fails_fast_with_one_line_and_submits_nothing(hpml, tmp_path, override, expected):
    done, composed, ratios = timed_against(lambda: hpml("launch", "-m", "resources.workers_per_node=1,2", override),
                                           lambda: hpml("launch", "--cfg", "job", "resources.workers_per_node=2"))
    assert composed.returncode == 0, composed.stderr
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(expected), lines[0]
    # refused as fast as the configuration is composed (both a Python start, measured one after the other): a
    # refusal that came after planning, probing or starting a point would take several times as long
    assert min(ratios) < GROSS, ratios
    assert not list(tmp_path.glob("sweeps/*/manifest.json"))  # nothing planned was kept or submitted
    assert not list(tmp_path.glob("sweeps/*/points/*/config.yaml"))


def test_cfg_job_prints_the_composed_config_without_launching(hpml, tmp_path):
    done = hpml("launch", "--cfg", "job", "workload.lr=0.5")
    assert done.returncode == 0, done.stderr
    assert "lr: 0.5" in done.stdout
    assert not (tmp_path / "sweeps").exists() or not list((tmp_path / "sweeps").rglob("config.yaml"))


def test_dry_run_lists_every_checked_point_and_writes_nothing(hpml, tmp_path):
    done = hpml("launch", "--dry-run", "workload.batch_size=8,16", "resources.workers_per_node=1,2")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert "4 point(s)" in lines[0] and "dry run: nothing written, nothing submitted" in lines[0]
    points = lines[1:]
    assert [line.split()[0] for line in points] == ["0", "1", "2", "3"]
    assert sum("workload.batch_size=16" in line and "resources.workers_per_node=2" in line for line in points) == 1
    assert not (tmp_path / "sweeps").exists()


def test_dry_run_still_rejects_a_bad_point(hpml, tmp_path):
    done = hpml("launch", "--dry-run", "workload.epochs=3,abc")
    assert done.returncode == 2
    assert done.stderr.strip().startswith("hpml: error: workload.epochs: Value 'abc'")
    assert not (tmp_path / "sweeps").exists()


@pytest.mark.parametrize("overrides, problem", [
    # each failed in the worker after its start-up: pooling too small, ViT's fixed size, a stem only ResNets have
    (["workload.model=alexnet", "workload.image_size=32"],
     "workload.image_size=32: alexnet cannot run on a 3x32x32 input (Given input size: (256x1x1)."),
    (["workload.model=vit_b_16", "workload.image_size=64"],
     "workload.image_size=64: vit_b_16 cannot run on a 3x64x64 input (Wrong image height! Expected 224 but got 64!)"),
    (["workload.model=hpml_cnn", "workload.cifar_stem=true"],
     "workload.model=hpml_cnn cannot be built with these keys (workload.cifar_stem=true needs a torchvision ResNet"),
    (["workload.model=resnet18", "workload.image_size=32"], None),
    (["workload.model=resnet18", "workload.image_size=32", "workload.cifar_stem=true"], None),
])
def test_the_preflight_asks_the_model_whether_it_takes_the_images(compose_values, overrides, problem):
    problems = config_from_dict(compose_values(["experiment=quickstart", *overrides])).workload.preflight_problems()
    if problem is None:
        assert problems == []
    else:
        assert len(problems) == 1 and problems[0].startswith(problem), problems


def test_a_model_name_of_thousands_of_characters_is_cut_in_its_line(compose_values):
    from hpml.conf.torchvision_models import model_problem

    problem = model_problem("x" * 5000)
    assert problem.startswith("workload.model='" + "x" * 79 + "...(5002 characters): neither one of hpml's models")
    assert model_problem("resnet18") is None and model_problem("nope").startswith("workload.model=nope: neither")
