"""The samples of one node's GPUs, bounded: one column per field and GPU, at most `limit` samples each.

When a column would pass the limit, every other sample is dropped (the first stays) and `decimation` doubles;
the sampler then reads every interval_ms x decimation, so the kept samples stay evenly spaced. At the
contract's limit (2^19) and 100 ms this first happens after 14.6 hours.

Columns are array('d') (8 bytes a value; a Python list of floats takes ~32): 11 fields x 2^19 samples are
46 MB per GPU at the bound. A null is stored as NaN, which no NVML counter produces, and written back as null.
"""

from __future__ import annotations

import math
import threading
from array import array
from typing import Dict, List, Mapping, Optional, Sequence


class SampleBuffer:
    def __init__(self, uuids: Sequence[str], fields: Sequence[str], limit: int):
        if limit < 2:
            raise ValueError(f"a sample buffer needs a limit >= 2, got {limit}")
        self.fields, self.limit = tuple(fields), limit
        self.columns: Dict[str, Dict[str, array]] = {u: {f: array("d") for f in self.fields} for u in uuids}
        self.decimation = 1
        self.length = 0
        self._lock = threading.Lock()  # the sampler thread appends; stop() may export while it is stuck in NVML

    def append(self, rows: Mapping[str, Mapping[str, Optional[float]]]) -> None:
        """One sample of every GPU: rows[uuid][field] (a missing or None value is null)."""
        with self._lock:
            if self.length >= self.limit:
                self._halve()
            for uuid, columns in self.columns.items():
                row = rows.get(uuid, {})
                for name, column in columns.items():
                    value = row.get(name)
                    column.append(math.nan if value is None else float(value))
            self.length += 1

    def _halve(self) -> None:
        for columns in self.columns.values():
            for name, column in columns.items():
                columns[name] = column[::2]
        self.length = (self.length + 1) // 2
        self.decimation *= 2

    def export(self) -> Dict[str, Dict[str, List[Optional[float]]]]:
        """{uuid: {field: [value or None, ...]}}: NaN back to None."""
        with self._lock:
            return {uuid: {name: [None if v != v else v for v in column] for name, column in columns.items()}
                    for uuid, columns in self.columns.items()}
