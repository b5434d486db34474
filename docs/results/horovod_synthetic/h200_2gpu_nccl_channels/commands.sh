# The two device calls (nvidia-h200-x2, 2026-11-23, commit 6ce619d's tree), run from the repository root with
# .whl carried. The machine stayed warm between them, so /tmp/s holds both calls' sweeps (results.tar.gz);
# each sweep folder's timestamp and its results' environment.env.NCCL_* say which setting it ran.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD
S=/tmp/s
# call 1 (06:20-06:22 UTC): 256 MiB .. 4 GiB
i=0; for v in "X=1" "NCCL_MIN_NCHANNELS=32" "NCCL_BUFFSIZE=16777216" "NCCL_MIN_NCHANNELS=32 NCCL_BUFFSIZE=16777216" \
    "NCCL_PROTO=LL128"; do
  env $v timeout 120 python3 -m hpml.launcher.cli launch experiment=allreduce_vs_bare resources.gpus_per_node=2 \
    resources.workers_per_node=2 hardware=h200_nvlink workload.min_bytes=268435456 workload.max_bytes=4294967296 \
    sweep.name=env$i sweep.root=$S; i=$((i+1)); done
# call 2 (06:22-06:24 UTC): 512 MiB .. 2 GiB, NCCL's INIT log says how many channels it built
i=0; for v in "X=1" "NCCL_MIN_NCHANNELS=32" "NCCL_MIN_NCHANNELS=48 NCCL_MAX_NCHANNELS=48" \
    "NCCL_MIN_NCHANNELS=64 NCCL_MAX_NCHANNELS=64" "NCCL_MIN_NCHANNELS=32 NCCL_NTHREADS=512"; do
  env $v NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT timeout 120 python3 -m hpml.launcher.cli launch experiment=allreduce_vs_bare \
    resources.gpus_per_node=2 resources.workers_per_node=2 hardware=h200_nvlink workload.min_bytes=536870912 \
    workload.max_bytes=2147483648 sweep.name=env$i sweep.root=$S; i=$((i+1)); done
# here: busbw per sweep folder and size (hpml report's allreduce table, split by launch)
python3 -m hpml.launcher.cli report <extracted>/s --out /tmp/rep   # allreduce.csv; group by the path's sweep folder
