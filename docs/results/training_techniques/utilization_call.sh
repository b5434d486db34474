# One device call of the utilization measurement (2026-11-26), run on the device machine from the repository root as
#   bash docs/results/training_techniques/run_clean.sh docs/results/training_techniques/utilization_call.sh \
#       <settings> <launch limit [s]> [<batch>]
# with the `.whl/` wheels carried. It installs the wheels, labels the results by the card nvidia-smi names, runs
# run.sh's utilization part on <settings> and, given <batch>, one more device_large_batch point at that batch (its own
# sweep, utilization_<label>_b<batch>). Results: $OUT/<label>-utilization*.tgz.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
label=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -oE 'H[0-9]+' | tr A-Z a-z)
echo "label=$label start $(date +%T)"
UTILIZATION=$1 LAUNCH_LIMIT_S=$2 bash docs/results/training_techniques/run.sh $label utilization 2>&1 | grep -v "running,\|pending" | tail -25
if [ -n "${3:-}" ]; then
  timeout 100 python -m hpml.launcher.cli launch experiment=gpu_utilization workload.data_root=/tmp/hpml-digits/digits50k \
    utilization=device_large_batch workload.batch_size=$3 sweep.name=utilization_${label}_b$3 sweep.root=$OUT/sweeps-b$3 2>&1 \
    | grep -v "running,\|pending\|^\[rank" | tail -4
  rm -f $OUT/sweeps-b$3/latest; find $OUT/sweeps-b$3 -name model.pt -delete
  tar czf $OUT/$label-utilization-b$3.tgz -C $OUT/sweeps-b$3 . && rm -rf $OUT/sweeps-b$3
fi
echo "end $(date +%T)"; ls -la $OUT
