"""The table of docs/results/tta_gpus/README.md: hpml's time and energy to target per GPU count (from the report's
tta.csv and tta_energy.csv) beside the plain DDP loop's (plain-<n>.json of tools/plain_ddp_tta.py).

    python docs/results/tta_gpus/summary.py docs/results/tta_gpus/h100x4 docs/results/tta_gpus/h100x4/report
"""

import json
import statistics
import sys
from pathlib import Path

import pandas as pd


def olympic(values):
    """MLPerf's olympic mean: the lowest and highest dropped (5 runs -> the middle 3)."""
    values = sorted(values)
    return statistics.mean(values[1:-1]) if len(values) > 2 else statistics.mean(values)


def spread(values):
    return f"{statistics.mean(values):.2f} ± {statistics.stdev(values):.2f}"


def main(runs: Path, report: Path) -> None:
    tta = pd.read_csv(report / "tta.csv")
    energy = pd.read_csv(report / "tta_energy.csv")
    print("| GPUs | hpml: converged | hpml TTA [s] olympic (mean ± sd) | hpml energy to target [J] olympic "
          "(mean ± sd) | plain: converged | plain TTA [s] olympic (mean ± sd), warm runs | plain energy [J] olympic "
          "(mean ± sd), warm runs | plain cold run [s, J] |")
    print("|---|---|---|---|---|---|---|---|")
    for (_, t), (_, e) in zip(tta.iterrows(), energy.iterrows()):
        gpus = int(e["gpus_held"])
        plain = json.loads((runs / f"plain-{gpus}.json").read_text())["runs"]
        cold, warm = plain[0], plain[1:]
        seconds, joules = [r["seconds"] for r in warm], [r["energy_j"] for r in warm]
        print(f"| {gpus} | {t['converged']}/{t['runs']} | {t['tta_s_olympic']:.2f} ({t['tta_s_mean']:.2f} ± "
              f"{t['tta_s_std']:.2f}) | {e['energy_j_olympic']:,.0f} ({e['energy_j_mean']:,.0f} ± "
              f"{e['energy_j_std']:,.0f}) | {sum(r['converged'] for r in warm)}/{len(warm)} | "
              f"{olympic(seconds):.2f} ({spread(seconds)}) | {olympic(joules):,.0f} ({statistics.mean(joules):,.0f} ± "
              f"{statistics.stdev(joules):,.0f}) | {cold['seconds']:.2f}, {cold['energy_j']:,.0f} |")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
