"""Scheduler calls per minute while `hpml launch` waits on a SLURM sweep that stays queued (issue 35, item 2).

Launches, side by side, one waiting sweep per size (default 1,000 and 10 points) of a trivial workload, held in
the queue with sbatch's --begin an hour ahead, each `hpml launch` with a PATH whose squeue/sacct/sbatch/... are
shims that log each call and exec the real command (tools/slurm_call_counter.py: real calls to the real
controller, counted). After --minutes, each launch gets SIGINT (it stops waiting, the jobs stay), the jobs are
cancelled and the calls made while waiting (after the launch's last sbatch) are counted: per minute over the
whole wait, and at steady state (from --steady-after seconds into the wait to its end).

Usage (README.md beside this file):  flock /tmp/slurm-measure.lock python docs/results/slurm_polling/measure.py
  [--sizes 1000 10] [--minutes 5] [--pythonpath DIR]   (--pythonpath: the hpml checkout to measure)
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tools"))
from slurm_call_counter import counting_path, read_calls  # noqa: E402

HELD = "cluster.sbatch_extra.begin=now+60minutes"


def start(size: int, folder: Path, pythonpath: str) -> subprocess.Popen:
    folder.mkdir(parents=True)
    env = {**os.environ, "PATH": counting_path(folder / "bin", folder / "calls.log"), "PYTHONPATH": pythonpath}
    args = [sys.executable, "-m", "hpml.launcher.cli", "launch", "-m", "cluster=slurm", "sweep.wait=true",
            "cluster.partition=short", "resources.time_min=1", HELD, f"workload.lr=range(1,{size + 1})"]
    # SIGINT back to its default: a shell's background job (`... &`) starts with it ignored, and python then
    # installs no KeyboardInterrupt handler, so the SIGINT that ends the wait would be lost
    return subprocess.Popen(args, cwd=folder, env=env, stdout=open(folder / "launch.out", "w"),
                            stderr=subprocess.STDOUT, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def summary(folder: Path, ended: float, steady_after_s: float) -> dict:
    calls = read_calls(folder / "calls.log")
    sbatch = [i for i, (_, command, _) in enumerate(calls) if command == "sbatch"]
    waiting = calls[sbatch[-1] + 1:]
    began = calls[sbatch[-1]][0]
    steady = [c for c in waiting if c[0] >= began + steady_after_s]
    manifest = json.loads(next(folder.glob("sweeps/*/manifest.json")).read_text())
    wait_min, steady_min = (ended - began) / 60, (ended - began - steady_after_s) / 60
    return {"points": len(manifest["points"]), "arrays": len(manifest["submissions"]),
            "submission_calls": dict(Counter(c for _, c, _ in calls[:sbatch[-1] + 1])),
            "wait_s": round(ended - began, 1), "wait_calls": dict(Counter(c for _, c, _ in waiting)),
            "wait_calls_per_min": round(len(waiting) / wait_min, 2),
            "steady_calls": dict(Counter(c for _, c, _ in steady)),
            "steady_calls_per_min": round(len(steady) / steady_min, 2),
            "pauses_s": [round(b[0] - a[0], 1) for a, b in zip(waiting, waiting[1:])],
            "arrays_cancelled": [s["job_id"] for s in manifest["submissions"]]}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10])
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--steady-after", type=float, default=120.0, help="seconds into the wait")
    parser.add_argument("--pythonpath", default=str(REPO))
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("measured.json"))
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="hpml-polling-"))
    launches = {size: start(size, root / str(size), args.pythonpath) for size in args.sizes}
    time.sleep(args.minutes * 60)
    ended = time.time()
    results = {}
    for size, launch in launches.items():
        launch.send_signal(signal.SIGINT)  # stops the waiting only; the jobs stay queued
        try:
            launch.wait(60)
        except subprocess.TimeoutExpired:
            launch.kill()
        results[size] = summary(root / str(size), ended, args.steady_after)
        subprocess.run(["scancel", *results[size]["arrays_cancelled"]], check=False)
    version = subprocess.run(["sinfo", "--version"], capture_output=True, text=True).stdout.strip()
    document = {"command": " ".join(sys.argv), "slurm": version, "pythonpath": args.pythonpath,
                "minutes": args.minutes, "steady_after_s": args.steady_after, "sweeps": results}
    args.out.write_text(json.dumps(document, indent=1) + "\n")
    for size, r in results.items():
        print(f"{size:>5} points, {r['arrays']:>2} arrays: {r['wait_calls_per_min']:.2f} calls/min over "
              f"{r['wait_s']:.0f} s of waiting {r['wait_calls']}, {r['steady_calls_per_min']:.2f}/min at steady "
              f"state {r['steady_calls']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
