#!/usr/bin/env bash
# Issue 22 on one GPU of this host (items 2-5): the full phase profile, precision side by side (3 seeds), activation
# checkpointing on ResNet-50 at 224x224, and (part "utilization") the GPU-utilization settings on the digits
# enlarged to 50,000 training images. From the repository root, with $OUT set:
#   bash docs/results/training_techniques/run.sh <label> [profile,precision,ckpt,utilization,utilization_jpeg]
# Run one part per device call where a part may take minutes (utilization: 12 points of 50,000 images each epoch);
# each launch stops after LAUNCH_LIMIT_S (default 480) and whatever finished is packed.
# Results land as $OUT/<label>-<part>.tgz (the sweeps' results, logs and telemetry; models dropped).
set -euo pipefail
label=$1
parts=${2:-profile,precision,ckpt,utilization}
hpml=(python -m hpml.launcher.cli)
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv | tee "$OUT/$label-gpu.txt"
data=/tmp/hpml-digits  # one path on every machine (the report drops data_root from a configuration anyway)
[ -d "$data/digits" ] || "${hpml[@]}" data digits --root "$data/digits"

launch() {  # part, then the launch's arguments
    local part=$1; shift
    # stopped after LAUNCH_LIMIT_S so that what finished is still packed below (the device's command limit is 600 s)
    timeout "${LAUNCH_LIMIT_S:-480}" "${hpml[@]}" launch "$@" sweep.name="${part}_$label" sweep.root="$OUT/sweeps-$part" 2>&1 \
        | grep -v '^\[rank 0\]' || echo "hpml launch of $part failed: its results are kept as they are"
    rm -f "$OUT/sweeps-$part/latest"
    find "$OUT/sweeps-$part" -name model.pt -delete
    tar czf "$OUT/$label-$part.tgz" -C "$OUT/sweeps-$part" .
    rm -rf "$OUT/sweeps-$part"
}
[[ ,$parts, == *,profile,* ]] && launch profile experiment=phase_profile workload.data_root="$data/digits"
[[ ,$parts, == *,precision,* ]] && launch precision experiment=precision workload.data_root="$data/digits"
[[ ,$parts, == *,ckpt,* ]] && launch ckpt experiment=activation_ckpt
if [[ ,$parts, == *,utilization,* ]]; then
    [ -d "$data/digits50k" ] || "${hpml[@]}" data digits --root "$data/digits50k" --train-size 50000
    # UTILIZATION=<settings> runs only those (e.g. the ones a cut launch did not reach); default: every setting
    launch utilization experiment=gpu_utilization workload.data_root="$data/digits50k" \
        ${UTILIZATION:+utilization=$UTILIZATION}
fi
if [[ ,$parts, == *,utilization_jpeg,* ]]; then
    # the same settings on the 50,000 images as a JPEG folder: every host-path image is decoded from its file (the
    # ImageNet-style pipeline), a heavier host side than CIFAR-10's pickled arrays; the device path decodes the
    # folder once at start-up
    [ -d "$data/jpeg50k" ] || "${hpml[@]}" data digits --root "$data/jpeg50k_source" --train-size 50000 \
        --jpeg-folder "$data/jpeg50k"
    launch utilization_jpeg experiment=gpu_utilization workload.dataset=image_folder workload.data_root="$data/jpeg50k" \
        ${UTILIZATION_JPEG:+utilization=$UTILIZATION_JPEG}
fi
true
