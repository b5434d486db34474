#!/usr/bin/env bash
# Issue 43, item 3 on a one-GPU host, one run at a time (the H100 calls ran runs side by side, and the launched
# runs there were 1.5x the plain loop's, with the host's CPUs shared): the plain loop's repeats (the first pays
# cuDNN's autotuning, as every launched point does), then the preset's seeds in one `hpml launch` sweep (the local
# backend runs them one after another on the one GPU), everything under a time cap so that what finished is packed.
# Then the report, the kept models on the rotated test copy (`hpml evaluate`), and the sweep packed without models.
# From the repository root, $OUT set, the four .gz files in .fmnist/ and .whl/ carried:
#   bash docs/results/tta_fashion_mnist/run_1gpu.sh <label> [cap in s, default 480] [seeds, default 0,...,9] \
#        [plain repeats, default 4] [extra hpml overrides...]
set -uo pipefail
label=$1 cap=${2:-480} seeds=${3:-0,1,2,3,4,5,6,7,8,9} repeats=${4:-4}
shift $(( $# < 4 ? $# : 4 ))
STAGES_FUNCTIONS_ONLY=1 source "$(dirname "${BASH_SOURCE[0]}")/../lib/stages.sh"  # the set-up functions alone
wheels_if_missing  # hydra, omegaconf and submitit from .whl/ where python3 lacks them
on_pythonpath "$PWD"
export PYTHONUNBUFFERED=1
no_nvlink_multicast
start=$SECONDS
nvidia-smi --query-gpu=index,name,driver_version,power.limit --format=csv | tee "$OUT/$label-gpus.txt"
data=/tmp/hpml-fashion-mnist ood=/tmp/hpml-fashion-mnist-ood work=/tmp/tta_fm_$label
rm -rf "$data" "$ood" "$work"; mkdir -p "$work"
hpml data fashion-mnist --root "$data" --from .fmnist --ood "$ood" | tee "$OUT/$label-data.txt"
recipe=(--dataset fashion_mnist --data-root "$data" --target 0.93 --epochs 15 --lr 0.2 --warmup-epochs 1
        --decay-epochs 15 --crop-padding 2 --flip)
if [ "$repeats" -gt 0 ]; then
  timeout "$cap" torchrun --standalone --nproc_per_node 1 tools/plain_ddp_tta.py "${recipe[@]}" --repeats "$repeats" \
    --out "$OUT/$label-plain.json" >"$work/plain.log" 2>&1
  grep -h '^{' "$work/plain.log" | tee "$OUT/$label-plain.jsonl" | cut -c1-200
fi
left=$(( cap - (SECONDS - start) ))
timeout "$left" python3 -m hpml.launcher.cli launch experiment=tta_fashion_mnist workload.data_root="$data" \
  resources.gpus_per_node=1 sweep.name="tta_fashion_mnist_$label" sweep.root="$work/sweeps" \
  "hydra.sweeper.params={sweep.seed: \"$seeds\"}" "$@" >"$work/launch.log" 2>&1
tail -n 14 "$work/launch.log" | cut -c1-160 | tee "$OUT/$label-launch-tail.txt"
rm -f "$work"/sweeps/latest
hpml report "$work/sweeps" >"$OUT/$label-report.md" 2>&1
for s in "$work"/sweeps/*/; do hpml evaluate "$s" --images "$ood"; done >"$OUT/$label-evaluate.md" 2>&1
rm -f "$work"/sweeps/*/points/*/model.pt
tar czf "$OUT/$label-sweeps.tgz" -C "$work" sweeps
grep -A6 "### Time to accuracy" "$OUT/$label-report.md" | head -8
echo "wall $(( SECONDS - start )) s"
