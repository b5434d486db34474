"""NVML reads of one node's GPUs: the cheap counters at every tick, the total-energy counter at phase edges.

Each group below is one NVML call giving one or two of contract.telemetry_format.SAMPLE_FIELDS. A call that
fails leaves its fields null in that sample (never 0) and its first error in the GPU's `unavailable`; a call
that NVML says cannot work on this GPU (not supported, no permission, not in this driver) is not made again.
What a GPU cannot give at all is null from the start, with the reason: GPM (SM activity and occupancy) before
Hopper, utilization, power and energy on a MIG instance (NVML reports them per GPU, not per instance).

nvmlDeviceGetTotalEnergyConsumption costs milliseconds per call (3.0 ms on an H200, 3.9 ms on an H100), fifty
times a whole tick of the other fields (60 us per GPU on the H200: docs/studies/gpu-telemetry.md), so only
`energy_mj` reads it, at phase edges, never the sampling loop.
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from hpml.workloads.common.telemetry.devices import NvmlDevice, map_cuda_devices

# Errors after which the call is not made again: the answer would not change.
_PERMANENT = ("NVML_ERROR_NOT_SUPPORTED", "NVML_ERROR_NO_PERMISSION", "NVML_ERROR_FUNCTION_NOT_FOUND")
ENERGY = "energy_j"  # the key of the energy counter in a GPU's `unavailable`


class TelemetryUnavailable(RuntimeError):
    """No telemetry on this node; the message is result.json's one-line reason."""


def load_nvml() -> Any:
    """pynvml (nvidia-ml-py), initialised. Raises TelemetryUnavailable("NVML: ...")."""
    try:
        import pynvml
    except ImportError:
        raise TelemetryUnavailable("NVML: nvidia-ml-py (import pynvml) is not installed") from None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as error:  # NVMLError_LibraryNotFound on a machine without the driver
        raise TelemetryUnavailable(f"NVML: {error}") from None
    return pynvml


def _permanent(nvml: Any, error: Exception) -> bool:
    return getattr(error, "value", None) in {getattr(nvml, name, None) for name in _PERMANENT}


class Group:
    """One NVML call and the fields it fills; `alive` goes False once NVML says it can never work here."""

    def __init__(self, name: str, fields: Tuple[str, ...], read: Callable[[], Tuple[Optional[float], ...]]):
        self.name, self.fields, self.read, self.alive = name, fields, read, True


class Gpm:
    """GPM SM activity and occupancy between consecutive samples (Hopper and later).

    GPM metrics are differences of hardware counters between two snapshots: each tick takes a snapshot and
    computes the metrics against the previous tick's, then the two buffers swap. The first tick, and the tick
    after a failed one, have no previous snapshot: null.
    """

    def __init__(self, nvml: Any, handle: Any):
        self.nvml, self.handle = nvml, handle
        self.previous, self.current = nvml.nvmlGpmSampleAlloc(), nvml.nvmlGpmSampleAlloc()
        self.have_previous = False
        self.request = nvml.c_nvmlGpmMetricsGet_t()
        self.metric_ids = (nvml.NVML_GPM_METRIC_SM_UTIL, nvml.NVML_GPM_METRIC_SM_OCCUPANCY)

    def read(self) -> Tuple[Optional[float], Optional[float]]:
        nvml = self.nvml
        try:
            nvml.nvmlGpmSampleGet(self.handle, self.current)
        except nvml.NVMLError:
            self.have_previous = False  # the next snapshot starts afresh
            raise
        if not self.have_previous:
            self._advance()
            return None, None
        request = self.request
        request.version = nvml.NVML_GPM_METRICS_GET_VERSION
        request.numMetrics = len(self.metric_ids)
        request.sample1, request.sample2 = self.previous, self.current
        for slot, metric in enumerate(self.metric_ids):
            request.metrics[slot].metricId = metric
        try:
            nvml.nvmlGpmMetricsGet(request)
        finally:
            self._advance()  # this tick's snapshot is good whatever the metrics did: the next compares with it
        return tuple(  # type: ignore[return-value]
            float(m.value) if m.nvmlReturn == nvml.NVML_SUCCESS and math.isfinite(m.value) else None
            for m in request.metrics[:len(self.metric_ids)])

    def _advance(self) -> None:
        self.previous, self.current = self.current, self.previous
        self.have_previous = True

    def close(self) -> None:
        for sample in (self.previous, self.current):
            try:
                self.nvml.nvmlGpmSampleFree(sample)
            except self.nvml.NVMLError:
                pass


def _gpm_or_reason(nvml: Any, device: NvmlDevice) -> Tuple[Optional[Gpm], Optional[str]]:
    if device.mig:
        return None, "MIG instance: GPM is not sampled per instance"
    if not hasattr(nvml, "nvmlGpmQueryDeviceSupport"):
        return None, "GPM: this nvidia-ml-py has no GPM API"
    try:
        if not nvml.nvmlGpmQueryDeviceSupport(device.handle).isSupportedDevice:
            return None, "GPM: not supported by this GPU (Hopper and later have it)"
        return Gpm(nvml, device.handle), None
    except nvml.NVMLError as error:
        return None, f"GPM: {error}"


