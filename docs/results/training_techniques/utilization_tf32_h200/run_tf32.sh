# device call: the baseline and device_large_batch with TF32 allowed (PyTorch's default for convolutions), beside
# the preset's strict fp32, on whichever card comes
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
label=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -oE 'H[0-9]+' | tr A-Z a-z)
echo "label=$label"
python -m hpml.launcher.cli data digits --root /tmp/d50k --train-size 50000 | tail -1
timeout 200 python -m hpml.launcher.cli launch experiment=gpu_utilization workload.data_root=/tmp/d50k utilization=baseline,device_large_batch \
  workload.tf32=true sweep.name=utilization_tf32_$label sweep.root=$OUT/sweeps 2>&1 | grep -v "running,\|pending\|^\[rank" | tail -4
rm -f $OUT/sweeps/latest; find $OUT/sweeps -name model.pt -delete; tar czf $OUT/tf32_$label.tgz -C $OUT/sweeps . && rm -rf $OUT/sweeps; ls -la $OUT
