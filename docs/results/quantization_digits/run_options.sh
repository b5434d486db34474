#!/usr/bin/env bash
# Issue 24, the scale options on the same 5 models: experiment=quantization_digits swept over max-abs vs 3 sigma,
# plain vs power-of-two scales, per-tensor vs per-channel weights (8 configurations x 5 seeds, one timed pass each:
# accuracy is the point here; training on one CPU thread is deterministic, so every configuration quantizes the
# same 5 float models). Then its report.
#   bash docs/results/quantization_digits/run_options.sh [DIGITS_ROOT]      # default /tmp/digits
set -euo pipefail
root=${1:-/tmp/digits}
here=docs/results/quantization_digits/options
mkdir -p "$here"
[ -d "$root/cifar-10-batches-py" ] || hpml data digits --root "$root"
hpml launch -m experiment=quantization_digits workload.data_root="$root" sweep.root="$here" \
    sweep.name=quantization_digits_options workload.timing_warmup=0 workload.timing_repetitions=1 \
    workload.scale_method=maxabs,sigma workload.power_of_two=false,true \
    workload.weight_granularity=per_tensor,per_channel
sweep=$(realpath --relative-to=. "$(readlink -f "$here/latest")")
rm -f "$here/latest"
hpml report "$sweep" --out "$here/report"
