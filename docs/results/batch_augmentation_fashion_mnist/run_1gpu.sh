#!/usr/bin/env bash
# Issue 43, item 3 on one GPU: batch augmentation on Fashion-MNIST (experiment=batch_augmentation_fashion_mnist,
# M = 1, 2, 4, 8 copies of each image with crop, flip and Cutout, ResNet-20, to 92 % top-1) for the seeds given,
# then the quantization preset (experiment=quantization_fashion_mnist: the float training, the int8 stages and
# torch.ao's cross-check all on the host's CPU, workload.device=cpu) for its seeds, one run at a time, under one time cap; everything packed
# into one archive after each sweep, so that a cut leaves what finished. With PLAIN=1 the plain loop
# (tools/plain_batch_aug.py, same recipe, same Ms, one seed) runs first, alone on the GPU.
# From the repository root, $OUT set, .fmnist/ and .whl/ carried:
#   [PLAIN=1] [MS=1,2,4,8] bash docs/results/batch_augmentation_fashion_mnist/run_1gpu.sh <label> [cap s, 400] \
#        [aug seeds, 0; "none" skips the batch-augmentation sweep] [quant seeds, 0; "none" skips the quantization sweep]
set -uo pipefail
label=$1 cap=${2:-400} aug_seeds=${3:-0} quant_seeds=${4:-0} ms=${MS:-1,2,4,8}
STAGES_FUNCTIONS_ONLY=1 source "$(dirname "${BASH_SOURCE[0]}")/../lib/stages.sh"  # the set-up functions alone
wheels_if_missing  # hydra, omegaconf and submitit from .whl/ where python3 lacks them
on_pythonpath "$PWD"
export PYTHONUNBUFFERED=1
no_nvlink_multicast
start=$SECONDS
data=/tmp/hpml-fashion-mnist work=/tmp/aug_quant_fm_$label
rm -rf "$data" "$work"; mkdir -p "$work/out"
nvidia-smi --query-gpu=index,name,driver_version,power.limit --format=csv | tee "$work/out/gpus.txt"
lscpu | grep -E '^(Model name|CPU\(s\)):' | tee -a "$work/out/gpus.txt"
hpml data fashion-mnist --root "$data" --from .fmnist >/dev/null
left() { echo $(( cap - (SECONDS - start) )); }
pack() {
  rm -f "$work"/*/latest
  for s in "$work"/aug "$work"/quant; do
    [ -d "$s" ] && python3 -m hpml.launcher.cli report "$s" >"$work/out/$(basename "$s")-report.md" 2>&1
  done
  tar czf "$OUT/$label.tgz" -C "$work" . 2>/dev/null
}
if [ "${PLAIN:-0}" = 1 ]; then
  timeout "$(left)" python3 tools/plain_batch_aug.py --data-root "$data" --copies ${ms//,/ } --repeats 1 \
    --out "$work/out/plain.json" >"$work/out/plain.log" 2>&1
  pack; echo "plain loop done at $(( SECONDS - start )) s"
fi
[ "$aug_seeds" = none ] || timeout "$(left)" python3 -m hpml.launcher.cli launch experiment=batch_augmentation_fashion_mnist \
  workload.data_root="$data" resources.gpus_per_node=1 sweep.name="batch_augmentation_fashion_mnist_$label" \
  sweep.root="$work/aug" "hydra.sweeper.params={sweep.seed: \"$aug_seeds\", workload.batch_augmentation: \"$ms\"}" \
  >"$work/out/aug.log" 2>&1
pack; echo "batch augmentation done at $(( SECONDS - start )) s"
[ "$quant_seeds" = none ] || timeout "$(left)" python3 -m hpml.launcher.cli launch experiment=quantization_fashion_mnist \
  workload.data_root="$data" resources.gpus_per_node=1 sweep.name="quantization_fashion_mnist_$label" \
  sweep.root="$work/quant" "hydra.sweeper.params={sweep.seed: \"$quant_seeds\"}" >"$work/out/quant.log" 2>&1
pack
grep -h '^{' "$work"/out/plain.log 2>/dev/null | cut -c1-200
tail -n 3 "$work"/out/*.log
grep -h -A8 -E "^### (Batch augmentation|Quantization)" "$work"/out/*-report.md | head -40
echo "wall $(( SECONDS - start )) s"
