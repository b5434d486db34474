#!/usr/bin/env bash
# Issue 44, items 3 and 4 on a host of up to 4 GPUs: the whole step in one CUDA graph with DDP
# (workload.cuda_graphs=true, DDP's all-reduces captured with it), time and energy to 93 % on Fashion-MNIST on 1, 2
# and 4 GPUs at a global batch of 512 split over the ranks (strong scaling: the issue's 2.5x goal) or, with
# WEAK=1, 512 images a GPU (the rate scaled linearly from 0.2 at 512). Every run has the host to itself: the
# launched worker (telemetry on), then the plain DDP loop with the same technique (tools/plain_ddp_tta.py
# --cuda-graphs, 2 repeats: the first pays cuDNN's autotuning and the capture). Everything is packed into one
# archive after each run, so that a cut leaves what finished. From the repository root, $OUT set, .fmnist/ and
# .whl/ carried:
#   [WEAK=1] [NS="1 4 2"] [EAGER=4] [SEEDS=0] [PLAIN=1] [NOTELEM=] [COMPILE=none] [GRAPHS=1] [PARALLEL=ddp] [PREP=step] \
#     bash docs/results/tta_gpus_fashion_mnist/run_graphs.sh <label> [cap in s]
# NS: the GPU counts, in order; EAGER: GPU counts whose eager run (launched and plain) follows, if time is left;
# SEEDS: the launched runs' seeds (a comma list: one sweep of a point a seed); PLAIN=0: no plain loop; NOTELEM: GPU
# counts whose launched graphs run (seed 0) is made once more with telemetry.enabled=false, last (what the NVML
# sampler costs the step); COMPILE=default: the graphs runs capture torch.compile's fused kernels (launched and
# plain); GRAPHS=0: those runs use torch.compile's mode alone, without hpml's whole-step graph (for the modes that
# replay torch's own graphs, max_autotune and reduce_overhead); PARALLEL=none: the launched runs without DDP (1 GPU
# only); PREP=epoch: every run makes the epoch's batches at its start (workload.batch_prep=epoch; the plain loop's
# --batch-prep epoch).
set -uo pipefail
label=$1 cap=${2:-540} ns=${NS:-1 4 2} eager=${EAGER:-} weak=${WEAK:-0} seeds=${SEEDS:-0} with_plain=${PLAIN:-1}
notelem=${NOTELEM:-} compile=${COMPILE:-none} parallel=${PARALLEL:-ddp} prep=${PREP:-step} graphs=${GRAPHS:-1}
STAGES_FUNCTIONS_ONLY=1 source "$(dirname "${BASH_SOURCE[0]}")/../lib/stages.sh"  # the set-up functions alone
wheels_if_missing  # hydra, omegaconf and submitit from .whl/ where python3 lacks them
on_pythonpath "$PWD"
export PYTHONUNBUFFERED=1
no_nvlink_multicast
start=$SECONDS
data=/tmp/hpml-fashion-mnist work=/tmp/tta_gpus_graphs_$label
rm -rf "$data" "$work"; mkdir -p "$work/out"
nvidia-smi --query-gpu=index,name,driver_version,power.limit --format=csv | tee "$work/out/gpus.txt"
lscpu | grep -E '^(Model name|CPU\(s\)):' | tee -a "$work/out/gpus.txt"
hpml data fashion-mnist --root "$data" --from .fmnist >/dev/null
recipe=(--dataset fashion_mnist --data-root "$data" --target 0.93 --epochs 15 --warmup-epochs 1 --decay-epochs 15
        --crop-padding 2 --flip)
left() { echo $(( cap - (SECONDS - start) )); }
visible() { seq -s, 0 $(( $1 - 1 )); }
batch() {  # the launched run's batch overrides and the plain loop's global batch and rate, for <gpus>
  if [ "$weak" = 1 ]; then
    echo "workload.scaling=weak workload.batch_size=512 workload.lr_scaling=linear workload.lr_base_batch=512"
  else
    echo "workload.scaling=strong"
  fi
}
launch() {  # launch <gpus> <graphs: true|false> [telemetry: true|false]
  local kind telemetry=${3:-true} graphed=$2
  local mode; mode=$([ "$2" = true ] && echo "$compile" || echo none)
  [ "$graphs" = 1 ] || graphed=false
  kind=$([ "$graphed" = true ] && echo graphs || echo eager)$([ "$mode" = none ] || echo "_$mode")
  kind=$kind$([ "$parallel" = ddp ] || echo "_$parallel")$([ "$prep" = step ] || echo "_prep$prep")
  kind=$kind$([ "$telemetry" = true ] || echo _notelemetry)
  # shellcheck disable=SC2046
  CUDA_VISIBLE_DEVICES=$(visible "$1") timeout "$(left)" python3 -m hpml.launcher.cli launch \
    experiment=tta_fashion_mnist workload.data_root="$data" resources.gpus_per_node="$1" \
    resources.workers_per_node="$1" workload.parallel="$parallel" $(batch) workload.cuda_graphs="$graphed" \
    workload.compile="$mode" workload.batch_prep="$prep" \
    workload.save_model=false telemetry.enabled="$telemetry" \
    sweep.seed="$([ "$telemetry" = true ] && echo "$seeds" || echo 0)" \
    sweep.name="tta_gpus_graphs_${label}_${1}gpu_$kind" sweep.root="$work/sweeps" \
    >"$work/out/launch_$1_$kind.log" 2>&1
}
plain() {  # plain <gpus> <graphs: true|false>
  [ "$with_plain" = 1 ] || return 0
  local kind flag global=512 lr=0.2
  kind=$([ "$2" = true ] && [ "$graphs" = 1 ] && echo graphs || echo eager)
  flag=$([ "$2" = true ] && [ "$graphs" = 1 ] && echo --cuda-graphs)
  if [ "$2" = true ] && [ "$compile" != none ]; then kind=${kind}_$compile; flag="$flag --compile ${compile//_/-}"; fi
  [ "$prep" = step ] || kind=${kind}_prep$prep
  if [ "$weak" = 1 ]; then global=$(( 512 * $1 )); lr=$(python3 -c "print(0.2 * $1)"); fi
  # shellcheck disable=SC2086
  CUDA_VISIBLE_DEVICES=$(visible "$1") timeout "$(left)" torchrun --standalone --nproc_per_node "$1" \
    tools/plain_ddp_tta.py "${recipe[@]}" --batch "$global" --lr "$lr" --repeats 2 $flag --batch-prep "$prep" \
    --out "$work/out/plain-$1-$kind.json" >"$work/out/plain_$1_$kind.log" 2>&1
}
pack() {
  rm -f "$work/sweeps/latest"
  [ -d "$work/sweeps" ] && python3 -m hpml.launcher.cli report "$work/sweeps" >"$work/out/report.md" 2>&1
  tar czf "$OUT/$label.tgz" -C "$work" out sweeps 2>/dev/null
  echo "$* done at $(( SECONDS - start )) s"
}
for n in $ns; do
  launch "$n" true; pack launched "$n" GPU graphs
  plain "$n" true; pack plain "$n" GPU graphs
done
for n in $eager; do
  launch "$n" false; pack launched "$n" GPU eager
  plain "$n" false; pack plain "$n" GPU eager
done
for n in $notelem; do
  launch "$n" true false; pack launched "$n" GPU graphs without telemetry
done
grep -h '^{' "$work"/out/plain_*.log 2>/dev/null | cut -c1-220
tail -n 3 "$work"/out/launch_*.log
grep -A8 "### Time to accuracy" "$work/out/report.md" | head -10
echo "wall $(( SECONDS - start )) s"
