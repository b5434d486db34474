#!/usr/bin/env bash
# Issue 44, item 4: time and energy to 93 % on Fashion-MNIST on 1, 2 and 4 GPUs of one host (DDP, global batch
# 512 split over the ranks: strong scaling), eager against torch.compile(mode="reduce-overhead") (CUDA graph trees;
# the whole-step graph of workload.cuda_graphs is refused with DDP), hpml's launched worker (telemetry on) beside
# the plain DDP loop (tools/plain_ddp_tta.py) with the same technique, in the same call. Runs on disjoint GPUs go
# side by side (CUDA_VISIBLE_DEVICES); each has its GPUs to itself. From the repository root, $OUT set, .fmnist/
# and .whl/ carried:   bash docs/results/tta_gpus_fashion_mnist/run.sh <label>
set -uo pipefail
label=$1
STAGES_FUNCTIONS_ONLY=1 source "$(dirname "${BASH_SOURCE[0]}")/../lib/stages.sh"  # the set-up functions alone
wheels_if_missing  # hydra, omegaconf and submitit from .whl/ where python3 lacks them
on_pythonpath "$PWD"
export PYTHONUNBUFFERED=1
no_nvlink_multicast
nvidia-smi --query-gpu=index,name,driver_version,power.limit --format=csv | tee "$OUT/$label-gpus.txt"
data=/tmp/hpml-fashion-mnist work=/tmp/tta_gpus_fm_$label
rm -rf "$data" "$work"; mkdir -p "$work"
hpml data fashion-mnist --root "$data" --from .fmnist >/dev/null
recipe=(--dataset fashion_mnist --data-root "$data" --target 0.93 --epochs 15 --lr 0.2 --warmup-epochs 1
        --decay-epochs 15 --crop-padding 2 --flip)
launch() {  # launch <gpus> <visible> <compile>
  CUDA_VISIBLE_DEVICES=$2 hpml launch experiment=tta_fashion_mnist workload.data_root="$data" \
    resources.gpus_per_node="$1" resources.workers_per_node="$1" workload.parallel=ddp workload.scaling=strong \
    workload.save_model=false workload.compile="$3" sweep.seed=0 sweep.name="tta_gpus_fm_${label}_${1}gpu_$3" \
    sweep.root="$work/sweeps" >"$work/launch_$1_$3.log" 2>&1
}
plain() {  # plain <gpus> <visible> <compile>: 2 repeats, the first pays cuDNN's autotuning and the compilation
  CUDA_VISIBLE_DEVICES=$2 torchrun --standalone --nproc_per_node "$1" tools/plain_ddp_tta.py "${recipe[@]}" \
    --repeats 2 --compile "$3" --out "$OUT/$label-plain-$1-$3.json" >"$work/plain_$1_$3.log" 2>&1
}
( launch 1 0 none; launch 1 0 reduce_overhead ) &
( launch 2 1,2 none; launch 2 1,2 reduce_overhead ) &
( plain 1 3 reduce-overhead; plain 1 3 none ) &
wait
launch 4 0,1,2,3 none; launch 4 0,1,2,3 reduce_overhead
plain 2 0,1 reduce-overhead & plain 2 2,3 none & wait
plain 4 0,1,2,3 reduce-overhead; plain 4 0,1,2,3 none
tail -n 2 "$work"/launch_*.log
grep -h '^{' "$work"/plain_*.log | cut -c1-200
rm -f "$work/sweeps/latest"
hpml report "$work/sweeps" >"$OUT/$label-report.md" 2>&1
tar czf "$OUT/$label-sweeps.tgz" -C "$work" sweeps
grep -A12 "### Time to accuracy" "$OUT/$label-report.md" | head -14
