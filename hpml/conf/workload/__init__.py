"""The `workload` config group: each workload's defaults (<name>.yaml, composed by Hydra) beside its typed
schema (<name>.py), and the registry below, one line per workload.

The registry is all that the rest of hpml knows of the workloads: conf/schema.py builds `workload` with the
schema its name picks, launcher/config_store.py registers each as `<name>_schema` for the YAML defaults lists.
"""

from __future__ import annotations

from typing import Dict, Type

from hpml.conf.workload.allreduce import AllreduceConfig
from hpml.conf.workload.cuda_vecadd import CudaVecaddConfig
from hpml.conf.workload.dataloader import DataloaderConfig
from hpml.conf.workload.paleo import PaleoConfig
from hpml.conf.workload.probe import ProbeConfig
from hpml.conf.workload.quantize import QuantizeConfig
from hpml.conf.workload.synthetic import SyntheticConfig
from hpml.conf.workload.train import TrainConfig
from hpml.conf.workload_contract import WorkloadConfig

WORKLOAD_SCHEMAS: Dict[str, Type[WorkloadConfig]] = {
    "train": TrainConfig,
    "allreduce": AllreduceConfig,
    "cuda_vecadd": CudaVecaddConfig,
    "probe": ProbeConfig,
    "paleo": PaleoConfig,
    "synthetic": SyntheticConfig,
    "quantize": QuantizeConfig,
    "dataloader": DataloaderConfig,
}
