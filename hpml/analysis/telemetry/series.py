"""A point's GPU telemetry as the report reads it: result.json's "telemetry" block, its sidecars (gzip'd JSON,
contract/telemetry_format.py) read with bounds, each GPU's columns as float arrays (null -> NaN), and the
timed window (the union of the phases marked timed).

Reading never raises for a bad file: a sidecar that is missing, too large, not gzip, not JSON, of another
version or of the wrong shape is one line (`SidecarError`), and the report lists it.
"""

from __future__ import annotations

import gzip
import io
import math
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Tuple

import numpy as np

from hpml.analysis.results import decode_json
from hpml.contract.jsonio import DamagedFile, decode_bounded, read_bytes_bounded, type_name
from hpml.contract.telemetry_format import SAMPLE_FIELDS, TELEMETRY_STATUSES, TELEMETRY_VERSION
from hpml.contract.units import MIB

# The compressed file: 2^19 samples x 11 fields x 8 GPUs compress to well under this; a sidecar over it is
# not one hpml wrote.
SIDECAR_LIMIT = 256 * MIB
# The JSON inside: 8 GPUs at the contract's bound (MAX_SAMPLES_PER_GPU) with values ~7 characters wide are
# ~320 MB; 1 GiB leaves room for wider numbers yet bounds what a damaged file (a gzip bomb) can make us hold.
SIDECAR_JSON_LIMIT = 1024 * MIB

_NUMBER = (int, float)
_NUMBER_OR_NULL = {int, float, type(None)}  # type(), not isinstance(): JSON true must not pass as 1


class SidecarError(ValueError):
    """A sidecar that cannot be used; the message is one line."""


class Block(NamedTuple):
    """result.json's "telemetry" block, checked: status, reason, sampling period, sidecar file names. (A
    NamedTuple: a frozen dataclass took 2 µs a result, 20 ms of a 10,000-result report.)"""

    status: str
    reason: Optional[str]
    interval_ms: Optional[float]
    sidecars: Tuple[str, ...]


@dataclass
class Phase:
    name: str
    index: Any
    timed: bool
    start_s: Optional[float]  # null: the sampler never placed this edge (it stopped first); outside the window
    end_s: Optional[float]  # null: never closed (the run stopped inside it); counts to the last sample
    samples: Optional[int]
    energy_j: Dict[str, Optional[float]]


@dataclass
class Gpu:
    """One sampled GPU: who it is and its columns (SAMPLE_FIELDS -> float array, NaN where NVML gave null)."""

    uuid: str
    cuda_index: int
    nvml_index: Any
    name: str
    mig: bool
    unavailable: Dict[str, str]
    columns: Dict[str, np.ndarray]


@dataclass
class Sidecar:
    path: Path
    host: str
    node_rank: int
    interval_ms: float
    t0_unix: float
    decimation: int
    gpus: List[Gpu]
    phases: List[Phase] = field(default_factory=list)

    @property
    def period_ms(self) -> float:
        """The effective sampling period: samples are time-uniform at interval x decimation."""
        return self.interval_ms * self.decimation

    @property
    def timed_phases(self) -> List[Phase]:
        return [phase for phase in self.phases if phase.timed]


def read_block(doc: Mapping[str, Any]) -> Tuple[Optional[Block], Optional[str]]:
    """(block, None); (None, None) for a result written before telemetry existed; (None, why) for a block of
    the wrong shape."""
    if "telemetry" not in doc:
        return None, None
    raw = doc["telemetry"]
    if not isinstance(raw, dict):
        return None, f"telemetry block is {type_name(raw)}, not an object"
    status = raw.get("status")
    if status not in TELEMETRY_STATUSES:
        return None, f"telemetry.status {status!r:.40} is not one of {', '.join(TELEMETRY_STATUSES)}"
    reason, interval = raw.get("reason"), raw.get("interval_ms")
    reason, interval = reason if isinstance(reason, str) else None, interval if type(interval) in _NUMBER else None
    if status != "ok":  # its sidecars, if any, are never read
        return Block(status, reason, interval, ()), None
    sidecars = raw.get("sidecars") or []
    if not isinstance(sidecars, list) or not all(isinstance(name, str) and _plain_name(name) for name in sidecars):
        return None, "telemetry.sidecars is not a list of file names in the point's folder"
    return Block(status, reason, interval, tuple(sidecars)), None


def _plain_name(name: str) -> bool:
    """A file name beside result.json: the report reads nothing outside the point's folder."""
    return bool(name) and "/" not in name and "\\" not in name and name not in (".", "..")


def read_gzip_json(path: Path) -> Any:
    """The JSON document inside a gzip file, both sizes bounded. Raises FileNotFoundError or DamagedFile."""
    data = read_bytes_bounded(path, SIDECAR_LIMIT)
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as f:
            text = f.read(SIDECAR_JSON_LIMIT + 1)
    except (OSError, EOFError, zlib.error) as error:  # BadGzipFile is an OSError; EOFError: cut short
        raise DamagedFile(f"not a complete gzip file: {error}") from None
    if len(text) > SIDECAR_JSON_LIMIT:
        raise DamagedFile(f"over {SIDECAR_JSON_LIMIT // MIB} MiB once decompressed; refused")
    return decode_bounded(text, decode_json)


def _need(ok: bool, where: str, what: str, value: Any) -> None:
    if not ok:
        got = repr(value)[:40] if isinstance(value, str) else type_name(value)
        raise SidecarError(f"{where}: expected {what}, got {got}")


def _number(value: Any) -> bool:
    return type(value) in _NUMBER and math.isfinite(value)  # a NaN or infinite time or energy is no reading


