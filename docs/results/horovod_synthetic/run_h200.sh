#!/usr/bin/env bash
# Issue 5, item 7: the Horovod-style synthetic benchmark, strong vs weak scaling, the all-reduce
# implementations and the all-reduce bandwidth, on one host with 1, 2 and 4 H200 GPUs, through hpml's local
# launcher (one torchrun per point), then `hpml report`. Ends within 6 minutes on 4 H200s.
#
#   bash docs/results/horovod_synthetic/run_h200.sh       # from anywhere; results in $OUT
#
# Environment: OUT (default ./h200_out) receives at most 8 files, none in a sub-folder:
#   report.md, synthetic_throughput.png, allreduce_busbw.png, bars.txt (the bars, checked), run.log (every
#   command and its time), horovod_synthetic_h200.tar.gz (every point's config.yaml, result.json and
#   logs; the whole report folder with its CSVs).
# GPUS (default: all that nvidia-smi lists, at most 4) picks N in {1, 2, 4} <= GPUS.
# BUDGET_S (default 250): a stage that would start after this many seconds is skipped (listed as skipped
# in run.log and bars.txt), so the run ends in time even on a slow start.
# STAGES (default: all): the names of the stages to run, e.g. STAGES="allreduce bar".
# PROTOCOL (default horovod): conf/protocol/ of the synthetic stages; tiny for a smoke test of this script.
# Python packages the CUDA image lacks (hydra-core, omegaconf, antlr4-python3-runtime, submitit) are
# installed from .whl/ when missing (see /work/.library/device/README.md).
#
# Stages, most important first (a default run takes stages 1-4; the rest, item 4 on GPUs, in a second run
# of about 3 minutes: STAGES="collectives methods allreduce_n" bash docs/results/horovod_synthetic/run_h200.sh):
#   1 allreduce   all-reduce busbw, 1 KiB .. 1 GiB float32 on N = max GPUs, impl=hpml (every iteration
#                 timed) and impl=raw (a bare torch.distributed.all_reduce loop) side by side, against the
#                 NVLink peak (hardware=h200_nvlink). Bars: busbw at 1 GiB >= 360 GB/s, hpml within 2 % of raw.
#   2 bar         Horovod's protocol (ResNet-50, 224x224, batch 32 per GPU, 10 warm-up batches, iterations of
#                 10 batches) with 30 iterations instead of 10 (BAR_ITERS): a 2-GPU check and a first 4-GPU
#                 run saw a per-iteration CV of 4-6 %, too coarse for a 3 % comparison with 10. On N = max:
#                 DDP then Horovod-style (fusion 64 MiB), three launches (sweep.repeat=0,1,2), so the two
#                 alternate and a drift of the machine hits both alike; priced at pricing=h200_cloud.
#                 Bar: Horovod-style images/s within 3 % of DDP's (medians over all 90 iterations of each).
#   3 weak        the same sweep name and protocol at N = 1, 2 (DDP): one weak-scaling table over 1, 2, 4.
#   4 strong      a global batch of 128 (128, 64, 32 per GPU) at N = 1, 2, 4, DDP.
#   5 collectives N = max: gloo, NCCL Ring, NCCL Tree (DDP, 64 MiB), with NCCL_DEBUG=INFO (subsystem ENV), so
#                 the logs show NCCL taking NCCL_ALGO from the environment (bars.txt).
#   6 methods     N = max: DDP vs Horovod-style at 0 (no fusion) and 25 MiB buckets. Stages 5 and 6 share
#                 one sweep name: one comparison table (stage 2 has DDP and Horovod-style at 64 MiB).
#   7 allreduce_n all-reduce busbw at N = 1 and 2 (impl=hpml).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1  # never NVLink multicast
export PYTHONUNBUFFERED=1

REPO=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$REPO" || exit 1
OUT=${OUT:-$REPO/h200_out}
mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/horovod_h200.XXXXXX)
ROOT=$WORK/sweeps
LOG=$OUT/run.log
START=$(date +%s)
BUDGET_S=${BUDGET_S:-250}

