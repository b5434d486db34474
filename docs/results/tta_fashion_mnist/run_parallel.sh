#!/usr/bin/env bash
# Issue 43, item 3: time to 93 % on Fashion-MNIST on one GPU type, with the 10 seeds spread over the host's 4 GPUs
# (3 `hpml launch` sweeps side by side, one GPU each, CUDA_VISIBLE_DEVICES), the plain loop on the 4th GPU at the
# same time, then 3 seeds of the same preset with the whole step in a CUDA graph (workload.cuda_graphs=true) on
# that GPU. Each run has its GPU to itself; they share the host (64 cores, one process each).
# From the repository root on a 4-GPU machine, with $OUT set, the four .gz files in .fmnist/ and .whl/ carried:
#   bash docs/results/tta_fashion_mnist/run_parallel.sh <label>
set -uo pipefail
label=$1
STAGES_FUNCTIONS_ONLY=1 source "$(dirname "${BASH_SOURCE[0]}")/../lib/stages.sh"  # the set-up functions alone
wheels_if_missing  # hydra, omegaconf and submitit from .whl/ where python3 lacks them
on_pythonpath "$PWD"
export PYTHONUNBUFFERED=1
no_nvlink_multicast
nvidia-smi --query-gpu=index,name,driver_version,power.limit --format=csv | tee "$OUT/$label-gpus.txt"
data=/tmp/hpml-fashion-mnist ood=/tmp/hpml-fashion-mnist-ood work=/tmp/tta_fm_$label
rm -rf "$data" "$ood" "$work"
hpml data fashion-mnist --root "$data" --from .fmnist --ood "$ood" | tee "$OUT/$label-data.txt"
recipe=(--dataset fashion_mnist --data-root "$data" --target 0.93 --epochs 15 --lr 0.2 --warmup-epochs 1
        --decay-epochs 15 --crop-padding 2 --flip)
( CUDA_VISIBLE_DEVICES=3 torchrun --standalone --nproc_per_node 1 tools/plain_ddp_tta.py "${recipe[@]}" --repeats 4 \
    --out "$OUT/$label-plain.json" >"$work.plain.log" 2>&1
  CUDA_VISIBLE_DEVICES=3 hpml launch experiment=tta_fashion_mnist workload.data_root="$data" \
    resources.gpus_per_node=1 workload.cuda_graphs=true workload.save_model=false \
    sweep.name="tta_fashion_mnist_graphs_$label" sweep.root="$work/graphs" "hydra.sweeper.params={sweep.seed: \"0,1,2\"}" \
    >"$work.graphs.log" 2>&1 ) &
seeds=("0,1,2,3" "4,5,6" "7,8,9")
for g in 0 1 2; do
  CUDA_VISIBLE_DEVICES=$g hpml launch experiment=tta_fashion_mnist workload.data_root="$data" \
    resources.gpus_per_node=1 sweep.name="tta_fashion_mnist_${label}_gpu$g" sweep.root="$work/eager" \
    "hydra.sweeper.params={sweep.seed: \"${seeds[$g]}\"}" >"$work.eager$g.log" 2>&1 &
done
wait
grep -h '^{' "$work.plain.log" | tee "$OUT/$label-plain.jsonl"
tail -n 3 "$work".*.log
rm -f "$work"/*/latest
hpml report "$work/eager" >"$OUT/$label-report.md" 2>&1
hpml report "$work/graphs" >"$OUT/$label-graphs-report.md" 2>&1
for s in "$work"/eager/*/; do hpml evaluate "$s" --images "$ood"; done >"$OUT/$label-evaluate.md" 2>&1
rm -f "$work"/*/*/points/*/model.pt
tar czf "$OUT/$label-sweeps.tgz" -C "$work" eager graphs
grep -E "TTA|olympic|93" "$OUT/$label-report.md" | head -20
