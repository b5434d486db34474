"""One JSON summary of every point under the given sweep folders: what each ran, its status, step time, MFU,
the verdict and its inputs, setup costs, telemetry's utilization; the tail of its logs when it did not end ok.
    python summarize.py sweeps/* > summary.json
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path


def tail(path: Path, lines: int = 25) -> list:
    return path.read_text(errors="replace").splitlines()[-lines:] if path.is_file() else []


def point_summary(point: Path) -> dict:
    state = json.loads((point / "state.json").read_text()) if (point / "state.json").is_file() else {}
    out = {"point": str(point), "overrides": state.get("overrides"), "state": state.get("state")}
    result_file = point / "result.json"
    if not result_file.is_file():
        out["logs"] = {p.name: tail(p) for p in sorted((point / "logs").glob("*"))}
        return out
    result = json.loads(result_file.read_text())
    out["status"], out["reason"] = result["status"], result.get("reason")
    if result["status"] != "ok":
        out["logs"] = {p.name: tail(p) for p in sorted((point / "logs").glob("*"))}
        return out
    m, d = result["measurements"], result["derived"]
    w = result["config"]["workload"]
    out["config"] = {k: w[k] for k in ("model", "batch_size", "precision", "channels_last", "compile", "cuda_graphs",
                                       "dataset", "data_placement", "parallel")}
    out["derived"] = d
    out["efficiency"] = m["efficiency"]
    steps = m["step_time_s"]
    out["step_ms_median_per_epoch"] = [1e3 * statistics.median(s) for s in steps]
    out["phase_ms_median_last_epoch"] = {p: 1e3 * statistics.median(v[-1]) for p, v in m["phase_time_s"].items()}
    out["overhead_check"] = m.get("overhead_check")
    out["telemetry"] = result.get("telemetry")
    out["environment_gpus"] = result.get("environment", {}).get("gpus")
    return out


def main() -> None:
    points = [p for root in sys.argv[1:] for p in sorted(Path(root).glob("points/*"), key=lambda p: int(p.name))]
    print(json.dumps([point_summary(p) for p in points], indent=1, default=str))


if __name__ == "__main__":
    main()
