"""Which NVML device is CUDA ordinal i of this process: matched by UUID, never by index.

NVML numbers every GPU of the host (PCI order) and ignores CUDA_VISIBLE_DEVICES; CUDA numbers only the devices
this process may see, in CUDA_DEVICE_ORDER (fastest first by default), and SLURM's GRES narrows them further.
So CUDA ordinal 0 may be NVML index 3. The UUID is the one name both give: torch reports it without a prefix
("8a6d...-..."), NVML with one ("GPU-8a6d..." for a GPU, "MIG-..." for a MIG instance).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence

UUID_PREFIXES = ("gpu-", "mig-")


def normalized_uuid(text: Any) -> str:
    """A UUID as both sides can compare it: text, lower case, without NVML's "GPU-"/"MIG-" prefix."""
    value = (text.decode() if isinstance(text, bytes) else str(text)).strip().lower()
    for prefix in UUID_PREFIXES:
        if value.startswith(prefix):
            return value[len(prefix):]
    return value


@dataclass(frozen=True)
class NvmlDevice:
    """One device NVML can read: a whole GPU, or a MIG instance of one."""

    handle: Any  # pynvml's device handle
    nvml_index: int  # the host's GPU index (for a MIG instance: its parent GPU's)
    uuid: str  # as NVML spells it
    name: str
    mig: bool  # a MIG instance: NVML has no utilization for it


def match_ordinals(cuda_uuids: Sequence[str], devices: Sequence[NvmlDevice]) -> List[NvmlDevice]:
    """NVML's device for each CUDA ordinal (cuda_uuids[i] is ordinal i's UUID). Raises LookupError, one line,
    when NVML does not list one of them."""
    by_uuid: Dict[str, NvmlDevice] = {normalized_uuid(device.uuid): device for device in devices}
    matched = []
    for ordinal, uuid in enumerate(cuda_uuids):
        device = by_uuid.get(normalized_uuid(uuid))
        if device is None:
            raise LookupError(f"CUDA device {ordinal} (UUID {uuid}) is not among the {len(devices)} device(s) "
                              "NVML lists")
        matched.append(device)
    return matched


def cuda_uuids(count: int) -> List[str]:
    """The UUIDs of CUDA ordinals 0..count-1 of this process (no CUDA context is created for them)."""
    import torch

    return [str(torch.cuda.get_device_properties(i).uuid) for i in range(count)]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _mig_instances(nvml: Any, parent: Any, index: int, name: str) -> List[NvmlDevice]:
    """The MIG instances of a GPU in MIG mode ([] otherwise, or where the driver cannot say)."""
    try:
        current, _pending = nvml.nvmlDeviceGetMigMode(parent)
    except nvml.NVMLError:  # NotSupported on GPUs without MIG
        return []
    if current != nvml.NVML_DEVICE_MIG_ENABLE:
        return []
    instances = []
    for slot in range(nvml.nvmlDeviceGetMaxMigDeviceCount(parent)):
        try:
            handle = nvml.nvmlDeviceGetMigDeviceHandleByIndex(parent, slot)
        except nvml.NVMLError:  # NotFound: an empty slot
            continue
        instances.append(NvmlDevice(handle, index, _text(nvml.nvmlDeviceGetUUID(handle)), f"{name} MIG", True))
    return instances


def nvml_devices(nvml: Any) -> List[NvmlDevice]:
    """Every GPU of the host and every MIG instance, as NVML lists them."""
    devices: List[NvmlDevice] = []
    for index in range(nvml.nvmlDeviceGetCount()):
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        name = _text(nvml.nvmlDeviceGetName(handle))
        devices.append(NvmlDevice(handle, index, _text(nvml.nvmlDeviceGetUUID(handle)), name, False))
        devices.extend(_mig_instances(nvml, handle, index, name))
    return devices


def map_cuda_devices(nvml: Any, count: int, uuids: Optional[Sequence[str]] = None) -> List[NvmlDevice]:
    """NVML's device for CUDA ordinals 0..count-1 of this process."""
    return match_ordinals(cuda_uuids(count) if uuids is None else uuids, nvml_devices(nvml))
