"""How a waiting launch looks at its sweep (issue 35, item 2), the pure parts: the pause's backoff, and array
tasks answered by their array's own record. The calls against the real cluster: tests/test_slurm_unattended.py."""

from __future__ import annotations

from hpml.launcher.backends.slurm.states import fill_from_array_records, parse_squeue
from hpml.launcher.progress import PollBackoff


def test_the_pause_doubles_while_nothing_changes_up_to_its_cap_and_restarts_on_a_change():
    backoff = PollBackoff(first_s=5, cap_s=30)
    pauses = [backoff.after(changed) for changed in (True, False, False, False, False, True, False)]
    assert pauses == [5, 10, 20, 30, 30, 5, 10]
    assert PollBackoff(first_s=0.1, cap_s=0.5).after(False) == 2.0  # never below MIN_POLL_S
    assert PollBackoff(first_s=60, cap_s=30).after(False) == 60  # a cap below poll_s is poll_s


def test_tasks_cancelled_before_they_were_split_out_take_their_arrays_record():
    # `scancel 726_1 726_2` while 726_0 runs: squeue's answer (SLURM 22.05)
    jobs = parse_squeue("726|CANCELLED|\n726_0|RUNNING|n1\n")
    fill_from_array_records(jobs, ["726_0", "726_1", "726_2", "800_1"])
    assert {j: jobs[j]["state"] for j in ("726_0", "726_1", "726_2")} == \
        {"726_0": "running", "726_1": "cancelled", "726_2": "cancelled"}
    assert "800_1" not in jobs  # no record of its array: nothing to take