class GpuReader:
    """The NVML reads of one GPU (or MIG instance) that CUDA ordinal `cuda_index` names."""

    def __init__(self, nvml: Any, device: NvmlDevice, cuda_index: int):
        self.nvml, self.device = nvml, device
        self.unavailable: Dict[str, str] = {}
        handle = device.handle
        throttle = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
            nvml.nvmlDeviceGetCurrentClocksThrottleReasons  # renamed in driver 535; same bit mask

        def utilization() -> Tuple[Optional[float], ...]:
            rates = nvml.nvmlDeviceGetUtilizationRates(handle)
            return rates.gpu, rates.memory

        groups = [
            Group("utilization", ("util_gpu", "util_mem"), utilization),
            Group("memory", ("mem_used_bytes",), lambda: (nvml.nvmlDeviceGetMemoryInfo(handle).used,)),
            Group("power", ("power_w",), lambda: (nvml.nvmlDeviceGetPowerUsage(handle) / 1000.0,)),  # mW
            Group("sm_clock", ("sm_clock_mhz",), lambda: (nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM),)),
            Group("mem_clock", ("mem_clock_mhz",),
                  lambda: (nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_MEM),)),
            Group("temperature", ("temp_c",),
                  lambda: (nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU),)),
            Group("throttle", ("throttle_reasons",), lambda: (throttle(handle),)),
        ]
        self.gpm, gpm_reason = _gpm_or_reason(nvml, device)
        if self.gpm is not None:
            groups.append(Group("gpm", ("sm_activity", "sm_occupancy"), self.gpm.read))
        else:
            self._never(("sm_activity", "sm_occupancy"), gpm_reason or "GPM: unavailable")
        if device.mig:  # NVML gives these per GPU; a MIG instance's share is unknown: null, never 0
            for group in groups:
                if group.name in ("utilization", "power"):
                    group.alive = False
                    self._never(group.fields, "MIG instance: NVML reports no per-instance " + group.name)
            self._never((ENERGY,), "MIG instance: the energy counter is the whole GPU's")
        self.energy_alive = not device.mig
        self.groups = groups
        self.fields = tuple(f for group in groups for f in group.fields)
        self.info: Dict[str, Any] = {"cuda_index": cuda_index, "nvml_index": device.nvml_index,
                                     "uuid": device.uuid, "name": device.name, "mig": device.mig,
                                     "unavailable": self.unavailable}

    def _never(self, fields: Sequence[str], reason: str) -> None:
        for name in fields:
            self.unavailable.setdefault(name, reason)

    def read(self) -> Dict[str, Optional[float]]:
        """One sample of every field (fields of a failed or dead call: None)."""
        values: Dict[str, Optional[float]] = {}
        for group in self.groups:
            result: Sequence[Optional[float]] = (None,) * len(group.fields)
            if group.alive:
                try:
                    result = group.read()
                except self.nvml.NVMLError as error:
                    group.alive = not _permanent(self.nvml, error)
                    self._never(group.fields, f"NVML: {error}" + ("" if group.alive else " (not read again)"))
            values.update(zip(group.fields, result))
        return values

    def energy_mj(self) -> Optional[float]:
        """The total-energy counter (mJ since the driver loaded); None where the GPU has none."""
        if not self.energy_alive:
            return None
        try:
            return float(self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.device.handle))
        except self.nvml.NVMLError as error:
            self.energy_alive = not _permanent(self.nvml, error)
            self._never((ENERGY,), f"NVML: {error}")
            return None

    def close(self) -> None:
        if self.gpm is not None:
            self.gpm.close()


class NvmlReader:
    """The GPUs of CUDA ordinals 0..count-1 of this process, mapped to NVML by UUID (devices.py)."""

    def __init__(self, count: int, uuids: Optional[Sequence[str]] = None):
        self.nvml = load_nvml()
        try:
            devices = map_cuda_devices(self.nvml, count, uuids)
            self.gpus = [GpuReader(self.nvml, device, i) for i, device in enumerate(devices)]
        except (LookupError, self.nvml.NVMLError) as error:
            self.nvml.nvmlShutdown()
            raise TelemetryUnavailable(f"NVML: {error}") from None

    @property
    def infos(self) -> List[Dict[str, Any]]:
        return [gpu.info for gpu in self.gpus]

    def read(self, gpu: int) -> Dict[str, Optional[float]]:
        return self.gpus[gpu].read()

    def energy_mj(self, gpu: int) -> Optional[float]:
        return self.gpus[gpu].energy_mj()

    def close(self) -> None:
        for gpu in self.gpus:
            gpu.close()
        try:
            self.nvml.nvmlShutdown()
        except self.nvml.NVMLError:
            pass


def time_calls(reader: NvmlReader, repeats: int, energy_repeats: int) -> List[Dict[str, Any]]:
    """Seconds per call of each group and of the energy counter, per GPU (median of `repeats` calls): what the
    sampling loop costs (tools/telemetry_overhead.py --loop-cost)."""
    rows = []
    for gpu in reader.gpus:
        row: Dict[str, Any] = {"cuda_index": gpu.info["cuda_index"], "name": gpu.info["name"]}
        for group in gpu.groups:
            if group.alive:
                row[group.name] = _median_call(group.read, repeats)
        row["tick_all_groups"] = _median_call(gpu.read, repeats)
        row[ENERGY] = _median_call(gpu.energy_mj, energy_repeats)
        rows.append(row)
    return rows


def _median_call(call: Callable[[], Any], repeats: int) -> Optional[float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        try:
            call()
        except Exception:  # noqa: BLE001 - a failing call has no cost to report
            return None
        times.append(time.perf_counter() - start)
    times.sort()
    return times[len(times) // 2]
