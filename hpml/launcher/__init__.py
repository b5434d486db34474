"""Turns a Hydra sweep into submitit jobs (local processes or SLURM job arrays) that run torchrun.

The launcher never imports a workload: it starts one by its module name (workloads.<name>).

    cli.py              `hpml launch | status | resume | report`
    launch.py           hpml launch: plan (Hydra + planner.py), check, write, submit
    resume.py           hpml resume: rerun the points that did not complete
    status.py           hpml status: each point's state from its files and the scheduler
    submission.py       submit planned points (launch and resume) and wait; progress.py prints the progress line
    backends/           where points run, one folder per cluster kind behind one interface (base.py) and one
                        registry (__init__.py): local/ (processes of this host, submitit's LocalExecutor),
                        slurm/ (job arrays through submitit's SlurmExecutor, squeue/sacct states, preflight)
    processes.py        whether the process that runs a point is alive (every backend's points)
    point_job.py        what runs on the allocation: one torchrun per node (torchrun.py), state.json
    torchrun_agent.py   how that torchrun starts: torch's own, with the cyclic GC paused while it imports torch
    jobspec.py          sweep point -> JobSpec and resource shape;  manifest.py: the sweep's manifest.json
    errors.py           LaunchError and one-line config errors
    preflight.py        config checks before launch;  config_store.py: the schemas, registered with Hydra
"""