def _column(values: Any, where: str, nullable: bool) -> np.ndarray:
    _need(type(values) is list, where, "a list", values)
    kinds = {type(v) for v in values}
    allowed = _NUMBER_OR_NULL if nullable else set(_NUMBER)
    if not kinds <= allowed:
        bad = next(v for v in values if type(v) not in allowed)
        raise SidecarError(f"{where}: expected numbers{' or null' if nullable else ''}, found {type_name(bad)}")
    return np.array(values, dtype=float)  # None -> NaN: unavailable stays apart from 0


def _gpu(entry: Any, samples: Mapping[str, Any], i: int) -> Gpu:
    where = f"gpus[{i}]"
    _need(isinstance(entry, dict), where, "an object", entry)
    uuid = entry.get("uuid")
    _need(isinstance(uuid, str) and uuid != "", f"{where}.uuid", "a string", uuid)
    _need(type(entry.get("cuda_index")) is int, f"{where}.cuda_index", "an integer", entry.get("cuda_index"))
    unavailable = entry.get("unavailable") or {}
    _need(isinstance(unavailable, dict), f"{where}.unavailable", "an object", unavailable)
    series = samples.get(uuid)
    _need(isinstance(series, dict), f"samples.{uuid}", "an object of columns", series)
    columns = {}
    for name in SAMPLE_FIELDS:
        if name not in series:
            raise SidecarError(f"samples.{uuid}.{name}: missing")
        columns[name] = _column(series[name], f"samples.{uuid}.{name}", nullable=name != "t_s")
    lengths = {len(column) for column in columns.values()}
    if len(lengths) != 1:
        raise SidecarError(f"samples.{uuid}: columns of different lengths {sorted(lengths)}")
    return Gpu(uuid, entry["cuda_index"], entry.get("nvml_index"), str(entry.get("name") or "GPU"),
               bool(entry.get("mig")), {str(k): str(v) for k, v in unavailable.items()}, columns)


def _phase(entry: Any, i: int) -> Phase:
    where = f"phases[{i}]"
    _need(isinstance(entry, dict), where, "an object", entry)
    _need(isinstance(entry.get("name"), str), f"{where}.name", "a string", entry.get("name"))
    _need(type(entry.get("timed")) is bool, f"{where}.timed", "true/false", entry.get("timed"))
    start, end = entry.get("start_s"), entry.get("end_s")
    _need(start is None or _number(start), f"{where}.start_s", "a number or null", start)
    _need(end is None or _number(end), f"{where}.end_s", "a number or null", end)
    _need(start is None or end is None or start <= end, f"{where}.end_s", f"a time >= its start_s={start}", end)
    samples = entry.get("samples")
    _need(samples is None or type(samples) is int, f"{where}.samples", "an integer or null", samples)
    energy = entry.get("energy_j") or {}
    _need(isinstance(energy, dict) and all(v is None or (_number(v) and v >= 0) for v in energy.values()),
          f"{where}.energy_j", "an object of joules >= 0 (or null: unread)", energy)
    return Phase(entry["name"], entry.get("index"), entry["timed"], None if start is None else float(start),
                 None if end is None else float(end), samples, energy)


def parse_sidecar(doc: Any, path: Path) -> Sidecar:
    """A decoded sidecar, checked against contract/telemetry_format.py. Raises SidecarError (one line)."""
    _need(isinstance(doc, dict), "the document", "an object", doc)
    version = doc.get("telemetry_version")
    if type(version) is not int or version != TELEMETRY_VERSION:
        raise SidecarError(f"telemetry_version {version!r:.20} is not supported (this report reads "
                           f"{TELEMETRY_VERSION})")
    for key, ok, what in (("interval_ms", lambda v: _number(v) and v > 0, "a number > 0"),
                          ("t0_unix", _number, "a number"),
                          ("decimation", lambda v: type(v) is int and v >= 1, "an integer >= 1"),
                          ("node_rank", lambda v: type(v) is int, "an integer"),
                          ("gpus", lambda v: type(v) is list, "a list"),
                          ("samples", lambda v: isinstance(v, dict), "an object"),
                          ("phases", lambda v: type(v) is list, "a list")):
        _need(key in doc and ok(doc[key]), key, what, doc.get(key))
    return Sidecar(path=path, host=str(doc.get("host") or f"node{doc['node_rank']}"), node_rank=doc["node_rank"],
                   interval_ms=float(doc["interval_ms"]), t0_unix=float(doc["t0_unix"]),
                   decimation=doc["decimation"],
                   gpus=[_gpu(entry, doc["samples"], i) for i, entry in enumerate(doc["gpus"])],
                   phases=[_phase(entry, i) for i, entry in enumerate(doc["phases"])])


def load_sidecar(path: Path) -> Sidecar:
    """Reads and checks one sidecar. Raises SidecarError with one line for every way it can be unusable."""
    try:
        return parse_sidecar(read_gzip_json(path), path)
    except FileNotFoundError:
        raise SidecarError("missing (result.json's telemetry block names it)") from None
    except DamagedFile as error:
        raise SidecarError(str(error)) from None


def timed_mask(t_s: np.ndarray, phases: List[Phase]) -> np.ndarray:
    """Which samples fall in the timed window: start_s <= t <= end_s of some phase marked timed (a phase never
    closed runs to the last sample; one never started is left out). Nothing timed -> all False."""
    mask = np.zeros(len(t_s), dtype=bool)
    last = t_s[-1] if len(t_s) else 0.0
    for phase in phases:
        if phase.timed and phase.start_s is not None:
            end = last if phase.end_s is None else phase.end_s
            mask |= (t_s >= phase.start_s) & (t_s <= end)
    return mask
