#!/usr/bin/env bash
# Issue 43, item 3 on a 2-GPU host (the H200 run): the preset's 10 seeds as two `hpml launch` sweeps side by side
# (GPU 0: seeds 0-4; GPU 1: the plain loop's 3 repeats, then seeds 5-9), everything under a time cap so that the
# results made so far are always packed. From the repository root, $OUT set, .fmnist/ and .whl/ carried:
#   bash docs/results/tta_fashion_mnist/run_2gpu.sh <label> [cap in s, default 230]
set -uo pipefail
label=$1 cap=${2:-230}
STAGES_FUNCTIONS_ONLY=1 source "$(dirname "${BASH_SOURCE[0]}")/../lib/stages.sh"  # the set-up functions alone
wheels_if_missing  # hydra, omegaconf and submitit from .whl/ where python3 lacks them
on_pythonpath "$PWD"
export PYTHONUNBUFFERED=1
no_nvlink_multicast
nvidia-smi --query-gpu=index,name,driver_version,power.limit --format=csv | tee "$OUT/$label-gpus.txt"
data=/tmp/hpml-fashion-mnist work=/tmp/tta_fm_$label
rm -rf "$data" "$work"; mkdir -p "$work"
hpml data fashion-mnist --root "$data" --from .fmnist >/dev/null
recipe=(--dataset fashion_mnist --data-root "$data" --target 0.93 --epochs 15 --lr 0.2 --warmup-epochs 1
        --decay-epochs 15 --crop-padding 2 --flip)
sweep() {  # sweep <gpu> <seeds>
  CUDA_VISIBLE_DEVICES=$1 python3 -m hpml.launcher.cli launch experiment=tta_fashion_mnist workload.data_root="$data" \
    resources.gpus_per_node=1 workload.save_model=false sweep.name="tta_fashion_mnist_${label}_gpu$1" \
    sweep.root="$work/eager" "hydra.sweeper.params={sweep.seed: \"$2\"}" >"$work/eager$1.log" 2>&1
}
export -f sweep; export data work label
timeout "$cap" bash -c "sweep 0 0,1,2,3,4" &
timeout "$cap" bash -c "CUDA_VISIBLE_DEVICES=1 torchrun --standalone --nproc_per_node 1 tools/plain_ddp_tta.py \
  ${recipe[*]} --repeats 3 --out $OUT/$label-plain.json >$work/plain.log 2>&1; sweep 1 5,6,7,8,9" &
wait
grep -h '^{' "$work/plain.log" | cut -c1-160
rm -f "$work"/eager/latest
hpml report "$work/eager" >"$OUT/$label-report.md" 2>&1
tar czf "$OUT/$label-sweeps.tgz" -C "$work" eager
grep -A4 "### Time to accuracy" "$OUT/$label-report.md" | head -6
