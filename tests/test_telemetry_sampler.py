"""GPU telemetry capture without a GPU, below result.json (workloads/common/telemetry/): the device mapping, the
bounded buffer, the phase bookkeeping, the sampler's threads and grid, and the sidecar's round trip.

The sampler reads a scripted reader, which stands in for NvmlReader behind the same small interface
(sampler.Reader), so that every number below can be computed by hand. NVML itself runs only on a GPU host
(tests/test_telemetry_gpu.py).
"""

from __future__ import annotations

import gzip
import json
import math
import socket
import time

import pytest

from hpml.contract.telemetry_format import SAMPLE_FIELDS, TELEMETRY_VERSION, sidecar_name
from hpml.workloads.common.telemetry import NodeTelemetry
from hpml.workloads.common.telemetry.buffer import SampleBuffer
from hpml.workloads.common.telemetry.devices import NvmlDevice, match_ordinals, normalized_uuid
from hpml.workloads.common.telemetry.phases import END, START, EdgeClock, EnergyReads, PhaseLog, energy_j
from hpml.workloads.common.telemetry.sampler import Sampler
from hpml.workloads.common.telemetry.sidecar import read_sidecar
from tests.sweep_processes import wait_for


class ScriptedReader:
    """Two GPUs whose sample n reads util_gpu = 10 n (+1 on the second GPU), power 100.5 W, no GPM; each
    energy read returns the next value of a per-GPU list (mJ)."""

    def __init__(self, energies=None):
        self.infos = [{"cuda_index": i, "nvml_index": 3 - i, "uuid": f"GPU-{i}", "name": "Scripted",
                       "mig": False, "unavailable": {"sm_activity": "GPM: scripted"}} for i in range(2)]
        self.reads = [0, 0]
        self.energies = energies or {0: [], 1: []}
        self.closed = False

    def read(self, gpu):
        n = self.reads[gpu]
        self.reads[gpu] += 1
        return {"util_gpu": 10 * n + gpu, "util_mem": 5, "mem_used_bytes": 2 ** 34 + n, "power_w": 100.5,
                "sm_clock_mhz": 1980, "mem_clock_mhz": 2619, "temp_c": 40, "throttle_reasons": 0,
                "sm_activity": None, "sm_occupancy": None}

    def energy_mj(self, gpu):
        return self.energies[gpu].pop(0) if self.energies[gpu] else None

    def close(self):
        self.closed = True


# --- device mapping ------------------------------------------------------------------------------------------

def test_uuids_compare_without_nvmls_prefix_or_case():
    assert normalized_uuid("GPU-8A6D0C2E-1111") == normalized_uuid(b"8a6d0c2e-1111") == "8a6d0c2e-1111"
    assert normalized_uuid("MIG-abcd") == "abcd"


def test_cuda_ordinals_map_to_nvml_devices_by_uuid_not_by_index():
    host = [NvmlDevice(None, i, f"GPU-{u}", "H200", False) for i, u in enumerate(["aa", "bb", "cc", "dd"])]
    # CUDA_VISIBLE_DEVICES=3,1: ordinal 0 is the host's GPU 3
    assert [d.nvml_index for d in match_ordinals(["dd", "bb"], host)] == [3, 1]
    with pytest.raises(LookupError, match=r"^CUDA device 1 \(UUID ee\) is not among the 4 device\(s\) NVML lists$"):
        match_ordinals(["aa", "ee"], host)


# --- buffer ----------------------------------------------------------------------------------------------------

def test_the_buffer_drops_every_other_sample_at_its_limit_and_doubles_the_decimation():
    buffer = SampleBuffer(["u"], ["t_s", "v"], limit=4)
    # the sampler's schedule: every period, then every 2 periods once decimated, then every 4
    for t in [0, 1, 2, 3, 4, 6, 8, 12]:
        buffer.append({"u": {"t_s": t, "v": None if t == 2 else 10 * t}})
    # 0..3 fill it; 4 halves it to [0, 2] (decimation 2) then lands: [0, 2, 4], 6 -> [0, 2, 4, 6];
    # 8 halves it to [0, 4] (decimation 4): [0, 4, 8]; 12 -> [0, 4, 8, 12]
    assert buffer.decimation == 4 and buffer.length == 4
    assert buffer.export() == {"u": {"t_s": [0, 4, 8, 12], "v": [0, 40, 80, 120]}}


def test_a_null_stays_null_and_never_becomes_zero():
    buffer = SampleBuffer(["u"], ["v"], limit=8)
    buffer.append({"u": {"v": None}})
    buffer.append({"u": {}})  # a field the reader did not give
    buffer.append({"u": {"v": 0}})
    assert buffer.export() == {"u": {"v": [None, None, 0.0]}}


