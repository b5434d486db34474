#!/usr/bin/env bash
# Issue 22, item 1: the data-loader study (docs/studies/dataloader-workers.md) on one GPU node, both data sets.
# From the repository root:
#   bash docs/results/dataloader_workers/run.sh h200          # one H200 and its 16 cores: about 6 minutes
# It writes the digits enlarged to TRAIN_SIZE images as CIFAR-10 batches and JPEG_SIZE of them as an image folder
# under $SCRATCH, checks the CUDA path (tests/test_dataloader_gpu.py), runs experiment=$PRESET's three launches
# (the workers line at PyTorch's defaults, the options at OPTIONS_WORKERS workers, the device path) on each data
# set, and reports all of them into $DEST (default $OUT/<label> when $OUT is set, else this folder's <label>/):
# report/ (report.md, dataloader.csv, dataloader_workers.png, telemetry) and sweeps/ (results, configs, logs).
#
# Knobs (environment), the defaults being the H200 run's:
#   TRAIN_SIZE=50000 JPEG_SIZE=25000 PRESET=dataloader_workers OPTIONS_WORKERS=8 PIN=true EXTRA=""
# A check of the script on a CPU (tiny sizes, what a 2-core machine allows; no GPU test):
#   TRAIN_SIZE=2000 JPEG_SIZE=1438 PRESET=dataloader_workers_cpu OPTIONS_WORKERS=2 PIN=false \
#       bash docs/results/dataloader_workers/run.sh cpu_check
# Time on 16 cores: ~12 s per point of process start-up (torchrun, imports, CUDA, NCCL: the time_to_accuracy runs'
# gap between points on an H200) x 18 points, plus the epochs (3 per point, 1 warm-up): the JPEG folder is half the
# CIFAR set's size to keep the whole under ~6 minutes; samples/s is what the report compares.
set -uo pipefail
label=${1:?usage: run.sh <label>}
here=$(cd "$(dirname "$0")" && pwd)
TRAIN_SIZE=${TRAIN_SIZE:-50000}
JPEG_SIZE=${JPEG_SIZE:-25000}
PRESET=${PRESET:-dataloader_workers}
OPTIONS_WORKERS=${OPTIONS_WORKERS:-8}
PIN=${PIN:-true}
EXTRA=${EXTRA:-}
SCRATCH=${SCRATCH:-/tmp/hpml-dataloader-$label}
if [ -n "${OUT:-}" ]; then DEST=${DEST:-$OUT/$label}; else DEST=${DEST:-$here/$label}; fi
hpml=(python -m launcher.cli)
export PYTHONUNBUFFERED=1
failed=0
step() { echo "== [$SECONDS s] $*"; }

rm -rf "$SCRATCH" && mkdir -p "$SCRATCH" "$DEST"
step "data: digits x $TRAIN_SIZE (CIFAR-10 batches), x $JPEG_SIZE (JPEG folder)"
"${hpml[@]}" data digits --root "$SCRATCH/cifar" --train-size "$TRAIN_SIZE" || exit 1
"${hpml[@]}" data digits --root "$SCRATCH/jpeg_source" --train-size "$JPEG_SIZE" --jpeg-folder "$SCRATCH/jpeg" || exit 1
{ nproc; uptime; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null; } | tee "$DEST/host.txt"

if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
    step "the CUDA path: pinned memory, asynchronous copies, the device path on the GPU"
    python -m pytest -q -m gpu tests/test_dataloader_gpu.py 2>&1 | tail -3
fi

launch() {  # one launch of the preset on one data set; a failed point is reported, the script goes on
    "${hpml[@]}" launch "experiment=$PRESET" "sweep.name=dataloader_workers_$label" "sweep.root=$SCRATCH/sweeps" \
        "$@" $EXTRA > "$SCRATCH/launch.log" 2>&1
    local rc=$?
    grep -v '^\[dataloader_workers_' "$SCRATCH/launch.log"  # the points' table, not the progress lines
    [ $rc -eq 0 ] || failed=1
}
for data in "cifar10 $SCRATCH/cifar" "image_folder $SCRATCH/jpeg"; do
    set -- $data
    dataset=(workload.dataset="$1" workload.data_root="$2")
    step "$1: the workers line at PyTorch's defaults"
    launch "${dataset[@]}"
    step "$1: pin_memory=$PIN, persistent_workers and prefetch_factor at $OPTIONS_WORKERS workers"
    launch "${dataset[@]}" workload.loader_workers="$OPTIONS_WORKERS" workload.pin_memory="$PIN" \
        workload.persistent_workers=false,true workload.prefetch_factor=null,4
    step "$1: the device path"
    launch "${dataset[@]}" workload.data_placement=device workload.loader_workers=0
done

step "report"
rm -f "$SCRATCH/sweeps/latest"
"${hpml[@]}" report "$SCRATCH/sweeps" --out "$DEST/report" | tail -60
rm -rf "$DEST/sweeps" && cp -r "$SCRATCH/sweeps" "$DEST/sweeps"
find "$DEST/sweeps" -maxdepth 2 -name jobs -type d -exec rm -rf {} +  # submitit's pickles: not results
step "done: $DEST"
exit $failed