if ! python3 -c "import hydra, omegaconf, submitit" 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    .whl/*.whl || { echo "missing hydra/omegaconf/submitit and no usable .whl/" | tee -a "$LOG"; exit 1; }
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONPATH=$REPO${PYTHONPATH:+:$PYTHONPATH}

GPUS=${GPUS:-$(nvidia-smi -L | wc -l)}
[ "$GPUS" -gt 4 ] && GPUS=4
case $GPUS in 1) NS=1;; 2|3) NS=1,2; GPUS=2;; *) NS=1,2,4; GPUS=4;; esac
MAXN=${NS##*,}
BELOW=$([ "$NS" = 1 ] || echo "${NS%,*}")  # the worker counts below the largest ("" on one GPU)

{
  echo "# run_h200.sh $(date -u +%FT%TZ) on $(hostname); GPUs used: $GPUS (N = $NS); budget ${BUDGET_S}s"
  echo "# commit $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  nvidia-smi topo -m 2>/dev/null | head -n $((GPUS + 1))
  python3 -c "import torch, torchvision; print('torch', torch.__version__, 'torchvision', torchvision.__version__, 'cuda', torch.version.cuda, 'nccl', torch.cuda.nccl.version())"
} 2>&1 | tee "$LOG"

hpml() { python3 -m launcher.cli "$@"; }

# stage NAME -- hpml launch arguments...: runs one launch unless the budget is spent; logs its time.
stage() {
  local name=$1; shift
  local now=$(( $(date +%s) - START ))
  if [ -n "${STAGES:-}" ] && [[ " $STAGES " != *" $name "* ]]; then
    echo "## stage $name: SKIPPED (not in STAGES=$STAGES)" | tee -a "$LOG"
    return
  fi
  if [ "$now" -ge "$BUDGET_S" ]; then
    echo "## stage $name: SKIPPED (elapsed ${now}s >= budget ${BUDGET_S}s)" | tee -a "$LOG"
    return
  fi
  echo "## stage $name at ${now}s: hpml launch $*" | tee -a "$LOG"
  local t0=$(date +%s)
  hpml launch "$@" sweep.root="$ROOT" >>"$LOG" 2>&1
  echo "## stage $name: exit $? after $(( $(date +%s) - t0 ))s" | tee -a "$LOG"
}

GPU="resources.gpus_per_node=$GPUS"
HOROVOD="protocol=${PROTOCOL:-horovod} pricing=h200_cloud"
ITERS="workload.num_iters=${BAR_ITERS:-30}"  # stages bar and weak: 30 iterations of 10 batches, not 10

stage allreduce experiment=allreduce_vs_bare $GPU hardware=h200_nvlink resources.workers_per_node=$MAXN \
  workload.max_bytes=1073741824
for r in 0 1 2; do  # the bar: DDP then Horovod-style, 3 times over, so that a drift of the machine hits both
  stage bar experiment=synthetic_horovod $GPU $HOROVOD $ITERS resources.workers_per_node=$MAXN sweep.repeat=$r
done
if [ -n "$BELOW" ]; then
  stage weak experiment=synthetic_horovod $GPU $HOROVOD $ITERS resources.workers_per_node=$BELOW \
    workload.data_parallel=ddp
fi
stage strong experiment=synthetic_scaling $GPU $HOROVOD resources.workers_per_node=$NS workload.scaling=strong \
  workload.batch_size=128
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ENV stage collectives experiment=synthetic_allreduce $GPU $HOROVOD \
  resources.workers_per_node=$MAXN workload.data_parallel=ddp workload.fusion_threshold_mb=64 \
  collective=gloo,nccl_ring,nccl_tree
stage methods experiment=synthetic_allreduce $GPU $HOROVOD resources.workers_per_node=$MAXN \
  workload.fusion_threshold_mb=0,25
if [ -n "$BELOW" ]; then
  stage allreduce_n experiment=allreduce_vs_bare $GPU hardware=h200_nvlink resources.workers_per_node=$BELOW \
    workload.max_bytes=1073741824 workload.impl=hpml
fi

echo "## report at $(( $(date +%s) - START ))s: hpml report $ROOT --out $WORK/report" | tee -a "$LOG"
hpml report "$ROOT" --out "$WORK/report" >/dev/null 2>>"$LOG"
for f in report.md synthetic_throughput.png allreduce_busbw.png; do cp "$WORK/report/$f" "$OUT/$f" 2>/dev/null; done

# The bars, read back from the report's CSV tables (every number recomputed there from the raw arrays).
python3 - "$WORK/report" "$LOG" "$ROOT" "$MAXN" >"$OUT/bars.txt" 2>&1 <<'EOF'
import sys
from pathlib import Path

import pandas as pd

report, log, root, maxn = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])
print(f"H200 bars (issue 5, item 7), from {report}")
GiB = 1073741824
try:
    bw = pd.read_csv(report / "allreduce.csv")
    at = bw[(bw["bytes"] == GiB) & (bw["world_size"] == maxn) & (bw["sweep"] == "allreduce_vs_bare")]
    hpml, raw = at[at["impl"] == "hpml"]["busbw_GBps"], at[at["impl"] == "raw"]["busbw_GBps"]
    if len(hpml) and len(raw):
        h, r = hpml.median(), raw.median()
        print(f"all-reduce 1 GiB on {maxn} GPUs: busbw hpml {h:.1f} GB/s (>= 360: {'PASS' if h >= 360 else 'FAIL'}), "
              f"bare loop {r:.1f} GB/s; hpml / bare = {h / r:.4f} (within 2 %: "
              f"{'PASS' if abs(h / r - 1) <= 0.02 else 'FAIL'}); utilization {at['utilization'].median():.1%} "
              f"of 450 GB/s per direction")
    else:
        print("all-reduce bar: no 1 GiB rows for both impls")
    for n, rows in bw[(bw["bytes"] == GiB)].groupby("world_size"):
        print(f"  N={n}: busbw at 1 GiB " + ", ".join(f"{i} {v:.1f}" for i, v in zip(rows["impl"], rows["busbw_GBps"])))
except FileNotFoundError as error:
    print(f"no all-reduce table: {error}")
try:
    scaling = pd.read_csv(report / "synthetic_scaling.csv", keep_default_na=False, na_values=[""])
    scaling["label"] = scaling["label"].fillna("")
    weak = scaling[scaling["sweep"] == "synthetic_horovod"]
    ddp = weak[(weak["label"] == "data_parallel=ddp") & (weak["world_size"] == maxn)]["throughput_median"]
    hvd = weak[(weak["label"] == "data_parallel=horovod") & (weak["world_size"] == maxn)]["throughput_median"]
    if len(ddp) and len(hvd):
        ratio = hvd.iloc[0] / ddp.iloc[0]
        print(f"ResNet-50 on {maxn} GPUs (Horovod's protocol, batch 32/GPU, fusion 64 MiB; medians over every "
              f"iteration of every run): Horovod-style {hvd.iloc[0]:.0f} images/s, DDP {ddp.iloc[0]:.0f}; ratio "
              f"{ratio:.4f} (within 3 %: {'PASS' if abs(ratio - 1) <= 0.03 else 'FAIL'})")
    from analysis.results import load_results
    from analysis.synthetic import synthetic_runs
    import statistics
    runs = synthetic_runs(load_results(root).rows).rows
    bar = runs[(runs["sweep"] == "synthetic_horovod") & (runs["world_size"] == maxn)]
    for repeat, pair in bar.groupby("repeat"):
        rates = {row["data_parallel"]: statistics.median(row["totals"]) for _, row in pair.iterrows()}
        if {"ddp", "horovod"} <= set(rates):
            print(f"  run {repeat}: DDP {rates['ddp']:.0f}, Horovod-style {rates['horovod']:.0f} images/s, "
                  f"ratio {rates['horovod'] / rates['ddp']:.4f}")
    for _, row in scaling.sort_values(["sweep", "label", "world_size"]).iterrows():
        print(f"  {row['sweep']} {row['scaling']} {row['label'] or ''} N={row['world_size']}: "
              f"{row['throughput_median']:.0f} images/s (CV {row['throughput_cv']:.2%}, {row['runs']} run(s)), efficiency "
              f"{row['efficiency']:.1%}, epoch {row['epoch_time_s'] / 60:.1f} min, ${row['epoch_cost_usd']:.2f}/epoch")
except FileNotFoundError as error:
    print(f"no synthetic scaling table: {error}")
try:
    comparison = pd.read_csv(report / "synthetic_comparison.csv")
    for _, row in comparison[comparison["sweep"] == "synthetic_allreduce"].iterrows():
        print(f"  methods N={row['world_size']}: {row['backend']} {row['nccl_algo']} {row['data_parallel']} "
              f"{row['fusion_threshold_mb']:g} MiB: {row['throughput_median']:.0f} images/s "
              f"({row['vs_fastest']:.1%} of the fastest)")
except FileNotFoundError as error:
    print(f"no comparison table: {error}")
seen = {}
for log_file in sorted(root.glob("*_synthetic_allreduce/points/*/logs/torchrun.node0.*")):  # NCCL logs to stdout
    for line in log_file.read_text(errors="replace").splitlines():
        if "NCCL_ALGO set by environment" in line:
            seen[log_file.parent.parent.name] = line.split("NCCL INFO", 1)[-1].strip()
            break
print("NCCL took NCCL_ALGO from the environment: " + ("; ".join(f"point {p}: {l}" for p, l in sorted(seen.items()))
                                                      or "not seen in the logs"))
skipped = [line for line in log.read_text().splitlines() if "SKIPPED" in line]
print("\n".join(skipped) if skipped else "all stages ran")
EOF
cat "$OUT/bars.txt" | tee -a "$LOG"

tar -C "$WORK" -czf "$OUT/horovod_synthetic_h200.tar.gz" sweeps report
echo "## done at $(( $(date +%s) - START ))s; $(du -sh "$OUT/horovod_synthetic_h200.tar.gz" | cut -f1) of results" \
  | tee -a "$LOG"
