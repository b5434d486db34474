"""Turns a Hydra sweep into submitit jobs (local processes or SLURM job arrays) that run torchrun.

The launcher never imports a workload: it starts one by its module name (workloads.<name>).

    cli.py              `hpml launch | status | resume | report`
    launch.py           hpml launch: plan (Hydra + planner.py), check, write, submit
    resume.py           hpml resume: rerun the points that did not complete
    status.py           hpml status: each point's state from its files and the scheduler
    submission.py       submit planned points (launch and resume) and wait; progress.py prints the progress line
    local_runner.py     the local runner (submitit's LocalExecutor)
    slurm.py            SLURM job arrays (submitit's SlurmExecutor); slurm_preflight.py: does a shape fit?
    scheduler_state.py  job states from sacct / squeue
    point_job.py        what runs on the allocation: one torchrun per node (torchrun.py), state.json
    jobspec.py          sweep point -> JobSpec and resource shape;  manifest.py: the sweep's manifest.json
    errors.py           LaunchError and one-line config errors
    preflight.py        config checks before launch;  config_store.py: the schemas, registered with Hydra
"""
