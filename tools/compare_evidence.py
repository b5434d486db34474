"""The A/A and A/B evidence for `hpml compare` (issue 34, item 4), from real launched sweeps on this machine.

    python tools/compare_evidence.py OUT_DIR [--repeats 20] [--draws 2000] [--sizes 3 5]
    python tools/compare_evidence.py OUT_DIR --launches 8 --repeats 5 [--draws 2000] [--sizes 2 3]

1. A/A: the same preset launched twice (A1, A2), `--repeats` repeats each, one after the other on an idle machine.
   The false-verdict rate is estimated by resampling the real repeats: each draw takes n repeats of A1 and n of
   A2 at random without replacement and runs the comparison's own statistics (analysis.stats) on
   each headline number; a verdict other than "no difference resolved" is a false one. Reported per n and metric;
   and the same within one launch (2n of A1's repeats split in two), which separates the statistic's own
   calibration from a launch-to-launch difference.
2. A/B: the same preset launched a third time beside processes that keep every core busy (B). `hpml compare A1 B`
   must say slower, and its ratio must agree with the ratio of the two sides' medians over all their repeats.

With --launches K (K launches of the preset, one after the other, `--repeats` each; then B as above), the A/A
evidence is about launches, the unit a user repeats:
- the spread of a launch's mean (relative sd, method of moments on the logarithms: the variance of the launches'
  means less the repeats' variance / repeats), what `hpml compare --launch-sd` adds where a side holds one launch;
- launches as the unit (both sides two or more launches): each draw splits k + k distinct launches at random,
  each launch one value (its geometric mean); the false-verdict rate per k;
- one launch a side (the repeats the unit): each draw takes two distinct launches and n of each one's repeats, with
  and without the launch component (--launch-sd default and 0); the false-verdict rate per n.

Writes OUT_DIR/sweeps (the sweeps), OUT_DIR/evidence.json and prints it.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from hpml.analysis.compare.comparisons import load_side
from hpml.analysis.compare.metrics import HEADLINES
from hpml.analysis.compare.report import LAUNCH_SD_PCT
from hpml.analysis.stats import compare_values, geometric_mean

PRESET = ["experiment=tiny/train", "workload.model=hpml_cnn", "workload.epochs=3"]


def launch(root: Path, name: str, repeats: int) -> Path:
    args = [sys.executable, "-m", "hpml.launcher.cli", "launch", "-m", *PRESET, f"sweep.name={name}",
            f"sweep.repeat={','.join(map(str, range(repeats)))}", f"sweep.root={root}"]
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"launch {name} failed: {done.stderr[-2000:]}")
    (sweep,) = [d for d in root.iterdir() if d.name.endswith(name)]
    return sweep


def _busy(stop_at: float) -> None:
    # a session of its own: with the kernel's autogroup scheduling (sched_autogroup_enabled=1 here) CPU time is
    # shared between sessions first, and the launched point runs in a session of its own; hogs sharing one session
    # took one group's share and did not slow it down at all (a first attempt measured 1.02x)
    os.setsid()
    while time.time() < stop_at:
        pass


def values(sweep: Path) -> dict:
    docs, _ = load_side(str(sweep))
    return {m.name: [m.value(doc) for doc in docs] for m in HEADLINES["train"] if not m.time_to_accuracy
            and all(m.value(doc) is not None for doc in docs)}


def better_of(metric: str) -> str:
    return next(m.better for m in HEADLINES["train"] if m.name == metric)


def split_false_rate(a: dict, n: int, draws: int, rng: random.Random) -> dict:
    """Within one launch: 2n of its repeats drawn at random and split in two sides of n."""
    rates = {}
    for metric, values in a.items():
        wrong = 0
        for _ in range(draws):
            drawn = rng.sample(values, 2 * n)
            wrong += compare_values(drawn[:n], drawn[n:], better_of(metric)).verdict in ("better", "worse")
        rates[metric] = wrong / draws
    return rates


def false_rate(a: dict, b: dict, n: int, draws: int, rng: random.Random) -> dict:
    rates = {}
    for metric in a:
        wrong = sum(compare_values(rng.sample(a[metric], n), rng.sample(b[metric], n), better_of(metric)).verdict
                    in ("better", "worse") for _ in range(draws))
        rates[metric] = wrong / draws
    return rates


def launch_sd(launches: list) -> float:
    """The relative sd of a launch's mean: var(launch means of the logs) - mean within-launch var / repeats."""
    logs = [[math.log(v) for v in values] for values in launches]
    means = [statistics.fmean(x) for x in logs]
    within = statistics.fmean(statistics.variance(x) / len(x) for x in logs)
    return math.sqrt(max(0.0, statistics.variance(means) - within))


