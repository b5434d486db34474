#!/usr/bin/env bash
# Issue 24, a model kept by a time-to-accuracy run: experiment=tta_digits (hpml_cnn: 3 convolutions with batch
# norm, a global average pool) on this CPU for 3 seeds, each keeping points/<n>/model.pt; then each model
# quantized (batch norm folded into its convolution, the average pool in integers) with workload.model_path, one
# point per model, the calibration draw of seed 0. Then one report of both sweeps.
#   bash docs/results/quantization_digits/run_tta_models.sh [DIGITS_ROOT]      # default /tmp/digits
set -euo pipefail
root=${1:-/tmp/digits}
here=docs/results/quantization_digits/tta_models
mkdir -p "$here"
[ -d "$root/cifar-10-batches-py" ] || hpml data digits --root "$root"
hpml launch -m experiment=tta_digits workload.data_root="$root" sweep.root="$here" sweep.seed=0,1,2
tta=$(realpath --relative-to=. "$(readlink -f "$here/latest")")
models=$(ls "$tta"/points/*/model.pt | paste -sd, -)
hpml launch -m experiment=quantization_digits workload.data_root="$root" sweep.root="$here" \
    sweep.name=quantization_tta_models sweep.seed=0 workload.model=hpml_cnn workload.model_path="$models"
rm -f "$here/latest"
hpml report "$here" --out "$here/report"      # both sweeps: the TTA tables and the quantization
