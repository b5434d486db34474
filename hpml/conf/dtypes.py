"""The floating-point types a workload's tensors can take, shared by the workloads whose schemas offer them
(allreduce's messages, paleo's weights and inputs), with their element sizes."""

from __future__ import annotations

from enum import Enum
from typing import Dict


class DType(str, Enum):
    float32 = "float32"
    bfloat16 = "bfloat16"
    float16 = "float16"


DTYPE_BYTES: Dict[DType, int] = {DType.float32: 4, DType.bfloat16: 2, DType.float16: 2}
