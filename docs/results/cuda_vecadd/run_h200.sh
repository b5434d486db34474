#!/usr/bin/env bash
# The cuda_vecadd study on one GPU, with issue 14's bars: run from the repository root on a GPU machine.
#   OUT=/tmp/vecadd bash docs/results/cuda_vecadd/run_h200.sh
# Stages (STAGES="tests preset vec4 again nvrtc" by default):
#   tests   pytest -m gpu tests/test_cuda_vecadd_gpu.py (both build paths, sums checked; TESTS_K=-k expression)
#   preset  `hpml launch experiment=cuda_vecadd` with an empty build cache: the full grid, its wall time
#   vec4    many_blocks next to many_blocks_vec4 (4 elements a thread), explicit copies, K = 100 M, 5 repetitions
#   again   the preset again: every build a cache hit, 0 compile seconds
#   nvrtc   the preset with workload.build=nvrtc (the kernels through NVRTC, the host part in Python), plus
#           NVRTC_OVERRIDES (e.g. "workload.sizes_m=[1,10,100] workload.cpu_baseline=false")
# Every launch's sweep lands in $OUT/sweeps/; its wall time (the whole `hpml launch`, from the command to
# the last result) in $OUT/walls.txt. HPML is how hpml is started (the lent machines have no entry point).
set -uo pipefail
OUT=${OUT:-/tmp/cuda_vecadd}
HPML=${HPML:-"python3 -m hpml.launcher.cli"}
STAGES=${STAGES:-"tests preset vec4 again nvrtc"}
export HPML_CACHE_DIR=${HPML_CACHE_DIR:-$OUT/build-cache}
mkdir -p "$OUT/sweeps"
rm -rf "$HPML_CACHE_DIR"

launch() {  # launch NAME [overrides...]: one timed `hpml launch`, its log in $OUT/NAME.log
    local name=$1; shift
    local start end
    start=$(date +%s.%N)
    $HPML launch experiment=cuda_vecadd sweep.root="$OUT/sweeps" sweep.name="$name" "$@" >"$OUT/$name.log" 2>&1
    local rc=$?
    end=$(date +%s.%N)
    echo "$name rc=$rc wall_s=$(python3 -c "print(round($end - $start, 2))")" | tee -a "$OUT/walls.txt"
    cat "$OUT"/sweeps/*_"$name"/points/0/logs/torchrun.node0.out >>"$OUT/$name.log" 2>/dev/null
}

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv | tee "$OUT/gpu.txt"
for stage in $STAGES; do
    case $stage in
        tests) python3 -m pytest -q -m gpu tests/test_cuda_vecadd_gpu.py ${TESTS_K:+-k "$TESTS_K"} 2>&1 | tail -15 |
                   tee "$OUT/gpu_tests.txt" ;;
        preset) launch cuda_vecadd ;;
        vec4) launch cuda_vecadd_vec4 "workload.sizes_m=[100]" "workload.shapes=[many_blocks,many_blocks_vec4]" \
                  workload.memory=explicit workload.cpu_baseline=false workload.repetitions=5 ;;
        again) launch cuda_vecadd_again ;;
        nvrtc) launch cuda_vecadd_nvrtc workload.build=nvrtc ${NVRTC_OVERRIDES:-} ;;
        *) echo "unknown stage $stage" >&2; exit 2 ;;
    esac
done
