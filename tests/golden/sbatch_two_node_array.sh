#!/bin/bash

# Parameters
#SBATCH --account=proj
#SBATCH --array=0-2%2
#SBATCH --constraint=h100
#SBATCH --cpus-per-task=32
#SBATCH --error=/sweeps/golden/jobs/%A_%a/%A_%a_0_log.err
#SBATCH --exclusive
#SBATCH --gpus-per-node=4
#SBATCH --job-name=hpml
#SBATCH --mail-type=END
#SBATCH --mem=200G
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --open-mode=append
#SBATCH --output=/sweeps/golden/jobs/%A_%a/%A_%a_0_log.out
#SBATCH --partition=gpu
#SBATCH --qos=normal
#SBATCH --signal=USR2@30
#SBATCH --time=90
#SBATCH --wckey=submitit

# setup
module load cuda
hpml_status=$?; if [ $hpml_status -ne 0 ]; then printf 'hpml: cluster.setup[0] failed with exit status %d: %s\n' $hpml_status 'module load cuda' >&2; exit 1; fi

# command
export SUBMITIT_EXECUTOR=slurm
srun --unbuffered --output /sweeps/golden/jobs/%A_%a/%A_%a_%t_log.out --error /sweeps/golden/jobs/%A_%a/%A_%a_%t_log.err --cpu-bind=none python -P -u -m submitit.core._submit /sweeps/golden/jobs/%j
