#!/usr/bin/env bash
# Issue 4, item 9: the batch size x GPU count study and the H200 performance bars, on one host with
# 1, 2 and 4 H200 GPUs, through hpml's local launcher (one torchrun per point), then `hpml report`.
#
#   bash docs/results/hw5_scaling/run_h200.sh            # from the repository root; results in $OUT
#
# Environment: OUT (default ./h200_out) receives at most 8 files, 2 folders deep at most:
#   report.md, speedup.png, bars.txt (the bars, checked), run.log (every command and its time),
#   hw5_h200_results.tar.gz (every point's config.yaml, result.json, logs; the whole report folder with
#   its CSV and LaTeX tables).
# GPUS (default: all that nvidia-smi lists, at most 4) picks N in {1, 2, 4} <= GPUS; BAR_NS (default 1,4)
# the N of the ResNet-50 bar stage (N = 2 is in the ddp stage's ResNet-18 study; BAR_NS=1,2,4 adds ~70 s).
# STAGES (default: all, in the order below), BUDGET_S (default 450) and DRY_RUN (=1: only check the command
# lines) as docs/results/lib/stages.sh says: a stage starts only if the seconds elapsed plus its estimate
# (EST_<stage>, from the 1- and 4-GPU H200 runs) stay within the budget; a skipped stage is listed in run.log
# and bars.txt and can be run alone afterwards (e.g. STAGES=limit,large).
# BAR_EXTRA (default workload.compile=default; before result schema 2: workload.compile=true): overrides of stage bar. On one H200 the eager loop ran at
# 4,577 images/s and the compiled one at 6,536 (docs/results/hw5_scaling/README.md); BAR_EXTRA= (empty)
# measures eager.
# Python packages the CUDA image lacks (hydra-core, omegaconf, antlr4-python3-runtime, submitit) are
# installed from .whl/ when they are missing (see /work/.library/device/README.md).
#
# Stages, most important first:
#   bar    ResNet-50, synthetic data on the GPU, bf16 + channels_last (+ torch.compile), batch 256/GPU,
#          N = 1,4 (DDP, weak scaling): images/s with instrumentation, plain vs instrumented side by side,
#          weak-scaling efficiency; comm probe and NCCL kernel time
#   ddp    hw5_scaling: CIFAR-shaped ResNet-18 (CIFAR stem), batch 32,128,512 per GPU x N = 1,2,4, comm
#          probe (no_sync vs synced) + profiler NCCL time, h200_nvlink peak for the utilization
#   dp     the same with nn.DataParallel over 1, 2, 4 GPUs, batch 32, 128 and 512 per GPU (issue 16)
#   limit  one GPU, batch 8192 and 32768 (the last does not fit: status oom, "does not fit"), each point
#          probing the largest batch that fits (doubling until out of memory)
#   large  hw5_large_batch: per-GPU batch 2048 on all GPUs (global 8192), 5 epochs: lr_scaling=none, and
#          linear with warm-up 0 and 2 epochs: epoch-5 loss and accuracy
NAME=hw5_h200 BUDGET_S=${BUDGET_S:-450}
source "$(dirname "$0")/../lib/stages.sh"  # OUT, GPUS, STAGES, BUDGET_S, DRY_RUN; NS, MAXN, LOG, ROOT; stage()
BAR_NS=${BAR_NS:-$( [ "$MAXN" = 1 ] && echo 1 || echo "1,$MAXN" )}  # the bars need N = 1 and N = 4

# Estimates, seconds on 4 H200s (a point: ~13 s of start-up + its epochs, ~25 s in all; a compiled ResNet-50
# point ~60 s with the 5 x 40-step overhead check).
EST_bar=${EST_bar:-130} EST_ddp=${EST_ddp:-230} EST_dp=${EST_dp:-220} EST_limit=${EST_limit:-60}
EST_large=${EST_large:-90}

GPU="resources.gpus_per_node=$GPUS hardware=h200_nvlink"
HW5="workload.synthetic_samples=8192 workload.comm_probe_steps=20 workload.profile_comm_steps=5"

stage bar "$EST_bar" experiment=hw5_resnet50_bar $GPU resources.workers_per_node=$BAR_NS \
  ${BAR_EXTRA-workload.compile=default}
