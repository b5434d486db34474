"""Upper bounds of the sizes that decide how much memory a workload allocates and of how often it repeats its work,
shared by the workload schemas (their checks: conf/validation.py's require_*) and by models/saved.py and
evaluation/, which read model files with the same bounds: standard library only, importable by all.

Like resources' bounds (conf/resources.py), far above any study and below the point where the run would only run
out of memory, or of time, after its sweep was written: a typo (1e12 classes, a 1 TiB message, 1e9 iterations) is
one line before anything runs.
"""

from __future__ import annotations

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
