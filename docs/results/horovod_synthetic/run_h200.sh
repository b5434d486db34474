#!/usr/bin/env bash
# Issue 5, item 7: the Horovod-style synthetic benchmark, strong vs weak scaling, the all-reduce
# implementations and the all-reduce bandwidth, on one host with 1, 2 and 4 H200 GPUs, through hpml's local
# launcher (one torchrun per point), then `hpml report`. Ends within 9.5 minutes on 4 H200s.
#
#   bash docs/results/horovod_synthetic/run_h200.sh       # from anywhere; results in $OUT
#
# Environment: OUT (default ./h200_out) receives at most 8 files, none in a sub-folder:
#   report.md, synthetic_throughput.png, allreduce_busbw.png, bars.txt (the bars, checked), run.log (every
#   command and its time), horovod_synthetic_h200.tar.gz (every point's config.yaml, result.json and
#   logs; the whole report folder with its CSVs).
# GPUS, STAGES (default: all, in the order below), BUDGET_S (default 540) and DRY_RUN (=1: only check the
# command lines) as docs/results/lib/stages.sh says; a stage whose estimate does not fit the budget is skipped
# (listed in run.log and bars.txt) and can be run alone later, e.g. STAGES="collectives allreduce_n".
# PROTOCOL (default horovod): conf/protocol/ of the synthetic stages; tiny for a smoke test of this script.
# Python packages the CUDA image lacks (hydra-core, omegaconf, antlr4-python3-runtime, submitit) are
# installed from .whl/ when missing (see /work/.library/device/README.md).
#
# Stages, most important first (all of them take ~12 minutes on 4 H200s: two runs, e.g. STAGES="allreduce
# allreduce_env bar weak strong methods", then STAGES="collectives allreduce_n"):
#   1 allreduce   all-reduce busbw, 1 KiB .. 1 GiB float32 on N = max GPUs, impl=hpml (every iteration
#                 timed) and impl=raw (a bare torch.distributed.all_reduce loop) side by side, against the
#                 NVLink peak (hardware=h200_nvlink). Bars: busbw at 1 GiB >= 360 GB/s, hpml within 1 % of raw
#                 (issue 16; issue 5 asked 2 %).
#     allreduce_env  the same at 256 MiB .. 1 GiB under NCCL's tuning variables, each its own sweep name:
#                 default (NCCL_DEBUG_SUBSYS=INIT,TUNING logs the algorithm and channels chosen), NCCL_ALGO=Ring
#                 + NCCL_PROTO=Simple, NCCL_MIN_NCHANNELS=32, 64 channels (NCCL_MIN/MAX_NCHANNELS=64).
#   paired        the 3 % bar measured in one process: ResNet-50, Horovod's protocol on N = max (DDP), then
#                 PAIRED_ROUNDS (default 60) rounds of one 10-batch iteration of DDP and one of Horovod-style
#                 (64 MiB fusion) side by side, the order alternating (workload.paired_rounds, workloads/synthetic/paired.py);
#                 twice: DDP as torch sets it up (broadcast_buffers: BatchNorm buffers sent at every forward) and
#                 with gradients only, as Horovod-style (workload.ddp_broadcast_buffers=false).
#                 Bar: the median over rounds of the round-by-round ratio Horovod-style / DDP within 3 % of 1.
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
NAME=horovod_h200 BUDGET_S=${BUDGET_S:-540}
source "$(dirname "$0")/../lib/stages.sh"  # OUT, GPUS, STAGES, BUDGET_S, DRY_RUN; NS, MAXN, BELOW, LOG; stage()

GPU="resources.gpus_per_node=$GPUS"
HOROVOD="protocol=${PROTOCOL:-horovod} pricing=h200_cloud"
ITERS="workload.num_iters=${BAR_ITERS:-30}"  # stages bar and weak: 30 iterations of 10 batches, not 10
BIG="workload.min_bytes=268435456 workload.max_bytes=1073741824"  # 256 MiB, 512 MiB, 1 GiB

