#!/usr/bin/env bash
# Issue 36, item 6: the launched tta_digits worker's warm epochs (as a user runs it: `hpml launch`, torchrun,
# telemetry on) beside a plain loop in a process of its own, on one GPU of this host. From the repository root,
# with $OUT set and hydra-core, omegaconf, antlr4, submitit, orjson importable:
#   bash docs/results/tta_digits_device/launched/run.sh <label> [SEEDS] [EXTRA SWEEP ...]
# EXTRA SWEEP: name=override[,override...]: one more launched sweep with those overrides (e.g.
# telemetry_off=telemetry.enabled=false). BEFORE=DIR: also the preset on the code in DIR (git archive of the
# code folders of an older commit). The plain loop runs before and after the sweeps (drift favours neither).
set -euo pipefail
label=$1 seeds=${2:-0,1,2,3,4}
shift $(( $# >= 2 ? 2 : 1 ))
hpml=(python -m hpml.launcher.cli)
bench=(python tools/device_data_bench.py)
export PYTHONUNBUFFERED=1
n=$(( $(tr -cd , <<<"$seeds" | wc -c) + 1 ))
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv | tee "$OUT/$label-gpu.txt"
data=/tmp/hpml-tta-digits
rm -rf "$data"
"${hpml[@]}" data digits --root "$data/digits" >/dev/null
"${bench[@]}" plain --data-root "$data/digits" --seeds "$n" --out "$OUT/$label-plain1.json" | tail -2
launch() {  # name, overrides...
    local name=$1; shift
    "${hpml[@]}" launch experiment=tta_digits workload.data_root="$data/digits" resources.gpus_per_node="${GPUS:-1}" \
        "hydra.sweeper.params={sweep.seed: \"$seeds\"}" sweep.name="$name" sweep.root="$OUT/sweeps" "$@" | tail -1
}
launch preset
if [ -n "${BEFORE:-}" ]; then  # the same preset on an older checkout's code (code folders only), same machine
    PYTHONPATH="$PWD/$BEFORE:${PYTHONPATH:-}" launch before_preset
fi
for extra in "$@"; do
    IFS=, read -r -a overrides <<<"${extra#*=}"
    launch "${extra%%=*}" "${overrides[@]}"
done
"${bench[@]}" plain --data-root "$data/digits" --seeds "$n" --out "$OUT/$label-plain2.json" | tail -2
"${bench[@]}" launched "$OUT"/sweeps/*_*/ --plain "$OUT/$label-plain1.json" "$OUT/$label-plain2.json" \
    --out "$OUT/$label-launched.json" | tee "$OUT/$label-launched.txt"
rm -f "$OUT/sweeps/latest"
find "$OUT/sweeps" -name model.pt -delete
tar czf "$OUT/$label-sweeps.tgz" -C "$OUT/sweeps" .
rm -rf "$OUT/sweeps"
"${bench[@]}" profile --data-root "$data/digits" --epochs 4 --out "$OUT/$label-profile.json" >"$OUT/$label-profile.txt" 2>&1 \
    || tail -5 "$OUT/$label-profile.txt"
