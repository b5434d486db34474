"""`hpml compare` (issue 34) on real launched sweeps: two sides of the same preset, a candidate that is really
slower, what matches nothing, and bad input in one line. Its statistics against hand-computed values:
tests/test_compare_stats.py."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from hpml.analysis.stats import compare_values
from tests.conftest import hpml_here, run_hpml
from tests.sweep_processes import start_launch

# --- the verb on real sweeps -----------------------------------------------------------------------------------
# hpml_here runs `hpml compare` through cli.main in this process (a Python start and compare's imports less, about
# 1 s of CPU a call: issue 41), for the tests of what it computes and lists; run_hpml, the command as users run it,
# stays where the claim is the command's: every output written, each kind of bad input's exit status 2 and whole
# stderr of one line (a path, a number, sides with nothing in common), and the gate's exit 1.

SMALL_POINT = ["experiment=tiny/train", "workload.model=hpml_cnn"]  # tiny/train: 2 epochs, the first untimed
SMALL = [*SMALL_POINT, "sweep.repeat=0,1,2"]  # three repeats a side


def launched_together(root: Path, sides: dict) -> dict:
    """`hpml launch -m` of each side at once, as users run it: {name: its sweep folder}. Sides whose times are
    compared run side by side, so that a load on the machine that comes and goes (the suite's other tests) meets
    both alike; one after the other, the baseline launched while the machine was busy and the candidate while it
    was quiet measured the candidate's epoch time at 1.14 times the baseline's instead of about 3 (issue 41)."""
    running = {name: start_launch(root, "-m", *args, f"sweep.name=cmp_{name}") for name, args in sides.items()}
    made = {}
    for name, launch in running.items():
        out, err = launch.communicate(timeout=600)
        assert launch.returncode == 0, out + err
        (made[name],) = [d for d in (root / "sweeps").iterdir() if d.name.endswith(f"cmp_{name}")]
    return made


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory, shared_sweep) -> dict:
    """Four real sweeps: the same preset twice, A with three repeats and A' with two (each side has an interval;
    the tests that damage or zero results work on a copy of A, which has a result to spare); the gate's candidate
    (slow: A's three points with ResNet-18 instead of hpml's small CNN, launched beside A so that both meet the same
    load); and one whose model is really much larger (B: the tiny/train preset as written, its ResNet-18). Every
    side runs tiny/train's 2 epochs, one timed (3 before stop 58, issue 41: docs/results/test-suite-speed.md). The
    tests ask of B only that its configuration matches none of A's, so B is the tiny/train sweep that
    test_study_contract.py and test_provenance.py read too, launched once per test run (conftest's shared_sweep; B
    is only read here). Issue 41: the gate's baseline is A (it was a sweep of its own, launched
    alone on the machine after the other tests), and B is shared."""
    root = tmp_path_factory.mktemp("compare")
    made = launched_together(root, {"a": SMALL, "slow": [*SMALL, "workload.model=resnet18"]})
    made.update(launched_together(root, {"a2": [*SMALL_POINT, "sweep.repeat=0,1"]}))
    made["b"] = shared_sweep("experiment=tiny/train", timeout=300)
    made["root"] = root
    return made


def test_a_really_slower_candidate_is_worse_and_gates_ci(sweeps, tmp_path):
    """--fail-on-regression on real sweeps of the same data and steps, hpml's small CNN against ResNet-18 (epoch
    times about 0.3 s against 1.9 s measured beside a CPU hog, docs/results/test-suite-speed.md)."""
    done = run_hpml(["compare", str(sweeps["a"]), str(sweeps["slow"]), "--ignore", "workload.model",
                     "--out", str(tmp_path / "out"), "--fail-on-regression", "20"], cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr  # worse by more than 20 % with confidence
    rows = {row["metric"]: row for row in csv.DictReader(open(tmp_path / "out" / "compare.csv"))}
    assert rows["epoch time"]["verdict"] == "worse" and float(rows["epoch time"]["ci_low"]) > 1.2
    assert rows["throughput"]["verdict"] == "worse"
    assert "headline number(s) worse by more than 20 % with 95 % confidence" in done.stderr
    lenient = hpml_here(["compare", str(sweeps["a"]), str(sweeps["slow"]), "--ignore", "workload.model",
                         "--out", str(tmp_path / "out2")], cwd=tmp_path)
    assert lenient.returncode == 0, lenient.stderr  # no gate asked: the verdicts never set the exit status


def test_the_same_preset_twice_matches_every_configuration_and_writes_every_output(sweeps, tmp_path):
    out = tmp_path / "out"
    done = hpml_here(["compare", str(sweeps["a"]), str(sweeps["a2"]), "--out", str(out)], cwd=tmp_path)  # its files
    assert done.returncode == 0, done.stdout + done.stderr
    for name in ("compare.md", "compare.csv", "compare.tex", "compare_forest.png"):
        assert (out / name).is_file(), name
    rows = list(csv.DictReader(open(out / "compare.csv")))
    assert {row["metric"] for row in rows} == {"epoch time", "step time (median)", "throughput"}
    assert all((row["baseline_n"], row["candidate_n"]) == ("3", "2") and row["ci_low"] for row in rows)
    assert "Not compared" not in (out / "compare.md").read_text()


def test_what_matches_nothing_is_listed_and_nothing_in_common_is_one_line(sweeps, tmp_path):
    both = tmp_path / "both"
    both.mkdir()
    for name in ("a2", "b"):
        shutil.copytree(sweeps[name], both / sweeps[name].name, symlinks=True)
    done = hpml_here(["compare", str(sweeps["a"]), str(both), "--out", str(tmp_path / "out")], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "only in " in (tmp_path / "out" / "compare.md").read_text() and "resnet18" in done.stdout
    # --out: B is shared (read only), and compare's default folder is beside the candidate
    apart = run_hpml(["compare", str(sweeps["a"]), str(sweeps["b"]), "--out", str(tmp_path / "apart")], cwd=tmp_path)
    assert not (tmp_path / "apart").exists()
    lines = apart.stderr.strip().splitlines()
    assert apart.returncode == 2 and len(lines) == 1 and "no configuration in common" in lines[0], apart.stderr
    assert "workload.model (hpml_cnn vs resnet18)" in lines[0]


@pytest.mark.parametrize("args, says, run", [
    (["{nowhere}", "{a}"], "no such folder", run_hpml),
    (["{empty}", "{a}"], "no result.json under it: not a sweep or a folder of sweeps", hpml_here),
    (["{a}", "{a2}", "--by", "workload.no_such_key"], "--by workload.no_such_key: no result has this key", hpml_here),
    (["{a}", "{a2}", "--ignore", "workload.lrr"], "--ignore workload.lrr: no result has this key or group", hpml_here),
], ids=["nowhere-command", "empty", "by", "ignore"])
def test_bad_input_is_one_line(sweeps, tmp_path, args, says, run):
    (tmp_path / "empty").mkdir()
    paths = {"a": sweeps["a"], "a2": sweeps["a2"], "nowhere": tmp_path / "nowhere", "empty": tmp_path / "empty"}
    done = run(["compare", *[arg.format(**paths) for arg in args]], cwd=tmp_path)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and says in lines[0], done.stderr


def test_damaged_and_failed_results_are_listed_and_a_side_of_only_those_is_one_line(sweeps, tmp_path):
    damaged = tmp_path / "damaged"
    shutil.copytree(sweeps["a"], damaged, symlinks=True)
    doc = json.loads((damaged / "points/1/result.json").read_text())
    del doc["measurements"]["epoch_time_s"]
    (damaged / "points/1/result.json").write_text(json.dumps(doc))
    doc = json.loads((damaged / "points/2/result.json").read_text())
    doc.update(status="oom", reason="out of memory: CUDA out of memory")
    (damaged / "points/2/result.json").write_text(json.dumps(doc))
    done = hpml_here(["compare", str(sweeps["a2"]), str(damaged), "--out", str(tmp_path / "out")], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    listed = (tmp_path / "out" / "compare.md").read_text()
    assert f"- {damaged}: 1 result(s) not read: {damaged}/points/1/result.json: measurements.epoch_time_s: missing" \
        in listed, listed
    assert f"- {damaged}: 1 result(s) not ok (oom 1): `hpml status` says why" in listed, listed
    rows = list(csv.DictReader(open(tmp_path / "out" / "compare.csv")))
    assert {row["candidate_n"] for row in rows} == {"1"}  # the one result left
    doc = json.loads((damaged / "points/0/result.json").read_text())
    doc["status"] = "failed"
    (damaged / "points/0/result.json").write_text(json.dumps(doc))
    none = hpml_here(["compare", str(sweeps["a2"]), str(damaged)], cwd=tmp_path)
    assert none.returncode == 2 and none.stderr.strip() == (
        f"hpml: error: {damaged}: no ok result among its 3, 1 not read (first: {damaged}/points/1/result.json: "
        "measurements.epoch_time_s: missing); hpml status says why"), none.stderr


def zero_step_times(result: Path) -> None:
    doc = json.loads(result.read_text())
    doc["measurements"]["step_time_s"] = [[0.0] * len(steps) for steps in doc["measurements"]["step_time_s"]]
    result.write_text(json.dumps(doc))


def cell_n(cell: str) -> int:
    return int(cell.split("(n=")[1].split(")")[0].split(",")[0])


def test_a_result_whose_step_times_are_all_zero_is_left_out_of_the_cell_the_ratio_and_the_csv_alike(sweeps, tmp_path):
    """The schema allows step times of 0 s; all of a result's being 0 means they were not measured (docs/decisions.md):
    the step-time row uses the other results everywhere (the n and mean in the table, the ratio, the CSV) and names
    the one left out; its epoch time and throughput are still compared."""
    zeroed = tmp_path / "zeroed"
    shutil.copytree(sweeps["a"], zeroed, symlinks=True)
    zero_step_times(zeroed / "points/1/result.json")
    out = tmp_path / "out"
    done = hpml_here(["compare", str(sweeps["a2"]), str(zeroed), "--out", str(out)], cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {row["metric"]: row for row in csv.DictReader(open(out / "compare.csv"))}
    step = rows["step time (median)"]
    assert (step["baseline_n"], step["candidate_n"]) == ("2", "2")
    assert rows["epoch time"]["candidate_n"] == rows["throughput"]["candidate_n"] == "3"
    from hpml.analysis.compare.comparisons import load_side
    from hpml.analysis.compare.metrics import HEADLINES

    metric = next(m for m in HEADLINES["train"] if m.name == "step time (median)")
    base = [metric.value(doc) for doc in load_side(str(sweeps["a2"]))[0]]
    cand = [metric.value(doc) for doc in load_side(str(zeroed))[0] if not doc["path"].endswith("1/result.json")]
    expected = compare_values(base, cand, "lower", launch_sd=0.03)
    assert float(step["ratio"]) == pytest.approx(expected.ratio) and float(step["ci_low"]) == pytest.approx(expected.low)
    assert float(step["candidate_mean"]) == pytest.approx(sum(cand) / 2)
    text = (out / "compare.md").read_text()
    line = next(line for line in text.splitlines() if "step time (median) [ms]" in line)
    cells = [cell.strip() for cell in line.split("|")[1:-1]]
    assert cell_n(cells[2]) == 2 and cells[2].startswith(f"{sum(base) / 2:.4g} ± ")
    assert cell_n(cells[3]) == 2 and cells[3].startswith(f"{sum(cand) / 2:.4g} ± ")
    not_compared = text.split("## Not compared")[1]
    assert (f"- {zeroed.name}" in not_compared or f"- {zeroed}" in not_compared) and \
        f"{zeroed}/points/1/result.json: step time (median) of " in not_compared and \
        "timed step times are all 0 s: not measured" in not_compared, not_compared


def one_result_sweep(sweep: Path, target: Path) -> Path:
    shutil.copytree(sweep, target, symlinks=True)
    for point in (target / "points").iterdir():
        if point.name != "0":
            shutil.rmtree(point)
    return target


def test_a_gate_with_one_result_a_side_says_it_could_not_decide_and_fails_unless_told_to_pass(sweeps, tmp_path):
    """Issue 45, item 3: with one result a side no number has an interval; the gate says so in one stderr line,
    and exits 1 by default (--undecided fail), 0 with --undecided pass; without a gate the exit is 0."""
    base, cand = one_result_sweep(sweeps["a"], tmp_path / "one_a"), one_result_sweep(sweeps["a2"], tmp_path / "one_b")
    runs = {}
    for name, extra, run in (("default", [], run_hpml), ("fail", ["--undecided", "fail"], hpml_here),
                             ("pass", ["--undecided", "pass"], hpml_here)):
        runs[name] = run(["compare", str(base), str(cand), "--out", str(tmp_path / name), "--fail-on-regression", "50",
                          *extra], cwd=tmp_path)
    for name, code, end in (("default", 1, "--undecided fail: exit 1"), ("fail", 1, "--undecided fail: exit 1"),
                            ("pass", 0, "--undecided pass: passed anyway")):
        done = runs[name]
        assert done.returncode == code, done.stdout + done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("hpml: the gate could not decide 3 of 3 headline number(s): "
                                                       "3 with one usable result on a side: no interval (n = 1"), lines
        assert lines[0].endswith(end), lines
    ungated = hpml_here(["compare", str(base), str(cand), "--out", str(tmp_path / "none")], cwd=tmp_path)
    assert ungated.returncode == 0 and ungated.stderr == "", ungated.stderr
    alone = hpml_here(["compare", str(base), str(cand), "--undecided", "pass"], cwd=tmp_path)
    assert alone.returncode == 2 and "--undecided pass is not allowed without --fail-on-regression" in alone.stderr


def test_a_decided_gate_says_nothing_of_undecided_numbers(sweeps, tmp_path):
    done = hpml_here(["compare", str(sweeps["a"]), str(sweeps["a2"]), "--out", str(tmp_path / "o"),
                      "--fail-on-regression", "50"], cwd=tmp_path)
    assert done.returncode == 0 and done.stderr == "", done.stderr


def epoch_times(folder: Path) -> dict:
    """Each launch's (sweep folder's) epoch times, as compare reads them."""
    from hpml.analysis.compare.comparisons import launch_of, load_side
    from hpml.analysis.compare.metrics import HEADLINES

    metric = next(m for m in HEADLINES["train"] if m.name == "epoch time")
    launches: dict = {}
    for doc in load_side(str(folder))[0]:
        launches.setdefault(launch_of(doc), []).append(metric.value(doc))
    return launches


def test_with_two_launches_a_side_the_launch_is_the_unit(sweeps, tmp_path):
    """Both sides hold the two launches A and A' (copied): each launch is one value, its geometric mean."""
    from hpml.analysis.stats import geometric_mean

    sides = []
    for side in ("x", "y"):
        for name in ("a", "a2"):
            shutil.copytree(sweeps[name], tmp_path / side / sweeps[name].name, symlinks=True)
        sides.append(tmp_path / side)
    done = hpml_here(["compare", *map(str, sides), "--out", str(tmp_path / "out")], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    row = next(r for r in csv.DictReader(open(tmp_path / "out" / "compare.csv")) if r["metric"] == "epoch time")
    assert row["note"] == "unit: launch (2 vs 2 launches)" and row["baseline_n"] == "5"
    means = [geometric_mean(values) for values in epoch_times(sides[0]).values()]
    expected = compare_values(means, [geometric_mean(v) for v in epoch_times(sides[1]).values()], "lower")
    assert len(means) == 2 and float(row["ratio"]) == pytest.approx(1.0)
    assert (float(row["ci_low"]), float(row["ci_high"])) == pytest.approx((expected.low, expected.high))


def test_with_one_launch_a_side_the_launch_spread_is_added_to_the_repeats(sweeps, tmp_path):
    rows = {}
    for sd in ("3", "0"):
        out = tmp_path / sd
        done = hpml_here(["compare", str(sweeps["a"]), str(sweeps["a2"]), "--launch-sd", sd, "--out", str(out)],
                         cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        rows[sd] = next(r for r in csv.DictReader(open(out / "compare.csv")) if r["metric"] == "epoch time")
    (a,), (a2,) = epoch_times(sweeps["a"]).values(), epoch_times(sweeps["a2"]).values()
    assert rows["3"]["note"] == "unit: repeat, launch sd 3 % added" and rows["0"]["note"] == ""
    plain = compare_values(a, a2, "lower")
    assert (float(rows["0"]["ci_low"]), float(rows["0"]["ci_high"])) == pytest.approx((plain.low, plain.high))
    added = compare_values(a, a2, "lower", launch_sd=0.03)
    assert (float(rows["3"]["ci_low"]), float(rows["3"]["ci_high"])) == pytest.approx((added.low, added.high))
    assert added.high - added.low > plain.high - plain.low


@pytest.mark.parametrize("option, run", [("--launch-sd=-1", hpml_here), ("--launch-sd=nan", run_hpml),
                                         ("--difference=0", hpml_here), ("--fail-on-regression=inf", hpml_here),
                                         ("--out=", hpml_here)],
                         ids=["launch-sd=-1", "launch-sd=nan-command", "difference=0", "fail-on-regression=inf", "out="])
def test_bad_numbers_and_empty_paths_are_one_line_before_anything_is_read(tmp_path, option, run):
    done = run(["compare", str(tmp_path / "a"), str(tmp_path / "b"), option], cwd=tmp_path)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and option.split("=")[0] in lines[0], done.stderr


def test_each_side_is_labelled_by_what_differs_in_its_provenance(sweeps, tmp_path):
    """Two sweeps of one machine and one checkout: nothing in the provenance differs, and the label says so."""
    done = hpml_here(["compare", str(sweeps["a"]), str(sweeps["a2"]), "--out", str(tmp_path / "o")], cwd=tmp_path)
    sides = next(line for line in done.stdout.splitlines() if line.startswith("Sides: "))
    assert sides.count("no provenance differs") == 2
    doc = json.loads(next(Path(sweeps["a"]).glob("points/0/result.json")).read_text())
    assert doc["environment"]["hosts"]  # what the labels read is there
