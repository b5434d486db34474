#!/usr/bin/env bash
# Issue 44, item 4 on a 2-GPU host, at a configuration the GPUs bound: 512 images a GPU (weak scaling; global batch
# 512 on 1 GPU, 1,024 on 2, the rate scaled linearly from 0.2 at 512: Goyal et al.), time and energy to 93 % on
# Fashion-MNIST, eager against torch.compile(mode="reduce-overhead") (the whole-step graph of workload.cuda_graphs
# is refused with DDP). Every run has the host to itself: the launched worker (telemetry on), then the plain DDP loop
# (tools/plain_ddp_tta.py, 2 repeats: the first pays cuDNN's autotuning and the compilation) with the same
# technique, one after the other (run_2gpu.sh ran its 1-GPU pair side by side, which skewed both). Everything is
# packed into one archive after each run, so that a cut leaves what finished. From the repository root, $OUT set,
# .fmnist/ and .whl/ carried:
#   bash docs/results/tta_gpus_fashion_mnist/run_2gpu_weak.sh <label> [cap in s, default 540]
set -uo pipefail
label=$1 cap=${2:-540}
STAGES_FUNCTIONS_ONLY=1 source "$(dirname "${BASH_SOURCE[0]}")/../lib/stages.sh"  # the set-up functions alone
wheels_if_missing  # hydra, omegaconf and submitit from .whl/ where python3 lacks them
on_pythonpath "$PWD"
export PYTHONUNBUFFERED=1
no_nvlink_multicast
start=$SECONDS
data=/tmp/hpml-fashion-mnist work=/tmp/tta_gpus_weak_$label
rm -rf "$data" "$work"; mkdir -p "$work/out"
nvidia-smi --query-gpu=index,name,driver_version,power.limit --format=csv | tee "$work/out/gpus.txt"
lscpu | grep -E '^(Model name|CPU\(s\)):' | tee -a "$work/out/gpus.txt"
hpml data fashion-mnist --root "$data" --from .fmnist >/dev/null
recipe=(--dataset fashion_mnist --data-root "$data" --target 0.93 --epochs 15 --warmup-epochs 1 --decay-epochs 15
        --crop-padding 2 --flip)
left() { echo $(( cap - (SECONDS - start) )); }
launch() {  # launch <gpus> <visible> <compile>
  CUDA_VISIBLE_DEVICES=$2 timeout "$(left)" python3 -m hpml.launcher.cli launch experiment=tta_fashion_mnist \
    workload.data_root="$data" resources.gpus_per_node="$1" resources.workers_per_node="$1" workload.parallel=ddp \
    workload.scaling=weak workload.batch_size=512 workload.lr_scaling=linear workload.lr_base_batch=512 \
    workload.save_model=false workload.compile="$3" sweep.seed=0 \
    sweep.name="tta_gpus_weak_${label}_${1}gpu_$3" sweep.root="$work/sweeps" >"$work/out/launch_$1_$3.log" 2>&1
}
plain() {  # plain <gpus> <visible> <compile>: global batch 512 a GPU, the rate 0.2 a 512
  CUDA_VISIBLE_DEVICES=$2 timeout "$(left)" torchrun --standalone --nproc_per_node "$1" tools/plain_ddp_tta.py \
    "${recipe[@]}" --batch $(( 512 * $1 )) --lr "$(python3 -c "print(0.2 * $1)")" --repeats 2 --compile "$3" \
    --out "$work/out/plain-$1-$3.json" >"$work/out/plain_$1_$3.log" 2>&1
}
pack() {
  rm -f "$work/sweeps/latest"
  [ -d "$work/sweeps" ] && python3 -m hpml.launcher.cli report "$work/sweeps" >"$work/out/report.md" 2>&1
  tar czf "$OUT/$label.tgz" -C "$work" out sweeps 2>/dev/null
  echo "$* done at $(( SECONDS - start )) s"
}
launch 1 0 reduce_overhead; pack launched 1 GPU reduce_overhead
plain 1 0 reduce-overhead; pack plain 1 GPU reduce-overhead
launch 2 0,1 reduce_overhead; pack launched 2 GPUs reduce_overhead
plain 2 0,1 reduce-overhead; pack plain 2 GPUs reduce-overhead
launch 1 0 none; pack launched 1 GPU eager
plain 1 0 none; pack plain 1 GPU eager
launch 2 0,1 none; pack launched 2 GPUs eager
plain 2 0,1 none; pack plain 2 GPUs eager
grep -h '^{' "$work"/out/plain_*.log | cut -c1-220
grep -A8 "### Time to accuracy" "$work/out/report.md" | head -10
echo "wall $(( SECONDS - start )) s"