stage ddp "$EST_ddp" experiment=hw5_scaling $GPU $HW5 resources.workers_per_node=$NS workload.batch_size=32,128,512
stage dp "$EST_dp" experiment=hw5_scaling $GPU $HW5 workload.parallel=dp resources.workers_per_node=1 \
  workload.dp_devices=$NS workload.batch_size=32,128,512
stage limit "$EST_limit" experiment=hw5_batch_limit resources.gpus_per_node=1 workload.synthetic_samples=32768 \
  workload.batch_size=8192,32768 workload.max_batch_probe=131072
stage large.none $(( EST_large / 3 )) experiment=hw5_large_batch $GPU resources.workers_per_node=$MAXN \
  workload.batch_size=2048 workload.synthetic_samples=50000 workload.lr_scaling=none workload.warmup_epochs=0
stage large.linear $(( EST_large * 2 / 3 )) experiment=hw5_large_batch $GPU resources.workers_per_node=$MAXN \
  workload.batch_size=2048 workload.synthetic_samples=50000 workload.lr_scaling=linear workload.warmup_epochs=0,2

[ "$DRY_RUN" = 1 ] && exit 0
echo "## report at $(( $(date +%s) - START ))s: hpml report $ROOT --out $WORK/report" | tee -a "$LOG"
hpml report "$ROOT" --out "$WORK/report" >/dev/null 2>>"$LOG"
cp "$WORK/report/report.md" "$OUT/report.md" 2>/dev/null
cp "$WORK/report/speedup.png" "$OUT/speedup.png" 2>/dev/null

# The bars, read back from the report's CSV tables (numbers recomputed there from the raw arrays).
python3 - "$WORK/report" >"$OUT/bars.txt" 2>&1 <<'EOF'
import json
import sys
from pathlib import Path

import pandas as pd

report = Path(sys.argv[1])
print("H200 bars (issue 4, item 9), from", report)
try:
    overhead = pd.read_csv(report / "train_overhead.csv")
    time = pd.read_csv(report / "scaling.csv")  # the epoch time and speedup table (train_time.csv before 0a21758)
except FileNotFoundError as error:
    sys.exit(f"no table: {error}")
def compiled(path=None, group_key=None):
    config = json.loads(Path(path).read_text())["config"]["workload"] if path else json.loads(group_key)
    return "compiled" if config.get("compile", config.get("workload.compile")) else "eager"


bar = overhead[overhead["sweep"] == "hw5_resnet50_bar"].sort_values("devices")
for _, row in bar[bar["devices"] == 1].iterrows():
    rate, ovh = row["instrumented_samples_per_s"], row["overhead"]
    print(f"1 GPU ({compiled(row['path'])}), instrumented loop: {rate:.0f} images/s (>= 4600: "
          f"{'PASS' if rate >= 4600 else 'FAIL'}); plain loop {row['plain_samples_per_s']:.0f} images/s; overhead "
          f"{ovh * 100:.2f} % (<= 2 %: {'PASS' if ovh <= 0.02 else 'FAIL'}); {row['blocks']} blocks x "
          f"{row['steps_per_block']} steps")
for _, row in bar.iterrows():
    print(f"  N={row['devices']} ({compiled(row['path'])}): plain {row['plain_samples_per_s']:.0f}, instrumented "
          f"{row['instrumented_samples_per_s']:.0f} images/s (all GPUs), overhead {row['overhead'] * 100:.2f} %")
scaling = time[(time["sweep"] == "hw5_resnet50_bar") & (time["parallel"] == "ddp") & time["fits"]]
for _, row in scaling.sort_values("devices").iterrows():
    verdict = f" (>= 97%: {'PASS' if row['efficiency'] >= 0.97 else 'FAIL'})" if row["devices"] == 4 else ""
    print(f"DDP weak scaling N={row['devices']} ({compiled(group_key=row['group_key'])}): "
          f"{row['samples_per_s']:.0f} images/s over the epoch, step {row['step_mean_s'] * 1e3:.2f} ms, "
          f"speedup {row['speedup']:.3f}, efficiency {row['efficiency'] * 100:.2f} %{verdict}")
EOF
skipped_stages >>"$OUT/bars.txt"
cat "$OUT/bars.txt" | tee -a "$LOG"

finish_results hw5_h200_results.tar.gz
echo "## done at $(( $(date +%s) - START ))s; $(du -sh "$OUT/hw5_h200_results.tar.gz" | cut -f1) of results" | tee -a "$LOG"
