#!/usr/bin/env bash
# Issue 14, items 4-5 (the hardware probe) on one GPU: the GPU tests of the probe's measuring functions, then
# `hpml launch experiment=probe` on GPU 0, then `hpml report`. docs/results/probe/README.md has the numbers.
#
#   OUT=<folder> bash docs/results/probe/run_h200.sh      # from anywhere; ~90 s on an H200
#
# Writes to OUT: run.log (every command and its time), gpu_tests.txt, probe_h200.tar.gz (the sweep: every
# point's config.yaml, result.json, telemetry sidecar and logs; the report folder). BUDGET_S (default 240),
# STAGES and DRY_RUN (=1: only check the command lines) as docs/results/lib/stages.sh says.
NAME=probe_h200 BUDGET_S=${BUDGET_S:-240}
source "$(dirname "$0")/../lib/stages.sh"  # OUT, GPUS, STAGES, BUDGET_S, DRY_RUN; LOG, WORK, ROOT; stage()

if [ "$DRY_RUN" != 1 ]; then
  echo "## GPU tests: python3 -m pytest -m gpu -v tests/test_probe_gpu.py" | tee -a "$LOG"
  timeout 150 python3 -m pytest -p no:cacheprovider -m gpu -v tests/test_probe_gpu.py 2>&1 | tee "$OUT/gpu_tests.txt"
fi
# Estimate for one H200: ~10 s of start-up; matmul 4 x (1 s warm-up + 20 rounds of 2 x 10 products, at least
# 1 s: fp32's take 8.4 s); copy, triad and 4 host transfers, each 1 s of warm-up + 1 s timed.
stage probe 60 experiment=probe
[ "$DRY_RUN" = 1 ] && exit 0
tail -n 12 "$ROOT"/*/points/*/logs/*.out | tee -a "$LOG"
hpml report "$ROOT" --out "$WORK/report" >>"$LOG" 2>&1
finish_results probe_h200.tar.gz
echo "## done at $(( $(date +%s) - START ))s" | tee -a "$LOG"
