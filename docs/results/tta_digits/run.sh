#!/usr/bin/env bash
# Time to accuracy on one GPU of this host (issue 13): experiment=tta_digits, 5 seeds, then the 5 models on the
# out-of-distribution digits. Run from the repository root, with the digits and the OOD folder already written
# (`hpml data digits --root .devdata/digits --ood .devdata/ood` on a machine with scikit-learn) and $OUT set:
#   bash docs/results/tta_digits/run.sh <label>
set -euo pipefail
label=$1
hpml=(python -m hpml.launcher.cli)
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv | tee "$OUT/$label-gpu.txt"
"${hpml[@]}" launch experiment=tta_digits workload.data_root="$PWD/.devdata/digits" resources.gpus_per_node=1 \
    sweep.name="tta_digits_$label" sweep.root="$OUT/sweeps"
sweep=$(readlink -f "$OUT/sweeps/latest")
"${hpml[@]}" evaluate "$sweep" --images .devdata/ood --out "$sweep/evaluate"
rm -f "$OUT/sweeps/latest"
tar czf "$OUT/$label.tgz" -C "$OUT/sweeps" .