# --- phases ----------------------------------------------------------------------------------------------------

def test_a_phases_energy_is_the_counter_difference_in_joules():
    assert energy_j(1_000_000, 1_250_500) == 250.5
    assert energy_j(None, 5.0) is None and energy_j(5.0, None) is None
    assert energy_j(9_000, 1_000) is None  # the counter went back (driver reloaded): no number, not a negative


def test_the_phase_log_in_the_order_phases_opened():
    log = PhaseLog(["GPU-0", "GPU-1"])
    warmup = log.open("warmup", None, False, 512)
    epoch = log.open("epoch", 1, True, 1024)
    log.edge(warmup, START, 0.5, {"GPU-0": 1000.0, "GPU-1": 2000.0})
    log.edge(warmup, END, 2.0, {"GPU-0": 301000.0, "GPU-1": None})
    log.edge(epoch, START, 2.0, {"GPU-0": 301000.0, "GPU-1": 7000.0})
    assert log.export() == [
        {"name": "warmup", "index": None, "timed": False, "start_s": 0.5, "end_s": 2.0, "samples": 512,
         "energy_j": {"GPU-0": 300.0, "GPU-1": None}},
        {"name": "epoch", "index": 1, "timed": True, "start_s": 2.0, "end_s": None, "samples": 1024,
         "energy_j": {"GPU-0": None, "GPU-1": None}},  # never ended: no end, no energy
    ]


def test_without_a_device_event_an_edge_is_the_hosts_time():
    assert EdgeClock(lambda: 99.0).resolve(None, 12.5) == 12.5


# --- the sampler -------------------------------------------------------------------------------------------

def test_ticks_read_every_gpu_and_edges_read_the_energy_counters():
    reader = ScriptedReader({0: [5_000.0, 12_500.0], 1: [1_000.0, 1_000.0]})
    clock = iter(range(100)).__next__  # each look at the clock: one second later
    sampler = Sampler(reader, 100, clock=lambda: float(clock()))
    sampler.tick()
    sampler.tick()
    phase = sampler.phases.open("epoch", 1, True, 256)
    sampler.mark(phase, START)
    sampler.mark(phase, END)
    sampler.resolve(sampler._marks.get())
    sampler.resolve(sampler._marks.get())
    columns = sampler.buffer.export()
    assert columns["GPU-0"]["util_gpu"] == [0, 10] and columns["GPU-1"]["util_gpu"] == [1, 11]
    assert columns["GPU-0"]["sm_activity"] == [None, None]
    # the clock: 0 at t0; tick 1 reads it at 1 (start), 2 and 3 (GPUs), 4 (end); tick 2 at 5..8; marks at 9, 10
    assert columns["GPU-0"]["t_s"] == [2.0, 6.0] and columns["GPU-1"]["t_s"] == [3.0, 7.0]
    assert sampler.phases.export() == [{"name": "epoch", "index": 1, "timed": True, "start_s": 9.0,
                                        "end_s": 10.0, "samples": 256, "energy_j": {"GPU-0": 7.5, "GPU-1": 0.0}}]
    assert list(sampler.tick_read_s) == [3.0, 3.0]


def test_the_threads_sample_on_their_period_and_stop_after_the_queued_marks(tmp_path):
    reader = ScriptedReader({0: [0.0, 2000.0], 1: [0.0, 4000.0]})
    sampler = Sampler(reader, 10, energy_min_gap_s=0)  # every edge read (the gap: tests below)
    telemetry = NodeTelemetry(sampler, 10, cuda=False)
    sampler.start()
    with telemetry.phase("spin", timed=True, samples=7):
        time.sleep(0.15)
        # 150 ms at 10 ms is 15 deadlines; a loaded machine may make the thread miss some (overruns), so the test
        # waits for 10 ticks rather than assuming them: the timeout is a hang, not a speed, bound
        wait_for(lambda: sampler.ticks >= 10, 60, "the sampling thread's 10th tick")
    with pytest.raises(RuntimeError):
        with telemetry.phase("failing"):
            raise RuntimeError("a phase that raised still ends")
    state = telemetry.finish(tmp_path)
    assert state == {"node": 0, "status": "ok", "reason": None}
    assert reader.closed and not any(thread.is_alive() for thread in sampler._threads)
    doc = read_sidecar(tmp_path / sidecar_name(0))
    t = doc["samples"]["GPU-0"]["t_s"]
    assert len(t) >= 10
    # On the grid: the ticks' deadlines are distinct multiples of 10 ms, each sample its deadline plus the thread's
    # wake-up delay (under a period), so n samples span at least (n - 2) periods. The exact grid, late ticks
    # included, is the next test's (a scripted clock); a wake-up's delay is the scheduler's, not a bound to test.
    assert all(b > a for a, b in zip(t, t[1:])) and len(t) <= (t[-1] - t[0]) / 0.010 + 2
    spin, failing = doc["phases"]
    assert spin["end_s"] - spin["start_s"] >= 0.15
    # Every period of the phase was either sampled or counted as missed, however loaded the machine: the ratio of
    # the deadlines handled to the phase's periods, both on the sampler's clock, is at least 1 (less a period at
    # each end)
    handled = doc["sampler"]["ticks"] + doc["sampler"]["overruns"]
    assert handled >= (spin["end_s"] - spin["start_s"]) / 0.010 - 2, (handled, spin)
    assert spin["energy_j"] == {"GPU-0": 2.0, "GPU-1": 4.0} and spin["samples"] == 7
    assert failing["end_s"] is not None and failing["energy_j"] == {"GPU-0": None, "GPU-1": None}
    assert doc["sampler"]["ticks"] == len(t) and doc["sampler"]["errors"] == {}
    assert telemetry.finish(tmp_path) is state  # once


