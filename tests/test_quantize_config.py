"""The quantize workload's config: the presets compose, a bad value of every key is refused in one line that names
the key (before anything is written, through the real `hpml launch`), and the preflight reads workload.model_path
the way `hpml evaluate` does: a model.pt of another model is refused, one of hpml_cnn is quantized with its batch
norm folded."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from hpml.conf.schema import config_from_dict
from hpml.conf.workload.quantize import QuantDataset
from hpml.contract.saved_model import SAVED_MODEL_FORMAT
from hpml.launcher.errors import one_line
from hpml.models.small_cnn import SmallCNN
from hpml.workloads.quantize.float_model import loaded
from hpml.workloads.quantize.plan import build_plan

TINY = "experiment=tiny/quantize"


def test_the_presets_compose_to_one_cpu_worker(compose_values):
    digits = config_from_dict(compose_values(["experiment=quantization_digits"]))
    assert digits.workload.dataset == QuantDataset.cifar10 and digits.workload.model == "hw5_cnn"
    assert digits.resources.world_size == 1 and digits.resources.gpus_per_node == 0
    tiny = config_from_dict(compose_values([TINY])).workload
    assert tiny.dataset == QuantDataset.digits and tiny.data_root is None and tiny.torch_ao


@pytest.mark.parametrize("override, message", [
    ("workload.model=resnet18", "workload.model='resnet18' is not allowed: one of hw5_cnn, hpml_cnn"),
    ("workload.num_classes=1", "workload.num_classes=1 is not allowed: an integer from 2 to 100,000"),
    ("workload.dataset=imagenet", "workload.dataset: Invalid value 'imagenet', expected one of [cifar10, digits, fashion_mnist, mnist]"),
    ("workload.data_root=/data", "workload.data_root='/data' is not allowed: null when workload.dataset=digits"),
    ("workload.dataset=cifar10", "workload.data_root=None is not allowed: a directory holding the data set when "
                                    "workload.dataset=cifar10 (cifar-10-batches-py/"),
    ("workload.model_path=''", "workload.model_path='' is not allowed: a model.pt kept by the train workload"),
    ("workload.epochs=0", "workload.epochs=0 is not allowed: an integer >= 1"),
    ("workload.batch_size=0", "workload.batch_size=0 is not allowed: an integer >= 1"),
    ("workload.lr=0", "workload.lr=0.0 is not allowed: a number > 0"),
    ("workload.momentum=1", "workload.momentum=1.0 is not allowed: a number in [0, 1)"),
    ("workload.weight_decay=-1", "workload.weight_decay=-1.0 is not allowed: a number >= 0"),
    ("workload.calibration_samples=0", "workload.calibration_samples=0 is not allowed: an integer >= 1"),
    ("workload.scale_method=mean", "workload.scale_method: Invalid value 'mean', expected one of [maxabs, sigma]"),
    ("workload.sigma_k=0", "workload.sigma_k=0.0 is not allowed: a number in (0, 100]"),
    ("workload.power_of_two=maybe", "workload.power_of_two: Value 'maybe' is not a valid bool"),
    ("workload.weight_granularity=per_row", "workload.weight_granularity: Invalid value 'per_row', expected one of "
                                            "[per_tensor, per_channel]"),
    ("workload.requantize=double", "workload.requantize: Invalid value 'double', expected one of "
                                   "[fixed_point, float]"),
    ("workload.histogram_bins=1", "workload.histogram_bins=1 is not allowed: an integer from 2 to 1000"),
    ("workload.eval_batch_size=0", "workload.eval_batch_size=0 is not allowed: an integer >= 1"),
    ("workload.timing_warmup=-1", "workload.timing_warmup=-1 is not allowed: an integer >= 0"),
    ("workload.timing_repetitions=0", "workload.timing_repetitions=0 is not allowed: an integer >= 1"),
    ("workload.torch_ao=perhaps", "workload.torch_ao: Value 'perhaps' is not a valid bool"),
    ("workload.torch_ao_engine=tpu", "workload.torch_ao_engine: Invalid value 'tpu', expected one of "
                                     "[auto, x86, fbgemm, qnnpack, onednn]"),
    ("workload.device=cuda", "workload.device='cuda' is not allowed: cpu (or auto with resources.gpus_per_node=0)"),
    ("resources.workers_per_node=2", "resources.workers_per_node=2 is not allowed: 1 on 1 node"),
])
def test_a_bad_value_of_every_key_is_refused_naming_it(compose_values, override, message):
    with pytest.raises(Exception) as refused:
        config_from_dict(compose_values([TINY, override]))
    assert one_line(refused.value).startswith(message), one_line(refused.value)


@pytest.mark.parametrize("override, expected", [
    ("workload.sigma_k=-3", "hpml: error: workload.sigma_k=-3.0 is not allowed: a number in (0, 100]"),
    ("workload.scale_method=kl", "hpml: error: workload.scale_method: Invalid value 'kl', expected one of "
                                 "[maxabs, sigma]"),
    ("workload.model_path=/nonexistent/model.pt", "hpml: error: workload.model_path=/nonexistent/model.pt: no such "
                                                  "file (a points/<n>/model.pt of a train run)"),
])
def test_a_bad_override_is_one_line_before_anything_is_written(hpml, tmp_path, override, expected):
    done = hpml("launch", TINY, override)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(expected), done.stderr
    assert not (tmp_path / "sweeps").exists()


def saved_hpml_cnn(path: Path) -> Path:
    """A model.pt in the train workload's format (contract/saved_model.py): hpml_cnn, batch norm statistics that
    are not the identity."""
    torch.manual_seed(0)
    model = SmallCNN(10)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                module.running_mean.uniform_(-0.3, 0.3)
                module.running_var.uniform_(0.5, 2.0)
    torch.save({"format": SAVED_MODEL_FORMAT, "state_dict": model.state_dict(),
                "model": {"name": "hpml_cnn", "num_classes": 10, "image_size": 32, "cifar_stem": False},
                "classes": [str(d) for d in range(10)],
                "normalize": {"mean": [0.5, 0.5, 0.5], "std": [0.25, 0.25, 0.25]}, "hardware": "cpu"}, path)
    return path


def test_a_saved_model_of_another_model_is_refused_by_the_preflight(compose_values, tmp_path):
    path = saved_hpml_cnn(tmp_path / "model.pt")
    cfg = config_from_dict(compose_values([TINY, f"workload.model_path={path}"])).workload
    assert cfg.preflight_problems() == [
        f"workload.model_path={path} holds hpml_cnn with 10 classes; set workload.model=hpml_cnn "
        "workload.num_classes=10 (one of hw5_cnn, hpml_cnn)"]
    matching = config_from_dict(compose_values([TINY, f"workload.model_path={path}", "workload.model=hpml_cnn"]))
    assert matching.workload.preflight_problems() == []


def test_a_saved_hpml_cnn_is_loaded_with_its_normalization_and_read_as_a_chain(tmp_path):
    fm = loaded(str(saved_hpml_cnn(tmp_path / "model.pt")))
    assert fm.source == "loaded" and fm.mean == [0.5, 0.5, 0.5] and fm.record["name"] == "hpml_cnn"
    plan = build_plan(fm.model, torch.randn(2, 3, 32, 32))  # batch norm folded, checked against the model
    assert [layer.name for layer in plan.layers] == ["conv1", "conv2", "conv3", "fc1"]
