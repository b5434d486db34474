"""The quantize and dataloader preflights read the CIFAR-10 files they are given, as train's compose-time check
does (conf/data_on_disk.py): files that are there but cannot be read as CIFAR-10 (damaged, no read permission) and,
for quantize, a num_classes other than the data's are one line before the sweep is written, not a worker's
ValueError after it."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hpml.conf.data_on_disk import CIFAR10_FILES
from hpml.conf.schema import config_from_dict
from hpml.launcher.errors import one_line
from hpml.launcher.preflight import config_problems


def cifar10_folder(root: Path, classes: int = 10, damaged: bool = False) -> Path:
    """CIFAR-10's files in their real format (torchvision's pickles: uint8 images of 3 x 32 x 32 in rows, a list of
    labels; batches.meta's label_names), two images a batch; every file junk when damaged."""
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    for name in CIFAR10_FILES:
        content = {"label_names": [str(c) for c in range(classes)]} if name == "batches.meta" else \
            {"data": np.zeros((2, 3072), dtype=np.uint8), "labels": [0, 1]}
        (folder / name).write_bytes(b"junk" if damaged else pickle.dumps(content))
    return root


@pytest.mark.parametrize("preset", ["quantize", "dataloader", "train"])
def test_damaged_cifar10_files_are_one_line_before_launch(compose_values, tmp_path, preset):
    root = cifar10_folder(tmp_path / "data", damaged=True)
    overrides = [f"experiment=tiny/{preset}", "workload.dataset=cifar10", f"workload.data_root={root}"]
    [problem] = config_problems([config_from_dict(compose_values(overrides))])
    assert problem == (f"workload.data_root={root}: cifar-10-batches-py/batches.meta: not a CIFAR-10 python pickle "
                       "(UnpicklingError: pickle data was truncated); rewrite it, e.g. `hpml data digits --root DIR "
                       "--force`")


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


def write_batch(root: Path, name: str, content) -> None:
    (root / "cifar-10-batches-py" / name).write_bytes(pickle.dumps(content))


IMAGES = np.zeros((2, 3072), dtype=np.uint8)
# issue 33, by class: every file the run will read (the held-out batch too), its internal consistency, and each
# refusal naming the file
DAMAGE = [
    ("test_batch", b"not a pickle", "cifar-10-batches-py/test_batch: not a CIFAR-10 python pickle (UnpicklingError"),
    ("data_batch_3", {"data": IMAGES, "labels": [0, 1, 2]}, "cifar-10-batches-py/data_batch_3: 2 images but 3 labels"),
    ("test_batch", {"data": np.zeros((2, 100), dtype=np.uint8), "labels": [0, 1]},
     "cifar-10-batches-py/test_batch: its 'data' holds 200 values, not 2 images of 3,072 (32 x 32 x 3)"),
    ("data_batch_1", {"data": IMAGES, "labels": [0, 10]},
     "cifar-10-batches-py/data_batch_1: label 10 is not one of the 10 classes of batches.meta"),
    ("data_batch_2", {"labels": [0, 1]}, "cifar-10-batches-py/data_batch_2: not a CIFAR-10 batch"),
    ("batches.meta", {"names": []}, "cifar-10-batches-py/batches.meta: no list of label_names"),
]


@pytest.mark.parametrize("preset", ["quantize", "dataloader", "train"])
@pytest.mark.parametrize("name, content, says", DAMAGE, ids=[d[2].split(": ", 1)[1][:30] for d in DAMAGE])
def test_every_file_the_run_reads_is_checked_and_named(compose_values, tmp_path, preset, name, content, says):
    root = cifar10_folder(tmp_path / "data")
    if isinstance(content, bytes):
        (root / "cifar-10-batches-py" / name).write_bytes(content)
    else:
        write_batch(root, name, content)
    overrides = [f"experiment=tiny/{preset}", "workload.dataset=cifar10", f"workload.data_root={root}"]
    [problem] = config_problems([config_from_dict(compose_values(overrides))])
    assert problem.startswith(f"workload.data_root={root}: {says}") and "\n" not in problem, problem


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_a_data_file_that_is_no_regular_file_is_one_line_and_never_blocks(tmp_path, kind):
    """A FIFO among the batches blocked the compose itself (even --dry-run never returned)."""
    root = cifar10_folder(tmp_path / "data")
    path = root / "cifar-10-batches-py" / "data_batch_2"
    path.unlink()
    os.mkfifo(path) if kind == "fifo" else path.mkdir()
    done = subprocess.run([sys.executable, "-m", "hpml.launcher.cli", "launch", "--dry-run", "experiment=tiny/train",
                           "workload.dataset=cifar10", f"workload.data_root={root}"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    what = "a FIFO (named pipe)" if kind == "fifo" else "a directory"
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [
        f"hpml: error: workload.data_root={root}: cifar-10-batches-py/data_batch_2: not a regular file ({what}); "
        "rewrite it, e.g. `hpml data digits --root DIR --force`"], done.stderr


@pytest.mark.parametrize("name, content, says", DAMAGE[:2], ids=["test_batch", "data_batch_3"])
def test_a_file_damaged_after_the_preflight_fails_the_workers_reader_naming_it(tmp_path, name, content, says):
    """What can only show up in the worker (the files changed after launch) names the file it was reading."""
    from hpml.workloads.common.cifar10 import DataFileError, local_cifar10

    root = cifar10_folder(tmp_path / "data")
    assert len(local_cifar10(str(root), None, train=False)) == 2  # the real reader takes the real format
    if isinstance(content, bytes):
        (root / "cifar-10-batches-py" / name).write_bytes(content)
    else:
        write_batch(root, name, content)
    with pytest.raises(DataFileError) as raised:
        local_cifar10(str(root), None, train=name == "data_batch_3")
        local_cifar10(str(root), None, train=False)
    assert str(raised.value).startswith(f"workload.data_root={root}: {says}")
    fifo = root / "cifar-10-batches-py" / "batches.meta"
    fifo.unlink()
    os.mkfifo(fifo)
    with pytest.raises(DataFileError, match="batches.meta: not a regular file"):
        local_cifar10(str(root), None)
