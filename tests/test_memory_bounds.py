"""Sizes that decide how much memory a workload allocates have upper bounds (contract/limits.py): a typo such as 1e12
classes or a 1 TiB message is one line naming the key at compose time, not an out-of-memory failure minutes into a
sweep that was already written (allreduce's max_bytes=2**40 ran 97 s on a 2-core VM before it failed)."""

from __future__ import annotations

import pytest

from hpml.conf.schema import config_from_dict
from hpml.contract.limits import MAX_BUFFER_BYTES, MAX_CLASSES
from hpml.launcher.errors import one_line

TIB = 2 ** 40
INPUT_BATCH = "workload.batch_size x 3 x workload.image_size^2 x 4 bytes="
WITHIN = "stays within 64 GiB"


@pytest.mark.parametrize("preset, override, message", [
    ("quantize", "workload.num_classes=100001", "workload.num_classes=100001 is not allowed: an integer from 2 to "
                                                "100,000"),
    ("paleo", "workload.num_classes=1000000000000", "workload.num_classes=1000000000000 is not allowed: an integer "
                                                     "from 2 to 100,000"),
    ("synthetic", "workload.num_classes=1000000000000", "workload.num_classes=1000000000000 is not allowed"),
    ("paleo", "workload.image_size=1000000000000", INPUT_BATCH),
    ("paleo", "workload.batch_size=1000000000000", INPUT_BATCH),
    ("paleo", "workload.peak_matmul_n=1000000", f"workload.peak_matmul_n=1000000 is not allowed: small enough that "
                                                f"one 1000000 x 1000000 float32 matrix {WITHIN}"),
    ("paleo", f"workload.peak_copy_bytes={TIB}", f"workload.peak_copy_bytes={TIB} is not allowed: small enough that "
                                                 f"each copy buffer {WITHIN} (now 1.02e+03 GiB)"),
    ("synthetic", "workload.image_size=1000000000000", INPUT_BATCH),
    ("synthetic", "workload.batch_size=1000000000000", INPUT_BATCH),
    ("probe", "workload.matmul_n=1000000", "workload.matmul_n=1000000 is not allowed: small enough that one"),
    ("probe", f"workload.copy_bytes={TIB}", f"workload.copy_bytes={TIB} is not allowed: small enough that each copy "
                                            f"and triad buffer {WITHIN}"),
    ("probe", f"workload.transfer_bytes={TIB}", f"workload.transfer_bytes={TIB} is not allowed"),
    ("allreduce", f"workload.max_bytes={TIB}", f"workload.max_bytes={TIB} is not allowed: small enough that the "
                                               f"largest message {WITHIN}"),
    ("dataloader", "workload.batch_size=1000000000000", INPUT_BATCH),
    # train made its synthetic labels (int64) up front: 2**62 samples raised in the worker after the sweep was written
    ("train", f"workload.synthetic_samples={2 ** 62}", f"workload.synthetic_samples={2 ** 62} is not allowed: small "
                                                      f"enough that its labels (and the sampler's order: int64 each) "
                                                      f"{WITHIN}"),
    ("dataloader", "workload.crop_padding=33", "workload.crop_padding=33 is not allowed: an integer in "
                                               "[0, workload.image_size=32]"),
])
def test_a_size_past_its_bound_is_one_line_naming_the_key(compose_values, preset, override, message):
    with pytest.raises(Exception) as refused:
        config_from_dict(compose_values([f"experiment=tiny/{preset}", override]))
    assert one_line(refused.value).startswith(message), one_line(refused.value)


@pytest.mark.parametrize("preset, overrides", [
    ("paleo", [f"workload.num_classes={MAX_CLASSES}"]),
    ("allreduce", [f"workload.max_bytes={MAX_BUFFER_BYTES}"]),
    ("probe", [f"workload.copy_bytes={MAX_BUFFER_BYTES}", "workload.matmul_n=131072"]),  # 131072^2 x 4 B = 64 GiB
    ("synthetic", ["workload.batch_size=1024", "workload.image_size=2048"]),  # 48 GiB of input
])
def test_the_bounds_themselves_are_allowed(compose_values, preset, overrides):
    config_from_dict(compose_values([f"experiment=tiny/{preset}", *overrides]))
