#!/usr/bin/env bash
# Issue 43, item 3 (not yet run): time to 93 % on Fashion-MNIST, hpml's preset (the launched worker, telemetry on)
# beside the plain PyTorch loop with the same recipe, on one GPU of this host. From the repository root, with $OUT set:
#   bash docs/results/tta_fashion_mnist/run.sh <label> <folder of the four official .gz files>
# (the GPU machines have no Debian package: carry /usr/share/datasets/fashion-mnist/, 30 MB, and name it here; its
# files are checked against torchvision's published MD5s before anything is written).
# The plain loop runs 11 repeats in one process: the first is cold (cuDNN's autotuning, as every hpml point's first
# epoch), the other 10 warm. Then `hpml launch experiment=tta_fashion_mnist` (10 seeds, one point at a time, each its
# own process), its report, and `hpml evaluate` of the kept models on the rotated test copy.
set -euo pipefail
label=$1 gz=$2
hpml=(python -m hpml.launcher.cli)
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,driver_version,power.limit --format=csv | tee "$OUT/$label-gpus.txt"
data=/tmp/hpml-fashion-mnist ood=/tmp/hpml-fashion-mnist-ood
rm -rf "$data" "$ood"
"${hpml[@]}" data fashion-mnist --root "$data" --from "$gz" --ood "$ood" | tee "$OUT/$label-data.txt"
torchrun --nproc_per_node 1 tools/plain_ddp_tta.py --dataset fashion_mnist --data-root "$data" --target 0.93 \
    --epochs 15 --lr 0.2 --warmup-epochs 1 --decay-epochs 15 --crop-padding 2 --flip --repeats 11 \
    --out "$OUT/$label-plain.json" 2>&1 | grep '^{'
"${hpml[@]}" launch experiment=tta_fashion_mnist workload.data_root="$data" resources.gpus_per_node=1 \
    sweep.name="tta_fashion_mnist_$label" sweep.root="$OUT/sweeps" | tail -2
sweep=$(readlink -f "$OUT/sweeps/latest")
"${hpml[@]}" report "$sweep" >"$OUT/$label-report.md"
"${hpml[@]}" evaluate "$sweep" --images "$ood" >"$OUT/$label-evaluate.md"
rm -f "$OUT/sweeps/latest" "$sweep"/points/*/model.pt
tar czf "$OUT/$label-sweeps.tgz" -C "$OUT/sweeps" .
rm -rf "$OUT/sweeps"
