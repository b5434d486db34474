#!/usr/bin/env bash
# Issue 44, item 4 on a 2-GPU host: time and energy to 93 % on Fashion-MNIST on 1 and 2 GPUs (DDP, global batch 512
# split over the ranks: strong scaling), eager against torch.compile(mode="reduce-overhead") (CUDA graph trees; the
# whole-step graph of workload.cuda_graphs is refused with DDP), the launched worker (telemetry on) beside the plain
# DDP loop (tools/plain_ddp_tta.py) with the same technique, in the same call. First the 1-GPU runs, launched on
# GPU 0 beside the plain loop on GPU 1 (each has its GPU to itself); then the 2-GPU runs one after another. The call
# runs the launched sweeps first (the 4-GPU call lost them to its limit) and packs everything into one archive after
# each phase, so that a cut leaves what finished. From the repository root, $OUT set, .fmnist/ and .whl/ carried:
#   bash docs/results/tta_gpus_fashion_mnist/run_2gpu.sh <label> [cap in s, default 430]
set -uo pipefail
label=$1 cap=${2:-430}
STAGES_FUNCTIONS_ONLY=1 source "$(dirname "${BASH_SOURCE[0]}")/../lib/stages.sh"  # the set-up functions alone
wheels_if_missing  # hydra, omegaconf and submitit from .whl/ where python3 lacks them
on_pythonpath "$PWD"
export PYTHONUNBUFFERED=1
no_nvlink_multicast
start=$SECONDS
data=/tmp/hpml-fashion-mnist work=/tmp/tta_gpus_fm_$label
rm -rf "$data" "$work"; mkdir -p "$work/out"
nvidia-smi --query-gpu=index,name,driver_version,power.limit --format=csv | tee "$work/out/gpus.txt"
hpml data fashion-mnist --root "$data" --from .fmnist >/dev/null
recipe=(--dataset fashion_mnist --data-root "$data" --target 0.93 --epochs 15 --lr 0.2 --warmup-epochs 1
        --decay-epochs 15 --crop-padding 2 --flip)
left() { echo $(( cap - (SECONDS - start) )); }
launch() {  # launch <gpus> <visible> <compile>
  CUDA_VISIBLE_DEVICES=$2 timeout "$(left)" python3 -m hpml.launcher.cli launch experiment=tta_fashion_mnist \
    workload.data_root="$data" resources.gpus_per_node="$1" resources.workers_per_node="$1" workload.parallel=ddp \
    workload.scaling=strong workload.save_model=false workload.compile="$3" sweep.seed=0 \
    sweep.name="tta_gpus_fm_${label}_${1}gpu_$3" sweep.root="$work/sweeps" >"$work/out/launch_$1_$3.log" 2>&1
}
plain() {  # plain <gpus> <visible> <compile>: 2 repeats, the first pays cuDNN's autotuning and the compilation
  CUDA_VISIBLE_DEVICES=$2 timeout "$(left)" torchrun --standalone --nproc_per_node "$1" tools/plain_ddp_tta.py \
    "${recipe[@]}" --repeats 2 --compile "$3" --out "$work/out/plain-$1-$3.json" >"$work/out/plain_$1_$3.log" 2>&1
}
pack() {
  rm -f "$work/sweeps/latest"
  [ -d "$work/sweeps" ] && python3 -m hpml.launcher.cli report "$work/sweeps" >"$work/out/report.md" 2>&1
  tar czf "$OUT/$label.tgz" -C "$work" out sweeps 2>/dev/null
}
( launch 1 0 none; launch 1 0 reduce_overhead ) &
( plain 1 1 reduce-overhead; plain 1 1 none ) &
wait; pack; echo "1 GPU done at $(( SECONDS - start )) s"
launch 2 0,1 reduce_overhead; pack; echo "2 GPU launched (reduce_overhead) done at $(( SECONDS - start )) s"
plain 2 0,1 reduce-overhead; pack
launch 2 0,1 none; pack
grep -h '^{' "$work"/out/plain_*.log | cut -c1-220
grep -A8 "### Time to accuracy" "$work/out/report.md" | head -10
echo "wall $(( SECONDS - start )) s"
