#!/usr/bin/env bash
# Issue 22, item 1: the data-loader study (docs/studies/dataloader-workers.md) on one GPU node, on two data sets.
# From the repository root:
#   bash docs/results/dataloader_workers/run.sh h200          # one H200 and its 16 cores: about 6 minutes
# It writes the digits enlarged to TRAIN_SIZE images as CIFAR-10 batches and JPEG_SIZE of them as an image folder
# under $SCRATCH, checks the CUDA path (tests/test_dataloader_gpu.py, stops on failure), then on each data set runs
# experiment=$PRESET (the workers line at PyTorch's defaults) and the device path, then, while the time allows
# (BUDGET_S), the DataLoader's options at OPTIONS_WORKERS workers; and reports all of it into $DEST (default: this
# folder's <label>/): report/ (report.md, dataloader.csv, dataloader_workers.png, telemetry) and runs/ (the sweeps:
# results, configs, logs, telemetry sidecars). With $OUT set (the device runner), $DEST is packed into
# $OUT/<label>.tgz: a runner returns a limited number of files.
#
# Knobs (environment), the defaults being the H200 run's:
#   TRAIN_SIZE=50000 JPEG_SIZE=25000 PRESET=dataloader_workers OPTIONS_WORKERS=8 PIN=true BUDGET_S=360 EXTRA=""
#   DATASETS="cifar jpeg" (DATASETS=cifar: the CIFAR-10 batches only, when the device time is short)
#   LINES="workers device options" (LINES=options: only the DataLoader's options, e.g. after a run that skipped them;
#   they then run whatever BUDGET_S says)
# The same on a 2-core CPU (what docs/results/dataloader_workers/cpu_2core/ holds; no GPU check there):
#   TRAIN_SIZE=10000 JPEG_SIZE=10000 PRESET=dataloader_workers_cpu OPTIONS_WORKERS=2 PIN=false BUDGET_S=100000 \
#       bash docs/results/dataloader_workers/run.sh cpu_2core
# Time on 16 cores: ~12 s per point of process start-up (torchrun, imports, CUDA, NCCL: the gap between points of
# the time-to-accuracy runs on an H200) x 14 to 22 points, plus 3 epochs per point (1 warm-up) of 5-15 s at 0 and 1
# workers. The JPEG folder is half the CIFAR set's size (a JPEG costs ~2.5x a CIFAR image to decode) and the options
# run last, only when the elapsed time says they fit, so that the run stays near 6 minutes.
set -uo pipefail
label=${1:?usage: run.sh <label>}
here=$(cd "$(dirname "$0")" && pwd)
TRAIN_SIZE=${TRAIN_SIZE:-50000}
JPEG_SIZE=${JPEG_SIZE:-25000}
PRESET=${PRESET:-dataloader_workers}
OPTIONS_WORKERS=${OPTIONS_WORKERS:-8}
PIN=${PIN:-true}
BUDGET_S=${BUDGET_S:-360}
EXTRA=${EXTRA:-}
DATASETS=${DATASETS:-cifar jpeg}
SCRATCH=${SCRATCH:-/tmp/hpml-dataloader-$label}
if [ -n "${OUT:-}" ]; then DEST=${DEST:-$SCRATCH-dest}; else DEST=${DEST:-$here/$label}; fi
hpml=(python -m hpml.launcher.cli)
export PYTHONUNBUFFERED=1
failed=0 fastest_s=100000  # fastest_s: the shortest seconds per point of a launch so far (start-up + fast epochs)
step() { echo "== [$SECONDS s] $*"; }

rm -rf "$SCRATCH" && mkdir -p "$SCRATCH" "$DEST"
step "data: digits x $TRAIN_SIZE (CIFAR-10 batches), x $JPEG_SIZE (JPEG folder)"
"${hpml[@]}" data digits --root "$SCRATCH/cifar" --train-size "$TRAIN_SIZE" || exit 1
if [[ " $DATASETS " == *" jpeg "* ]]; then
    "${hpml[@]}" data digits --root "$SCRATCH/jpeg_source" --train-size "$JPEG_SIZE" --jpeg-folder "$SCRATCH/jpeg" || exit 1
fi
{ nproc; uptime; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null; } | tee "$DEST/host.txt"

if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
    step "the CUDA path: pinned batches, asynchronous copies, the device path on the GPU"
    python -m pytest -q -x -m gpu tests/test_dataloader_gpu.py -k pinned 2>&1 | tail -3
    [ "${PIPESTATUS[0]}" -eq 0 ] || { echo "the CUDA path fails: nothing measured"; exit 1; }
fi

launch() {  # one launch of the preset; a failed point is reported in the table, the script goes on
    local began=$SECONDS
    "${hpml[@]}" launch "experiment=$PRESET" "sweep.name=dataloader_workers_$label" "sweep.root=$SCRATCH/sweeps" \
        "$@" $EXTRA > "$SCRATCH/launch.log" 2>&1
    local rc=$?
    grep -v '^\[dataloader_workers_' "$SCRATCH/launch.log"  # the points' table, not the progress lines
    [ $rc -eq 0 ] || failed=1
    local points per_point
    points=$(grep -c '^[0-9]' "$SCRATCH/launch.log")
    per_point=$(( (SECONDS - began + points - 1) / (points > 0 ? points : 1) ))
    [ "$per_point" -lt "$fastest_s" ] && fastest_s=$per_point
}
cifar=(workload.dataset=cifar10 workload.data_root="$SCRATCH/cifar")
jpeg=(workload.dataset=image_folder workload.data_root="$SCRATCH/jpeg")
LINES=${LINES:-workers device options}
for data in $DATASETS; do
    declare -n dataset=$data
    if [[ " $LINES " == *" workers "* ]]; then
        step "$data: the workers line at PyTorch's defaults"
        launch "${dataset[@]}"
    fi
    if [[ " $LINES " == *" device "* ]]; then
        step "$data: the device path"
        launch "${dataset[@]}" workload.data_placement=device workload.loader_workers=0
    fi
done
for data in $DATASETS; do
    declare -n dataset=$data
    # 4 points at OPTIONS_WORKERS workers are about as fast as the fastest launch's points (the device path's)
    [[ " $LINES " == *" options "* ]] || continue
    if [[ " $LINES " == *" workers "* ]] && [ $((SECONDS + 4 * fastest_s + 15)) -gt "$BUDGET_S" ]; then
        step "$data: the options skipped: 4 points of ~$fastest_s s would pass BUDGET_S=$BUDGET_S"
        continue
    fi
    step "$data: pin_memory=$PIN, persistent_workers and prefetch_factor at $OPTIONS_WORKERS workers"
    launch "${dataset[@]}" workload.loader_workers="$OPTIONS_WORKERS" workload.pin_memory="$PIN" \
        workload.persistent_workers=false,true workload.prefetch_factor=null,4
done

step "report"
rm -f "$SCRATCH/sweeps/latest"
"${hpml[@]}" report "$SCRATCH/sweeps" --out "$DEST/report" | tail -60
rm -rf "$DEST/runs" && cp -r "$SCRATCH/sweeps" "$DEST/runs"  # runs/, not sweeps/ (which git ignores)
find "$DEST/runs" -maxdepth 2 -name jobs -type d -exec rm -rf {} +  # submitit's pickles: not results
if [ -n "${OUT:-}" ]; then tar czf "$OUT/$label.tgz" -C "$DEST" . && step "packed: $OUT/$label.tgz"; fi
step "done: $DEST"
exit $failed
