#!/usr/bin/env bash
# Issue 21 on one GPU of this host: the device data path beside a plain loop and the host path (one process),
# ResNet-18 images/s with on-device augmentation vs synthetic_device, then experiment=tta_digits on the device
# path (its 10 seeds) and on the host path (5 seeds). From the repository root, with $OUT set:
#   bash docs/results/tta_digits_device/run.sh <label>
set -euo pipefail
label=$1
hpml=(python -m hpml.launcher.cli)
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv | tee "$OUT/$label-gpu.txt"
data=/tmp/hpml-tta-digits  # one path on every machine (the report drops data_root from a configuration anyway)
rm -rf "$data"
"${hpml[@]}" data digits --root "$data/digits" --ood "$data/ood"
python -m pytest -q -m gpu tests/test_device_data.py 2>&1 | tail -3
python tools/device_data_bench.py epoch --data-root "$data/digits" --rounds 3 --epochs 8 --out "$OUT/$label-epoch.json" \
    2>&1 | grep -v '^\[rank 0\]'
python tools/device_data_bench.py throughput --rounds 2 --epochs 4 --out "$OUT/$label-throughput.json" \
    2>&1 | grep -v '^\[rank 0\]'
"${hpml[@]}" launch experiment=tta_digits workload.data_root="$data/digits" resources.gpus_per_node=1 \
    sweep.name="tta_digits_device_$label" sweep.root="$OUT/sweeps"
"${hpml[@]}" launch experiment=tta_digits workload.data_root="$data/digits" resources.gpus_per_node=1 \
    workload.data_placement=host 'hydra.sweeper.params={sweep.seed: "0,1,2,3,4"}' \
    sweep.name="tta_digits_host_$label" sweep.root="$OUT/sweeps"
rm -f "$OUT/sweeps/latest"
for sweep in "$OUT"/sweeps/*/; do  # the models are not needed here; the results, logs and telemetry are
    find "$sweep" -name model.pt -delete
done
tar czf "$OUT/$label.tgz" -C "$OUT/sweeps" .
rm -rf "$OUT/sweeps"
