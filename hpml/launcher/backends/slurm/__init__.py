"""The SLURM backend, all of its code in this folder: backend.py (the Backend the registry holds), submit.py (job
arrays through submitit), preflight.py and requests.py (the checks against the cluster), limits.py (submit
limits), states.py (squeue/sacct), job_resources.py (`hpml resume --grow`), energy.py (sacct's ConsumedEnergy),
report_job.py (the job that runs `hpml report` once a sweep nobody waits for has ended)."""

from hpml.launcher.backends.slurm.backend import SlurmBackend

__all__ = ["SlurmBackend"]
