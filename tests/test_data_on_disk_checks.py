"""The quantize and dataloader preflights read the CIFAR-10 files they are given, as train's compose-time check
does (conf/data_on_disk.py): files that are there but cannot be read as CIFAR-10 (damaged, no read permission) and,
for quantize, a num_classes other than the data's are one line before the sweep is written, not a worker's
ValueError after it."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from hpml.conf.data_on_disk import CIFAR10_FILES
from hpml.conf.schema import config_from_dict
from hpml.launcher.errors import one_line
from hpml.launcher.preflight import config_problems


def cifar10_folder(root: Path, classes: int = 10, damaged: bool = False) -> Path:
    """CIFAR-10's file names with a few labels each (what conf/data_on_disk.py reads), or junk when damaged."""
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    for name in CIFAR10_FILES:
        content = {"label_names": [str(c) for c in range(classes)]} if name == "batches.meta" else {"labels": [0, 1]}
        (folder / name).write_bytes(b"junk" if damaged else pickle.dumps(content))
    return root


@pytest.mark.parametrize("preset", ["quantize", "dataloader", "train"])
def test_damaged_cifar10_files_are_one_line_before_launch(compose_values, tmp_path, preset):
    root = cifar10_folder(tmp_path / "data", damaged=True)
    overrides = [f"experiment=tiny/{preset}", "workload.dataset=cifar10", f"workload.data_root={root}"]
    [problem] = config_problems([config_from_dict(compose_values(overrides))])
    assert problem == (f"workload.data_root={root}: the files under cifar-10-batches-py/ cannot be read as CIFAR-10's "
                       "python batches (no read permission, or damaged); rewrite them, e.g. `hpml data digits --root "
                       "DIR --force`")


def test_quantize_refuses_a_num_classes_the_data_set_does_not_have(compose_values, tmp_path):
    root = cifar10_folder(tmp_path / "data", classes=10)
    base = ["experiment=tiny/quantize", "workload.dataset=cifar10", f"workload.data_root={root}"]
    assert config_problems([config_from_dict(compose_values(base))]) == []
    assert config_problems([config_from_dict(compose_values(base + ["workload.num_classes=11"]))]) == [
        f"workload.num_classes=11: the data set at {root} has 10 classes; set workload.num_classes=10"]


def test_quantize_on_the_built_in_digits_has_their_10_classes(compose_values):
    with pytest.raises(Exception) as refused:
        config_from_dict(compose_values(["experiment=tiny/quantize", "workload.num_classes=11"]))
    assert one_line(refused.value) == ("workload.num_classes=11 is not allowed: 10 when workload.dataset=digits (the "
                                       "digits 0-9)")
