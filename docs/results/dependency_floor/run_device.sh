#!/usr/bin/env bash
# Issue 31, item 3: the test suite on the device machine's own, older library versions (torch 2.11, torchvision
# 0.26, Python 3.12, and the image's pandas, numpy, matplotlib, scikit-learn, nvidia-ml-py), so that setup.cfg's
# lower bounds are versions the suite has passed on. hydra-core, omegaconf, antlr4, submitit and orjson are not in
# the image: the same versions as on the development machine travel as wheels (.whl/; not ruff, 10 MB over the
# runner's 64 MiB: the lint test is deselected, it checks the source, not a library). No SLURM there: the suite's `not slurm and not serial` part (the timed tests need an idle 2-core machine).
# From the repository root on the device machine:
#   bash docs/results/dependency_floor/run_device.sh      # writes $OUT/versions.txt, $OUT/pytest.txt
set -u
out=${OUT:-/tmp/out}
mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . >/dev/null 2>&1 || {
  echo "editable install failed"; python3 -m pip install --no-index --no-deps --no-build-isolation -e . 2>&1 | tail -5; exit 1; }
{
  date -u +%Y-%m-%dT%H:%M:%SZ; git rev-parse HEAD 2>/dev/null; nproc; lscpu | grep -E '^Model name'
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 - <<'PY'
import importlib.metadata as m, platform
print("python", platform.python_version())
for name in ("torch", "torchvision", "submitit", "hydra-core", "omegaconf", "pandas", "numpy", "nvidia-ml-py",
             "matplotlib", "orjson", "scikit-learn", "scipy", "pytest", "pytest-xdist", "ruff", "setuptools"):
    try:
        print(name, m.version(name))
    except m.PackageNotFoundError:
        print(name, "absent")
PY
} > "$out/versions.txt" 2>&1
cat "$out/versions.txt"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
start=$(date +%s)
timeout 520 python3 -m pytest -q -p no:cacheprovider -n 12 --dist loadfile -m "not slurm and not serial" \
  --deselect tests/test_lint.py::test_ruff_finds_nothing 2>&1 | tail -60 | tee "$out/pytest.txt"
echo "wall: $(( $(date +%s) - start )) s" | tee -a "$out/pytest.txt"
