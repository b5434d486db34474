"""The all-reduce table (analysis/allreduce/tables.py) and nccl-tests' formulas (contract.collectives) against
hand-computed values (1 GB = 1e9 bytes; 1 GiB = 1073741824 bytes)."""

from __future__ import annotations

import math

import pytest

from hpml.analysis.allreduce.tables import COLUMNS, allreduce_table, ring_allreduce_time, ring_utilization
from hpml.contract.collectives import algbw_GBps as algbw
from hpml.contract.collectives import bus_factor
from tests.factories.allreduce import allreduce_result


def busbw(algbw_GBps, n):
    return algbw_GBps * bus_factor("all_reduce", n)

GiB = 1073741824


def test_algbw_of_one_gib_in_10_ms():
    # 1073741824 B / 0.010 s = 107374182400 B/s = 107.3741824 GB/s
    assert algbw(GiB, 0.010) == pytest.approx(107.3741824, rel=1e-12)


@pytest.mark.parametrize("n, expected", [
    (4, 161.0612736),  # 107.3741824 * 2*3/4 = 107.3741824 * 1.5
    (2, 107.3741824),  # 2*1/2 = 1: with two ranks busbw equals algbw
    (8, 187.9048192),  # 107.3741824 * 2*7/8 = 107.3741824 * 1.75
    (1, 0.0),          # one rank moves nothing over a link
])
def test_busbw_is_algbw_times_2_n_minus_1_over_n(n, expected):
    assert busbw(107.3741824, n) == pytest.approx(expected, rel=1e-12, abs=0)


def test_ring_allreduce_time_patarasuk_yuan():
    # n=4, S=1 GiB, B=450 GB/s, alpha=5 us:
    #   2(n-1)*alpha      = 6 * 5e-6                     = 0.00003 s
    #   2(n-1)/n * S / B  = 1.5 * 1073741824 / 450e9     = 0.00357913941333... s
    assert ring_allreduce_time(GiB, 4, 450.0, 5e-6) == pytest.approx(0.00360913941333333, rel=1e-12)
    # n=2, S=1e9 B, B=100 GB/s, no latency: 1 * 1e9 / 1e11 = 0.01 s
    assert ring_allreduce_time(1e9, 2, 100.0, 0.0) == pytest.approx(0.01, rel=1e-12)
    assert ring_allreduce_time(GiB, 1, 450.0, 5e-6) == 0.0  # nothing to exchange


def test_ring_utilization():
    # busbw of 1 GiB in 10 ms on 4 ranks = 161.0612736 GB/s; against 450 GB/s: 0.357913941333...
    assert ring_utilization(GiB, 0.010, 4, 450.0) == pytest.approx(0.357913941333333, rel=1e-12)
    # an all-reduce that takes exactly the model's time with no latency uses the whole link
    t = ring_allreduce_time(GiB, 8, 450.0, 0.0)
    assert ring_utilization(GiB, t, 8, 450.0) == pytest.approx(1.0, rel=1e-12)


@pytest.mark.parametrize("call", [lambda: algbw(1, 0), lambda: busbw(1.0, 0),
                                  lambda: ring_utilization(1, 1, 2, 0)])
def test_formulas_refuse_impossible_inputs(call):
    with pytest.raises(ValueError):
        call()


def result_doc(point, world_size, sizes, impl="hpml", link="none", peak=None, status="ok", workload="allreduce"):
    doc = allreduce_result(point, sizes, world_size=world_size, impl=impl, link=link, peak=peak, status=status)
    doc["identity"]["workload"] = workload
    return {**doc, "path": f"/sweeps/bw/points/{point}/result.json"}


def test_table_recomputes_from_the_slowest_rank_per_iteration():
    # 2 ranks, 1000 bytes, 2 iterations: rank 0 took [1, 3] us, rank 1 [2, 1] us.
    # slowest per iteration: [2, 3] us -> mean 2.5 us, population std 0.5 us
    # algbw = 1000 B / 2.5e-6 s = 4e8 B/s = 0.4 GB/s; busbw (n=2, factor 1) = 0.4; vs 0.8 GB/s peak: 0.5
    size = {"bytes": 1000, "iters": 2, "correct": True, "loop_time_s_per_rank": [4e-6, 3e-6],
            "iteration_time_s_per_rank": [[1e-6, 3e-6], [2e-6, 1e-6]]}
    table = allreduce_table([result_doc(0, 2, [size], link="slow", peak=0.8)])
    assert table.skipped == []
    assert list(table.rows.columns) == COLUMNS
    row = table.rows.iloc[0]
    assert row["time_s"] == pytest.approx(2.5e-6, rel=1e-12)
    assert row["time_std_s"] == pytest.approx(0.5e-6, rel=1e-9)
    assert row["algbw_GBps"] == pytest.approx(0.4, rel=1e-12)
    assert row["busbw_GBps"] == pytest.approx(0.4, rel=1e-12)
    assert row["utilization"] == pytest.approx(0.5, rel=1e-12)
    assert row["iters"] == 2 and row["world_size"] == 2 and row["link"] == "slow"
    assert row["path"] == "/sweeps/bw/points/0/result.json"


def test_table_of_a_raw_loop_uses_the_slowest_ranks_loop_time():
    # 4 ranks, 4000 bytes, 10 iterations, loop times 1 ms and 2 ms (slowest): 2e-3 / 10 = 2e-4 s per iteration
    # algbw = 4000 / 2e-4 / 1e9 = 0.02 GB/s; busbw = 0.02 * 2*3/4 = 0.03 GB/s; no peak: utilization NaN
    size = {"bytes": 4000, "iters": 10, "correct": True, "loop_time_s_per_rank": [1e-3, 2e-3, 1e-3, 1e-3],
            "iteration_time_s_per_rank": None}
    row = allreduce_table([result_doc(1, 4, [size], impl="raw")]).rows.iloc[0]
    assert row["time_s"] == pytest.approx(2e-4, rel=1e-12)
    assert row["algbw_GBps"] == pytest.approx(0.02, rel=1e-12)
    assert row["busbw_GBps"] == pytest.approx(0.03, rel=1e-12)
    assert math.isnan(row["utilization"]) and math.isnan(row["time_std_s"])


def test_table_lists_failed_allreduce_results_and_ignores_other_workloads():
    ok_size = {"bytes": 8, "iters": 1, "correct": True, "loop_time_s_per_rank": [1e-6],
               "iteration_time_s_per_rank": [[1e-6]]}
    table = allreduce_table([
        result_doc(0, 1, [ok_size]),
        result_doc(1, 2, [], status="failed"),
        result_doc(2, 2, [], workload="train"),
    ])
    assert len(table.rows) == 1 and table.rows.iloc[0]["busbw_GBps"] == 0.0  # one rank: busbw 0
    assert table.skipped == []  # the failed result is the report's to list, not this table's
    broken = result_doc(3, 2, [{"bytes": 8}])  # no times at all
    assert allreduce_table([broken]).skipped == [
        "/sweeps/bw/points/3/result.json: unreadable allreduce measurements (KeyError: 'iteration_time_s_per_rank')"]