def wrong(result) -> bool:
    return result.verdict in ("better", "worse")


def launch_evidence(per_launch: list, sizes: list, draws: int, rng: random.Random, sds=(LAUNCH_SD_PCT, 0.0)) -> dict:
    """per_launch: one {metric: repeat values} per launch."""
    out = {"launch_sd": {}, "launch_unit": {}, "one_launch_a_side": {}}
    for metric in per_launch[0]:
        launches = [launch[metric] for launch in per_launch]
        better = better_of(metric)
        out["launch_sd"][metric] = launch_sd(launches)
        means = [geometric_mean(values) for values in launches]
        for k in sizes:
            if 2 * k > len(means):
                continue
            false = sum(wrong(compare_values(*(lambda d: (d[:k], d[k:]))(rng.sample(means, 2 * k)), better))
                        for _ in range(draws))
            out["launch_unit"].setdefault(k, {})[metric] = false / draws
        n = min(len(v) for v in launches)
        for pct in sds:
            sd = pct / 100
            counts = 0
            for _ in range(draws):
                i, j = rng.sample(range(len(launches)), 2)
                counts += wrong(compare_values(rng.sample(launches[i], n), rng.sample(launches[j], n), better,
                                               launch_sd=sd))
            out["one_launch_a_side"].setdefault(f"n={n}, --launch-sd {pct:g}", {})[metric] = counts / draws
    return out


def launches_main(args) -> int:
    root = args.out / "sweeps"
    root.mkdir(parents=True, exist_ok=True)
    if args.reuse:  # the statistics again over launches made before (OUT_DIR/sweeps/*_aa_<i>)
        sweeps = [next(root.glob(f"*_aa_{i}")) for i in range(args.launches)]
    else:
        sweeps = [launch(root, f"aa_{i}", args.repeats) for i in range(args.launches)]
    per_launch = [values(sweep) for sweep in sweeps]
    common = set.intersection(*(set(v) for v in per_launch))
    per_launch = [{m: v[m] for m in sorted(common)} for v in per_launch]
    evidence = {"launches": args.launches, "repeats": args.repeats, "draws": args.draws,
                "sweeps": [s.name for s in sweeps], **launch_evidence(per_launch, args.sizes, args.draws,
                                                                     random.Random(0), args.launch_sds)}
    (args.out / "evidence.json").write_text(json.dumps(evidence, indent=1, default=str))
    print(json.dumps(evidence, indent=1, default=str))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--draws", type=int, default=2000)
    parser.add_argument("--sizes", type=int, nargs="+", default=[3, 5])
    parser.add_argument("--launches", type=int, default=0, help="K launches of the A/A preset (the launch evidence)")
    parser.add_argument("--reuse", action="store_true", help="--launches: read OUT_DIR's launches, launch none")
    parser.add_argument("--launch-sds", type=float, nargs="+", default=[LAUNCH_SD_PCT, 0.0],
                        help="--launches: the --launch-sd values (%%) to try one launch a side with")
    args = parser.parse_args()
    if args.launches:
        return launches_main(args)
    root = args.out / "sweeps"
    root.mkdir(parents=True, exist_ok=True)
    a1 = launch(root, "aa_1", args.repeats)
    a2 = launch(root, "aa_2", args.repeats)
    cores = 2 * multiprocessing.cpu_count()  # hogs, each its own session: the point gets about 2/5 of the cores
    stop_at = time.time() + 3600
    hogs = [multiprocessing.Process(target=_busy, args=(stop_at,), daemon=True) for _ in range(cores)]
    for hog in hogs:
        hog.start()
    try:
        b = launch(root, "ab_busy", args.repeats)
    finally:
        for hog in hogs:
            hog.terminate()
    va1, va2, vb = values(a1), values(a2), values(b)
    rng = random.Random(0)
    evidence = {"repeats": args.repeats, "draws": args.draws, "cores_kept_busy": cores,
                "aa_false_verdict_rate": {n: false_rate(va1, va2, n, args.draws, rng) for n in args.sizes},
                "within_launch_false_verdict_rate": {n: split_false_rate(va1, n, args.draws, rng)
                                                     for n in args.sizes if 2 * n <= args.repeats},
                "aa_all_repeats": {m: compare_values(va1[m], va2[m], better_of(m)).__dict__ for m in va1},
                "ab": {}}
    for metric in va1:
        result = compare_values(va1[metric], vb[metric], better_of(metric))
        evidence["ab"][metric] = {**result.__dict__,
                                  "median_ratio": statistics.median(vb[metric]) / statistics.median(va1[metric])}
    (args.out / "evidence.json").write_text(json.dumps(evidence, indent=1, default=str))
    print(json.dumps(evidence, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
