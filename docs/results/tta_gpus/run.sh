#!/usr/bin/env bash
# Issue 36, item 5: time and energy to 98 % on 1, 2 and 4 GPUs of this host, hpml's preset beside a plain DDP loop.
# From the repository root, with $OUT set and hydra-core, omegaconf, antlr4, submitit, orjson importable:
#   bash docs/results/tta_gpus/run.sh <label> [GPU COUNTS (default "1 2 4")]
# The plain loop (tools/plain_ddp_tta.py) runs 6 repeats per count in one process: the first is cold (cuDNN's
# autotuning, NCCL's set-up, as every hpml point's first epoch), the other 5 warm. Then `hpml launch
# experiment=tta_gpus` (5 seeds per count, one point at a time, each its own torchrun: all cold).
set -euo pipefail
label=$1 counts=${2:-1 2 4}
hpml=(python -m hpml.launcher.cli)
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,driver_version,power.limit --format=csv | tee "$OUT/$label-gpus.txt"
nvidia-smi topo -m | head -6 >>"$OUT/$label-gpus.txt" || true
data=/tmp/hpml-digits50k
rm -rf "$data"
"${hpml[@]}" data digits --root "$data" --train-size 50000 >/dev/null
for n in $counts; do
    torchrun --nproc_per_node "$n" tools/plain_ddp_tta.py --data-root "$data" --repeats 6 \
        --out "$OUT/$label-plain-$n.json" 2>&1 | grep '^{'
done
csv=$(tr ' ' , <<<"$counts")
"${hpml[@]}" launch experiment=tta_gpus workload.data_root="$data" sweep.name="tta_gpus_$label" \
    sweep.root="$OUT/sweeps" "hydra.sweeper.params={resources.gpus_per_node: \"$csv\", sweep.seed: \"0,1,2,3,4\"}" \
    | tail -2
rm -f "$OUT/sweeps/latest"
tar czf "$OUT/$label-sweeps.tgz" -C "$OUT/sweeps" .
rm -rf "$OUT/sweeps"
