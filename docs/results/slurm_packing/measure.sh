#!/usr/bin/env bash
# Many small points per job (issue 35 item 5): N tiny CPU points (experiment=tiny/probe, one worker each) on the
# 2-node test cluster (tests/slurm/cluster.sh), with cluster.points_per_job=K, timed from `hpml launch` to the
# last point's end (sweep.wait=true polls every 2 s). Prints one line: N, K, jobs queued, results, wall seconds.
#   flock /tmp/slurm-measure.lock bash docs/results/slurm_packing/measure.sh N K
set -euo pipefail
N=$1 K=$2
# A packed job asks for K x resources.time_min; the debug partition's MaxTime is 60. And at least 5 minutes for
# K=1: SLURM may send the time-limit warning (USR2 at limit - 30 s) up to a minute early, and a requeued 1-minute
# job measured the requeue, not the point.
TIME=$(( K == 1 ? 5 : 60 / K ))
WORK=$(mktemp -d /tmp/hpml-packing-XXXX)
cd "$WORK"
start=$(date +%s.%N)
python -m hpml.launcher.cli launch -m experiment=tiny/probe cluster=slurm cluster.poll_s=2 resources.time_min="$TIME" \
    cluster.points_per_job="$K" "sweep.repeat=range(0,$N)" sweep.name="pack_n${N}_k${K}" >"$WORK/launch.log" 2>&1 \
    || { tail -n 5 "$WORK/launch.log"; exit 1; }
end=$(date +%s.%N)
python - "$WORK" "$N" "$K" "$start" "$end" <<'PY'
import json, pathlib, sys
work, n, k, start, end = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
(manifest,) = [m for m in pathlib.Path(work).glob("sweeps/*/manifest.json") if m.parent.name != "latest"]
points = json.loads(manifest.read_text())["points"]
jobs = {p["job_id"] for p in points}
done = sum((manifest.parent / "points" / str(p["point"]) / "result.json").exists() for p in points)
print(f"N={n} K={k} jobs_queued={len(jobs)} results={done} wall_s={end - start:.1f} sweep={manifest.parent}")
PY
