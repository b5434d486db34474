#!/usr/bin/env bash
# Issue 12 (GPU telemetry) on one host with 2 H200s: the GPU self-tests, the sampling loop's cost, the
# overhead bar (telemetry on at 100 ms vs off, ResNet-50 on one GPU) and a 2-GPU DDP run with both GPUs'
# series and energy. docs/results/gpu_telemetry/README.md has the numbers.
#
#   OUT=<folder> [STAGES="tests overhead ddp"] bash docs/results/gpu_telemetry/run_h200.sh      # from the repository root
#
# Writes to OUT: gpu_tests.txt, overhead.json, ddp<N>.tgz (the DDP sweep folder; N = 2, or 1 on a 1-GPU host).
# Python packages the CUDA image lacks (hydra-core, omegaconf, antlr4, submitit) come from .whl/.
set -uo pipefail
STAGES_FUNCTIONS_ONLY=1 source "$(dirname "${BASH_SOURCE[0]}")/../lib/stages.sh"  # the set-up functions alone
no_nvlink_multicast
export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
cd "$REPO" || exit 1
OUT=${OUT:-$REPO/h200_out}
mkdir -p "$OUT"
wheels_if_missing
on_pythonpath "$REPO"
STAGES=${STAGES:-tests overhead ddp}
START=$(date +%s)
at() { echo "## $1 at $(( $(date +%s) - START )) s"; }

nvidia-smi --query-gpu=index,name,uuid,pci.bus_id,driver_version,power.limit,clocks.max.sm --format=csv
python3 -c "import importlib.metadata as m, torch; print('nvidia-ml-py', m.version('nvidia-ml-py'), 'torch', torch.__version__)"

if [[ " $STAGES " == *" tests "* ]]; then
  at "GPU self-tests: python3 -m pytest -m gpu -v -s tests/test_telemetry_gpu.py"
  timeout 300 python3 -m pytest -p no:cacheprovider -m gpu -v -s tests/test_telemetry_gpu.py 2>&1 | tee "$OUT/gpu_tests.txt"
fi
if [[ " $STAGES " == *" overhead "* ]]; then
  at "loop cost and overhead: python3 tools/telemetry_overhead.py --out OUT/overhead.json"
  timeout 240 python3 tools/telemetry_overhead.py --out "$OUT/overhead.json"
fi
[[ " $STAGES " == *" ddp "* ]] || { at "done"; exit 0; }

# DDP on 2 GPUs where there are 2 (else 1 GPU): 100 steps of 256 images per GPU and epoch, 4 epochs
N=$(nvidia-smi -L | wc -l); [ "$N" -gt 2 ] && N=2
at "$N-GPU DDP ResNet-50 with telemetry (hpml launch)"
timeout 240 python3 -m hpml.launcher.cli launch experiment=hw5_resnet50_bar resources.gpus_per_node=$N \
  resources.workers_per_node=$N workload.epochs=4 workload.synthetic_samples=$(( 25600 * N )) \
  workload.comm_probe_steps=0 workload.profile_comm_steps=0 workload.overhead_check_steps=0 sweep.root=/tmp/gt \
  sweep.name=ddp${N}_telemetry
rm -f /tmp/gt/*/points/*/checkpoint.pt
tar czf "$OUT/ddp$N.tgz" -C /tmp/gt --exclude=latest .
at "done"