# Estimates in seconds, from the 4-GPU H200 run (a point: ~13 s of start-up, then its protocol).
stage allreduce 30 experiment=allreduce_vs_bare $GPU hardware=h200_nvlink resources.workers_per_node=$MAXN \
  workload.max_bytes=1073741824
# NCCL's own tuning knobs, each a sweep of its own (the variables are recorded in every result's environment):
# the default run logs the algorithm and channels NCCL chose; then Ring/Simple forced, then 32 channels.
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING stage allreduce_env.default 25 experiment=allreduce_vs_bare $GPU \
  hardware=h200_nvlink resources.workers_per_node=$MAXN $BIG sweep.name=allreduce_env_default
NCCL_ALGO=Ring NCCL_PROTO=Simple stage allreduce_env.ring_simple 25 experiment=allreduce_vs_bare $GPU \
  hardware=h200_nvlink resources.workers_per_node=$MAXN $BIG sweep.name=allreduce_env_ring_simple
NCCL_MIN_NCHANNELS=32 stage allreduce_env.channels32 25 experiment=allreduce_vs_bare $GPU hardware=h200_nvlink \
  resources.workers_per_node=$MAXN $BIG sweep.name=allreduce_env_channels32
# 64 channels: +9 % busbw at 1 GiB on 2 H200s (353.6 vs 322-326 GB/s, h200_2gpu_nccl_channels/)
NCCL_MIN_NCHANNELS=64 NCCL_MAX_NCHANNELS=64 stage allreduce_env.channels64 25 experiment=allreduce_vs_bare $GPU \
  hardware=h200_nvlink resources.workers_per_node=$MAXN $BIG sweep.name=allreduce_env_channels64
stage paired 100 experiment=synthetic_horovod $GPU $HOROVOD resources.workers_per_node=$MAXN \
  workload.data_parallel=ddp workload.paired_rounds=${PAIRED_ROUNDS:-60} sweep.name=synthetic_paired \
  workload.ddp_broadcast_buffers=true,false
for r in 0 1 2; do  # the bar: DDP then Horovod-style, 3 times over, so that a drift of the machine hits both
  stage bar 55 experiment=synthetic_horovod $GPU $HOROVOD $ITERS resources.workers_per_node=$MAXN sweep.repeat=$r
done
if [ -n "$BELOW" ]; then
  stage weak 55 experiment=synthetic_horovod $GPU $HOROVOD $ITERS resources.workers_per_node=$BELOW \
    workload.data_parallel=ddp
fi
stage strong 70 experiment=synthetic_scaling $GPU $HOROVOD resources.workers_per_node=$NS workload.scaling=strong \
  workload.batch_size=128
stage methods 110 experiment=synthetic_allreduce $GPU $HOROVOD resources.workers_per_node=$MAXN \
  workload.fusion_threshold_mb=0,25
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ENV stage collectives 130 experiment=synthetic_allreduce $GPU $HOROVOD \
  resources.workers_per_node=$MAXN workload.data_parallel=ddp workload.fusion_threshold_mb=64 \
  collective=gloo,nccl_ring,nccl_tree
if [ -n "$BELOW" ]; then
  stage allreduce_n 40 experiment=allreduce_vs_bare $GPU hardware=h200_nvlink resources.workers_per_node=$BELOW \
    workload.max_bytes=1073741824 workload.impl=hpml
fi

