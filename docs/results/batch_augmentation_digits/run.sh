#!/usr/bin/env bash
# Issue 23 on one GPU: experiment=batch_augmentation_digits (ResNet-44 on the digits, Cutout, M = 1, 2, 4, 8, 16,
# 3 seeds each, the device path, to the preset's target with its epoch cap), then `hpml report` (validation error
# against epoch per M, epochs and time to target, epoch time, samples/s, the per-step cost factor of M, GPU
# telemetry), the figure of two training images before and after Cutout, and the cost factors printed. From the
# repository root:
#   OUT=<folder> bash docs/results/batch_augmentation_digits/run.sh h200 [more hpml overrides]
# Budget: about 8 minutes on one H200 (15 points of at most 30 epochs of 22 steps; estimate in README.md); the
# launch is stopped after LAUNCH_LIMIT_S (default 540 s) and the report made from what finished.
# DIGITS=<a folder holding cifar-10-batches-py/ of `hpml data digits`> uses those instead of writing them here.
# Check on a CPU first, at a tiny size (ResNet-8, 2 epochs, M = 1 and 2, one seed; ~1 min on 2 cores):
#   PRESET=batch_augmentation_digits_tiny GPUS=0 OUT=/tmp/ba_check bash docs/results/batch_augmentation_digits/run.sh cpu
set -euo pipefail
label=${1:?give a label, e.g. h200}
shift
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
cd "$REPO"
OUT=${OUT:?set OUT to the folder that receives the files}
PRESET=${PRESET:-batch_augmentation_digits}
GPUS=${GPUS:-1}
mkdir -p "$OUT"
STAGES_FUNCTIONS_ONLY=1 source "$REPO/docs/results/lib/stages.sh"  # the set-up functions alone
export PYTHONUNBUFFERED=1
no_nvlink_multicast
wheels_if_missing  # a bare GPU machine: the carried wheels
on_pythonpath "$REPO"
log=$OUT/$label.log
{
  echo "# $(basename "$0") $(date -u +%FT%TZ) on $(hostname); git HEAD $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  nvidia-smi --query-gpu=name,memory.total,driver_version,power.limit --format=csv,noheader 2>/dev/null || echo "no GPU"
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
} 2>&1 | tee "$log"
WORK=$(mktemp -d /tmp/batch_aug.XXXXXX)
data=/tmp/hpml-digits  # one path on every machine (the report drops data_root from a configuration anyway)
rm -rf "$data"
if [ -n "${DIGITS:-}" ]; then  # digits written elsewhere (`hpml data digits --root DIGITS`), e.g. no scikit-learn here
  mkdir -p "$data" && cp -r "$DIGITS" "$data/digits"
else
  hpml data digits --root "$data/digits" --ood "$data/ood" | tee -a "$log"
fi
python3 tools/cutout_figure.py --data-root "$data/digits" --out "$OUT/cutout.png" --indices 0 1 --seed 0 | tee -a "$log"
start=$(date +%s)
rc=0
# timeout runs a program, not the shell function hpml: the launcher spelled out
timeout -k 10 "${LAUNCH_LIMIT_S:-540}" python3 -m hpml.launcher.cli launch "experiment=$PRESET" \
  workload.data_root="$data/digits" resources.gpus_per_node="$GPUS" sweep.name="${PRESET}_$label" \
  sweep.root="$WORK/sweeps" "$@" >>"$log" 2>&1 || rc=$?
echo "# launch: exit $rc after $(( $(date +%s) - start )) s" | tee -a "$log"
rm -f "$WORK/sweeps/latest"
hpml report "$WORK/sweeps" --out "$WORK/report" >"$WORK/report.txt" 2>&1 || echo "# report: exit $?" | tee -a "$log"
# The per-step cost of M against M x the single-copy step, from the report's table (batch_augmentation.csv)
python3 - "$WORK/report/batch_augmentation.csv" <<'PY' | tee -a "$log"
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r.get("copies")]
print("M  runs  step time mean [ms]  step cost / (M x single-copy step)  epochs to target  images/s")
for r in rows:
    print(f"{r['copies']:>2} {r['runs']:>5} {float(r['step_time_s_mean']) * 1e3:20.2f} {r['step_cost_factor']:>35} "
          f"{r['epochs_mean']:>17} {float(r['images_per_s_mean']):9.0f}")
PY
cp "$WORK/report/report.md" "$OUT/$label-report.md"
tar czf "$OUT/$label.tgz" -C "$WORK" sweeps report report.txt
rm -rf "$WORK"
