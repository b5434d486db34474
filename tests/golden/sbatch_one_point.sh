#!/bin/bash

# Parameters
#SBATCH --cpus-per-task=1
#SBATCH --error=/sweeps/golden/jobs/%j/%j_0_log.err
#SBATCH --job-name=hpml
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=1
#SBATCH --open-mode=append
#SBATCH --output=/sweeps/golden/jobs/%j/%j_0_log.out
#SBATCH --signal=USR2@30
#SBATCH --time=10
#SBATCH --wckey=submitit

# setup

# command
export SUBMITIT_EXECUTOR=slurm
srun --unbuffered --output /sweeps/golden/jobs/%j/%j_%t_log.out --error /sweeps/golden/jobs/%j/%j_%t_log.err python -P -u -m submitit.core._submit /sweeps/golden/jobs/%j
