"""How steadily does a time-to-accuracy recipe reach its target? Epochs to target over many seeds, per recipe and
target, with hpml's own training loop (the train workload's train(), in-process, one GPU or the CPU).

    python tools/tta_recipe_search.py --data-root DIGITS [--seeds 20] [--out search.json] [KEY=V1,V2 ...]

Each recipe (a combination of the workload overrides given, e.g. workload.lr=0.05,0.1 workload.lr_decay_epochs=6,10)
runs experiment=tta_digits for every seed with no target and every epoch evaluated (the cap: the schedule's
length + 2); afterwards, for each target in --targets, epochs to target is the first evaluation at or above it, not
before epoch 2 (the workload's stop rule). Printed per recipe and target: converged / seeds, mean epochs, CoV
(sample std, ddof = 1, over the converged seeds) and the lowest final top-1 (the margin a target needs). This is
how the preset's recipe was chosen (docs/results/tta_digits_device/README.md); the chosen recipe is then run as
the preset itself, through `hpml launch`, on 10 seeds.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

sys.path.insert(0, str(REPO / "tools"))  # its sibling script, not a package
from device_data_bench import hpml_run, process_group, workload  # noqa: E402

from hpml.launcher.config_store import register_schemas  # noqa: E402


def epochs_to(top1, target):
    return next((i + 1 for i, value in enumerate(top1) if value >= target and i + 1 >= 2), None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-root", required=True)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--targets", default="0.95,0.955,0.96,0.965,0.97,0.975")
    parser.add_argument("--out", type=Path)
    parser.add_argument("grid", nargs="*", help="workload.KEY=V1,V2,... (the recipes: every combination)")
    args = parser.parse_args()
    register_schemas()
    ctx = process_group()
    keys = [item.split("=", 1)[0] for item in args.grid]
    values = [item.split("=", 1)[1].split(",") for item in args.grid]
    targets = [float(t) for t in args.targets.split(",")]
    report = []
    for combo in itertools.product(*values):
        overrides = [f"{k}={v}" for k, v in zip(keys, combo)]
        base = workload(["experiment=tta_digits", f"workload.data_root={args.data_root}", *overrides])
        cap = int(base.lr_decay_epochs) + 2 if base.lr_decay_epochs else base.epochs
        common = ["experiment=tta_digits", f"workload.data_root={args.data_root}", *overrides,
                  f"workload.epochs={cap}", "workload.target_accuracy=null", "workload.save_model=false",
                  "telemetry.enabled=false"]
        curves = [hpml_run(workload(common), ctx, seed).top1 for seed in range(args.seeds)]
        rows = {}
        for target in targets:
            reached = [e for e in (epochs_to(c, target) for c in curves) if e is not None]
            cov = statistics.stdev(reached) / statistics.fmean(reached) if len(reached) > 1 else None
            rows[target] = {"converged": len(reached), "epochs": reached,
                            "mean": statistics.fmean(reached) if reached else None, "cov": cov}
            print(f"{' '.join(overrides):60s} target {target:.3f}: {len(reached):2d}/{len(curves)} converged, "
                  f"epochs {statistics.fmean(reached) if reached else float('nan'):.2f}, CoV "
                  f"{cov if cov is not None else float('nan'):.3f}", flush=True)
        finals = [c[-1] for c in curves]
        print(f"{' '.join(overrides):60s} final top-1 min {min(finals):.4f} median {statistics.median(finals):.4f}",
              flush=True)
        report.append({"overrides": overrides, "cap": cap, "curves": curves, "targets": rows})
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
