"""Times `hpml report` over 10,000 train results made from one real quickstart result (issue 10, item 7;
issue 25, item 4).

    python tools/report_benchmark.py SWEEP_OR_RESULT_JSON [--results 10000] [--points-per-sweep 100]
                                     [--dir /tmp/hpml-report-bench] [--reuse] [--repeat 3]

Builds DIR/bench_<k>/points/<n>/result.json (--points-per-sweep points per sweep folder: 100 gives the
100 x 100 layout, 2 the 5,000 x 2 one) by copying the given result.json (or the first one under the given
sweep) with distinct sweep names and point numbers, and, so the report has several rows and lines to draw,
with 1, 2 or 4 workers per node and per-worker batch 16, 32 or 64 (the epoch and step times scaled by the
point's index, so no two rows are alike) and, so that each sweep is a configuration of its own (a line of
its own in the speedup plot), its own learning rate. Each sweep folder gets a manifest.json listing its
points, as a real sweep has. Then runs `python -m hpml.launcher.cli report DIR --out DIR/report` from the
repository root (--repeat times), and prints the wall seconds, the CPU seconds (user + system, the report's
child process that draws the figures included) and the peak resident memory of each run (ru_maxrss of the
child; Linux reports kilobytes), with the load average before it.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
POINTS_PER_SWEEP = 100
WORKERS = (1, 2, 4)
BATCHES = (16, 32, 64)


def source_result(path: Path) -> dict:
    if path.is_dir():
        path = sorted(path.rglob("result.json"))[0]
    return json.loads(path.read_text())


def varied(doc: dict, index: int, per_sweep: int) -> dict:
    """A copy of doc as point `index` of its sweep folder, with its own shape, batch and times."""
    doc = copy.deepcopy(doc)
    sweep, point = f"bench_{index // per_sweep:05d}", index % per_sweep
    workers, batch = WORKERS[point % len(WORKERS)], BATCHES[(point // len(WORKERS)) % len(BATCHES)]
    scale = 1 + (index % 97) / 1000
    doc["identity"].update(sweep=sweep, point=point)
    doc["config"]["sweep"]["name"] = sweep
    doc["config"]["resources"]["workers_per_node"] = workers
    doc["config"]["workload"]["batch_size"] = batch
    # each sweep its own configuration, as sweeps of a real study differ: 5,000 sweeps are 5,000 speedup lines
    workload = doc["config"]["workload"]
    workload["lr"] = round(workload["lr"] * (1 + (index // per_sweep) / 10_000), 9)
    doc["environment"]["world_size"] = workers
    m = doc["measurements"]
    m["per_worker_batch"] = m["per_device_batch"] = batch
    m["global_batch"], m["devices"] = batch * workers, workers
    for key in ("epoch_time_s", "train_time_s"):
        m[key] = [t * scale for t in m[key]]
    m["step_time_s"] = [[t * scale for t in epoch] for epoch in m["step_time_s"]]
    return doc


def build(source: dict, root: Path, count: int, per_sweep: int) -> None:
    if root.exists():
        shutil.rmtree(root)
    for index in range(count):
        doc = varied(source, index, per_sweep)
        sweep_dir = root / doc["identity"]["sweep"]
        folder = sweep_dir / "points" / str(doc["identity"]["point"])
        folder.mkdir(parents=True)
        (folder / "result.json").write_text(json.dumps(doc, indent=1))
        if doc["identity"]["point"] == 0:
            points = range(min(per_sweep, count - index))
            (sweep_dir / "manifest.json").write_text(json.dumps({
                "manifest_version": 1, "sweep": doc["identity"]["sweep"], "cluster": "local",
                "points": [{"point": p, "overrides": [f"bench.point={p}"], "job_id": f"local-{p}"} for p in points]}))


def time_report(root: Path) -> tuple[float, float, float, int]:
    """(wall seconds, CPU seconds (user + system), peak RSS in MB, exit status) of one `hpml report` run.
    The CPU seconds do not grow when other processes share the cores; the wall seconds do."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    child = subprocess.run([sys.executable, "-m", "hpml.launcher.cli", "report", str(root), "--out", str(root / "report")],
                           cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - start
    if child.returncode != 0:
        print(child.stderr, file=sys.stderr)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # cumulative over children: subtract the runs before
    cpu = usage.ru_utime + usage.ru_stime - before.ru_utime - before.ru_stime
    return seconds, cpu, usage.ru_maxrss / 1024, child.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="a quickstart sweep directory or one of its result.json files")
    parser.add_argument("--results", type=int, default=10_000)
    parser.add_argument("--points-per-sweep", type=int, default=POINTS_PER_SWEEP)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/hpml-report-bench"))
    parser.add_argument("--reuse", action="store_true", help="time the report over an existing --dir")
    parser.add_argument("--repeat", type=int, default=1, help="time the report this many times")
    args = parser.parse_args()
    if not args.reuse:
        build(source_result(args.source), args.dir, args.results, args.points_per_sweep)
    status = 0
    for _ in range(args.repeat):
        load = " ".join(f"{v:.2f}" for v in os.getloadavg())  # other work on the cores makes wall time grow
        seconds, cpu, peak_mb, status = time_report(args.dir)
        print(f"hpml report over {args.dir}: {seconds:.2f} s wall, {cpu:.2f} s CPU, peak RSS {peak_mb:.0f} MB, "
              f"exit {status} (load average before: {load})")
    return status


if __name__ == "__main__":
    sys.exit(main())