def test_the_counter_between_reads_is_linear_in_time_and_unknown_outside_them_or_across_a_reset():
    reads = EnergyReads()
    reads.add(1.0, {"GPU-0": 1_000.0, "GPU-1": 500.0})
    reads.add(3.0, {"GPU-0": 5_000.0, "GPU-1": None})  # GPU-1 unread here: its bracket is the next read
    reads.add(2.0, {"GPU-0": 2_000.0, "GPU-1": 100.0})  # from the other thread, out of order: sorted in
    assert reads.last_s() == 3.0 and len(reads) == 3
    assert reads.counter_at("GPU-0", 1.5) == 1_500.0  # halfway between 1,000 at 1 s and 2,000 at 2 s
    assert reads.counter_at("GPU-0", 2.25) == 2_750.0  # a quarter of the way from 2,000 to 5,000
    assert reads.counter_at("GPU-0", 3.0) == 5_000.0  # on a read: the read
    assert reads.counter_at("GPU-0", 0.5) is None and reads.counter_at("GPU-0", 3.5) is None  # no bracket
    assert reads.counter_at("GPU-1", 2.5) is None  # after GPU-1's last value: none
    assert reads.counter_at("GPU-1", 1.5) is None  # 500 -> 100: the counter went back (driver reload)


def test_an_edge_within_the_gap_is_not_read_but_placed_between_the_reads_around_it():
    """Energy gap 0.5 s. A 0.2 s phase: its start is read (nothing read before), its end is not (0.2 s after a
    read); the sampling loop reads once the gap has passed, and the end's counter is interpolated between."""
    now = [0.0]
    reader = ScriptedReader({0: [10_000.0, 16_000.0, 40_000.0], 1: [0.0, 3_000.0, 9_000.0]})
    sampler = Sampler(reader, 100, clock=lambda: now[0], energy_min_gap_s=0.5)
    short = sampler.phases.open("epoch", 1, True, 64)
    now[0] = 1.0
    sampler.mark(short, START)
    sampler.resolve(sampler._marks.get())  # read: 10,000 and 0 mJ at 1.0 s
    now[0] = 1.2
    sampler.mark(short, END)
    sampler.resolve(sampler._marks.get())  # 0.2 s after the last read: not read
    assert len(sampler.energy_reads) == 1 and sampler._energy_pending
    assert not sampler.energy_due()
    now[0] = 1.6  # the gap has passed: the next tick's read brackets the end
    assert sampler.energy_due()
    sampler.read_energy()  # 16,000 and 3,000 mJ at 1.6 s
    # the end at 1.2 s: a third of the way from 1.0 to 1.6 s: 10,000 + 6,000 / 3 = 12,000 mJ; 0 + 3,000 / 3 = 1,000
    (phase,) = sampler.phases.export(sampler.energy_reads)
    assert phase["energy_j"] == {"GPU-0": pytest.approx(2.0), "GPU-1": pytest.approx(1.0)}
    assert sampler.stats()["energy_reads"] == 2 and sampler.stats()["energy_min_gap_s"] == 0.5