[ "$DRY_RUN" = 1 ] && exit 0
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
              f"bare loop {r:.1f} GB/s; hpml / bare = {h / r:.4f} (within 1 %: "
              f"{'PASS' if abs(h / r - 1) <= 0.01 else 'FAIL'}); utilization {at['utilization'].median():.1%} "
              f"of 450 GB/s per direction")
    else:
        print("all-reduce bar: no 1 GiB rows for both impls")
    for sweep, rows in bw[(bw["bytes"] == GiB) & bw["sweep"].str.startswith("allreduce_env_")].groupby("sweep"):
        rates = dict(zip(rows["impl"], rows["busbw_GBps"]))
        if {"hpml", "raw"} <= set(rates):
            h, r = rates["hpml"], rates["raw"]
            print(f"  {sweep} (same launch, N={maxn}): busbw at 1 GiB hpml {h:.1f}, bare {r:.1f} GB/s, hpml / bare "
                  f"{h / r:.4f} (>= 360: {'PASS' if h >= 360 else 'FAIL'}; within 1 %: "
                  f"{'PASS' if abs(h / r - 1) <= 0.01 else 'FAIL'})")
    for (n, sweep), rows in bw[(bw["bytes"] == GiB)].groupby(["world_size", "sweep"]):
        print(f"  N={n} {sweep}: busbw at 1 GiB "
              + ", ".join(f"{i} {v:.1f}" for i, v in zip(rows["impl"], rows["busbw_GBps"])))
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
    from hpml.analysis.results import load_results
    from hpml.analysis.synthetic.runs import synthetic_runs
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
    paired = pd.read_csv(report / "synthetic_paired.csv")
    for _, row in paired.sort_values(["world_size", "point"]).iterrows():
        verdict = f" (within 3 %: {'PASS' if abs(row['ratio_median'] - 1) <= 0.03 else 'FAIL'})" \
            if row["world_size"] == maxn else ""
        print(f"ResNet-50 on {row['world_size']} GPUs ({row['label'] or 'defaults'}), DDP and Horovod-style side by side "
              f"in one process ({row['rounds']} rounds of one iteration each, fusion {row['fusion_threshold_mb']:g} MiB): "
              f"DDP {row['ddp_median']:.0f}, Horovod-style {row['horovod_median']:.0f} images/s (medians); "
              f"Horovod-style / DDP median {row['ratio_median']:.4f} [{row['ratio_min']:.4f}, "
              f"{row['ratio_max']:.4f}]{verdict}")
except FileNotFoundError as error:
    print(f"no side-by-side table: {error}")
try:
    comparison = pd.read_csv(report / "synthetic_comparison.csv")
    for _, row in comparison[comparison["sweep"] == "synthetic_allreduce"].iterrows():
        print(f"  methods N={row['world_size']}: {row['backend']} {row['nccl_algo']} {row['data_parallel']} "
              f"{row['fusion_threshold_mb']:g} MiB: {row['throughput_median']:.0f} images/s "
              f"({row['vs_fastest']:.1%} of the fastest)")
except FileNotFoundError as error:
    print(f"no comparison table: {error}")
tuning = []  # what NCCL chose for the 1 GiB all-reduce and how many channels it built (default NCCL settings)
for log_file in sorted(root.glob("*_allreduce_env_default/points/*/logs/torchrun.node0.*")):
    for line in log_file.read_text(errors="replace").splitlines():
        text = line.split("NCCL INFO", 1)[-1].strip()
        if ("1073741824" in line or "coll channels" in line) and "NCCL INFO" in line and text not in tuning:
            tuning.append(text)
print("NCCL's choices at default settings (NCCL_DEBUG_SUBSYS=INIT,TUNING): "
      + (" | ".join(tuning[:6]) if tuning else "not seen in the logs"))
seen = {}
for log_file in sorted(root.glob("*_synthetic_allreduce/points/*/logs/torchrun.node0.*")):  # NCCL logs to stdout
    for line in log_file.read_text(errors="replace").splitlines():
        if "NCCL_ALGO set by environment" in line:
            seen[log_file.parent.parent.name] = line.split("NCCL INFO", 1)[-1].strip()
            break
print("NCCL took NCCL_ALGO from the environment: " + ("; ".join(f"point {p}: {l}" for p, l in sorted(seen.items()))
                                                      or "not seen in the logs"))
EOF
skipped_stages >>"$OUT/bars.txt"
cat "$OUT/bars.txt" | tee -a "$LOG"

finish_results horovod_synthetic_h200.tar.gz
echo "## done at $(( $(date +%s) - START ))s; $(du -sh "$OUT/horovod_synthetic_h200.tar.gz" | cut -f1) of results" \
  | tee -a "$LOG"
