"""Upper bounds of the sizes that decide how much memory a workload allocates and of how often it repeats its work,
shared by the workload schemas.

Like resources' bounds (conf/resources.py), far above any study and below the point where the run would only run
out of memory, or of time, after its sweep was written: a typo (1e12 classes, a 1 TiB message, 1e9 iterations) is
one line before anything runs.
"""

from __future__ import annotations

from typing import Sequence

from hpml.conf.validation import require
from hpml.contract.units import GIB

MIN_IMAGE_SIZE, MAX_IMAGE_SIZE = 8, 1024  # the image_size a saved model may record (models/saved.py checks it)

# Classes of a classifier: ImageNet-21k has 21,841; `hpml evaluate` reads model.pt files with the same bound
MAX_CLASSES = 100_000
# One buffer a workload allocates (a message, a copy's buffer, a matmul operand, an input batch): 64 GiB. The
# studies use 1 GiB; the largest GPU lent here (an H200, 141 GB) holds two such buffers, a probe's triad or an
# all-reduce on 64 GiB already exceeds most nodes' memory
MAX_BUFFER_BYTES = 2 ** 36
FLOAT32_BYTES = 4
IMAGE_CHANNELS = 3
# How often a workload repeats its work (iterations, repetitions, warm-ups, rounds, steps; epochs apart). Nothing
# but the job's time limit ends them, so a typo (1e9 iterations) held its GPUs until resources.time_min ran out.
# The studies repeat a measurement at most a few thousand times; a cap of 1,000,000 keeps a microsecond-scale
# collective's long loop possible.
MAX_REPEATS = 1_000_000
# Epochs of a training or loader run: published CIFAR schedules run 160-300, hpml's studies at most 200
MAX_EPOCHS = 10_000


def require_classes(num_classes: int) -> None:
    require(2 <= num_classes <= MAX_CLASSES, "workload.num_classes",
            f"an integer from 2 to {MAX_CLASSES:,} (ImageNet-21k has 21,841)", num_classes)


def require_repeats(cfg: object, counts: Sequence[str] = (), epochs: Sequence[str] = ()) -> None:
    """Each of cfg's repeat counts (attribute names) at most MAX_REPEATS, each epoch count at most MAX_EPOCHS."""
    for keys, cap, what in ((counts, MAX_REPEATS, "a repeat count"), (epochs, MAX_EPOCHS, "epochs")):
        for key in keys:
            value = getattr(cfg, key)
            require(value <= cap, f"workload.{key}", f"at most {cap:,} ({what}: more only runs until the job's time "
                    "limit ends it)", value)


def require_buffer(key: str, value: int, nbytes: int, what: str) -> None:
    """`value` of `key` makes a buffer of `nbytes` bytes (`what` says which): at most MAX_BUFFER_BYTES."""
    require(nbytes <= MAX_BUFFER_BYTES, key, f"small enough that {what} stays within {MAX_BUFFER_BYTES >> 30} GiB "
            f"(now {nbytes / GIB:.3g} GiB)", value)


def require_input_batch(batch_size: int, image_size: int) -> None:
    """One input batch, batch_size x 3 x image_size x image_size in float32, within MAX_BUFFER_BYTES."""
    nbytes = batch_size * IMAGE_CHANNELS * image_size ** 2 * FLOAT32_BYTES
    require(nbytes <= MAX_BUFFER_BYTES, f"workload.batch_size x {IMAGE_CHANNELS} x workload.image_size^2 x "
            f"{FLOAT32_BYTES} bytes", f"at most {MAX_BUFFER_BYTES >> 30} GiB, one float32 input batch (batch_size="
            f"{batch_size}, image_size={image_size}: {nbytes / GIB:.3g} GiB)", nbytes)


def require_square_matrix(key: str, n: int) -> None:
    """An n x n float32 matmul operand within MAX_BUFFER_BYTES."""
    require_buffer(key, n, n * n * FLOAT32_BYTES, f"one {n} x {n} float32 matrix")