def test_stopping_reads_the_counters_once_more_for_the_edges_still_unread(tmp_path):
    now = [0.0]
    reader = ScriptedReader({0: [0.0, 4_000.0], 1: [0.0, 8_000.0]})
    sampler = Sampler(reader, 100, clock=lambda: now[0], energy_min_gap_s=0.5)
    phase = sampler.phases.open("eval", 0, False, None)
    sampler.mark(phase, START)
    sampler.resolve(sampler._marks.get())  # read at 0 s
    now[0] = 0.1
    sampler.mark(phase, END)
    sampler.resolve(sampler._marks.get())  # not read
    now[0] = 0.4
    sampler.stop()  # no thread ran: stop() makes the read after the end (4,000 and 8,000 mJ at 0.4 s)
    assert reader.closed and len(sampler.energy_reads) == 2
    (row,) = sampler.phases.export(sampler.energy_reads)
    assert row["energy_j"] == {"GPU-0": pytest.approx(1.0), "GPU-1": pytest.approx(2.0)}  # a quarter of each


def test_the_sampling_loop_keeps_its_grid_and_skips_the_ticks_a_late_one_missed():
    """Deadlines every 10 ms from the start; a read that outlasts periods skips the grid points it missed
    (counted as overruns) instead of firing them back to back. A scripted clock: each read takes 1 ms, the
    fourth 35 ms; waiting moves the clock to the deadline."""
    now = [0.0]
    sampler = Sampler(ScriptedReader(), 10, clock=lambda: now[0])
    starts = []

    def tick():
        starts.append(now[0])
        now[0] += 0.035 if len(starts) == 4 else 0.001
        if len(starts) == 8:
            sampler._stop.set()

    def wait(timeout):
        now[0] += max(timeout, 0.0)
        return sampler._stop.is_set()

    sampler.tick = tick
    sampler._stop.wait = wait
    sampler._sample_loop()
    # the fourth read ends at 65 ms: 40, 50 and 60 ms are skipped, the next tick is on the grid at 70 ms
    assert starts == pytest.approx([0.0, 0.010, 0.020, 0.030, 0.070, 0.080, 0.090, 0.100])
    assert sampler.overruns == 3


def test_the_sidecar_round_trip(tmp_path):
    reader = ScriptedReader({0: [1_000.0, 4_000.0], 1: [0.0, 500.0]})
    sampler = Sampler(reader, 100, energy_min_gap_s=0)
    telemetry = NodeTelemetry(sampler, 100, cuda=False)
    for _ in range(3):
        sampler.tick()
    phase = sampler.phases.open("iteration", 0, True, 512)
    sampler.mark(phase, START)
    sampler.mark(phase, END)
    sampler.start()  # the edge thread resolves the two queued marks
    telemetry.finish(tmp_path)
    raw = (tmp_path / "telemetry.node0.json.gz").read_bytes()
    doc = json.loads(gzip.decompress(raw))
    assert doc["telemetry_version"] == TELEMETRY_VERSION and doc["node_rank"] == 0 and doc["interval_ms"] == 100
    assert doc["host"] == socket.gethostname() and doc["decimation"] == 1
    assert math.isclose(doc["t0_unix"], time.time(), abs_tol=60)
    assert doc["gpus"] == reader.infos
    assert set(doc["samples"]) == {"GPU-0", "GPU-1"}
    for columns in doc["samples"].values():
        assert list(columns) == list(SAMPLE_FIELDS)
        lengths = {len(column) for column in columns.values()}
        assert lengths in ({3}, {4})  # equal lengths; the sampler thread ticks once at its start
    gpu0 = doc["samples"]["GPU-0"]
    assert gpu0["util_gpu"][:3] == [0, 10, 20] and gpu0["mem_used_bytes"][:3] == [2 ** 34, 2 ** 34 + 1, 2 ** 34 + 2]
    assert all(type(v) is int for v in gpu0["mem_used_bytes"])  # integers stay integers
    assert gpu0["power_w"][0] == 100.5 and gpu0["sm_occupancy"][0] is None
    (phase,) = doc["phases"]
    assert {k: phase[k] for k in ("name", "index", "timed", "samples", "energy_j")} == \
        {"name": "iteration", "index": 0, "timed": True, "samples": 512, "energy_j": {"GPU-0": 3.0, "GPU-1": 0.5}}
    assert 0 <= phase["start_s"] <= phase["end_s"]


def test_a_sidecar_that_cannot_be_written_makes_the_node_unavailable_not_the_point_failed(tmp_path):
    telemetry = NodeTelemetry(Sampler(ScriptedReader(), 100), 100, cuda=False)
    not_a_folder = tmp_path / "a file"
    not_a_folder.write_text("")
    state = telemetry.finish(not_a_folder)
    assert state["status"] == "unavailable"
    assert state["reason"].startswith(("sidecar not written: FileExistsError: ",
                                       "sidecar not written: NotADirectoryError: "))
