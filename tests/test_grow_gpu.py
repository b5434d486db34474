"""CUDA out of memory on a real GPU (`pytest -m gpu`; skipped without CUDA): a probe point whose copy buffers do not
fit the GPU ends "oom" with the device it ran on, and `hpml resume --grow`'s rule sends it one rung up
cluster.gpu_ladder, not to more host memory. With HPML_RECORD_DIR set, the point's result.json and state.json are
copied there: tests/recorded/cuda_oom/ is such a recording (an H100), which the SLURM test of the ladder
(tests/test_slurm_sweeps.py) puts in place of a test-cluster point's, whose "GPUs" are not CUDA devices."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import torch

from hpml.contract.sweep_layout import RESULT_FILE, STATE_FILE, point_dir
from hpml.launcher.grow import Growth, JobResources, growth
from hpml.launcher.resume import result_device

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]

# two (copy) or three (triad) buffers of 64 GiB, the most a buffer may be: more than an 80 GB H100 or a 141 GB H200
HUGE = 2 ** 36


def test_cuda_out_of_memory_is_recorded_with_its_device_and_grows_up_the_ladder(hpml, tmp_path):
    done = hpml("launch", "experiment=tiny/probe", "resources.gpus_per_node=1", f"workload.copy_bytes={HUGE}")
    assert done.returncode == 1 and "0      oom" in done.stdout, done.stdout + done.stderr
    folder = point_dir((tmp_path / "sweeps" / "latest").resolve(), 0)
    result = json.loads((folder / RESULT_FILE).read_text())
    assert result["status"] == "oom" and "CUDA out of memory" in result["reason"], result["reason"]
    assert result_device(folder) == result["environment"]["device"] == "cuda"
    had = JobResources(None, None, None, None)
    assert growth(0, "oom", 1, 10, 1, 1, 3, had, device=result_device(folder), constraint="gpu40g",
                  ladder=("gpu40g", "gpu80g")) == Growth(0, "cluster.constraint", "gpu40g", "gpu80g")
    if os.environ.get("HPML_RECORD_DIR"):
        record = Path(os.environ["HPML_RECORD_DIR"])
        record.mkdir(parents=True, exist_ok=True)
        for name in (RESULT_FILE, STATE_FILE):
            shutil.copyfile(folder / name, record / name)
