#!/usr/bin/env bash
# The whole test suite: brings the throwaway localhost SLURM cluster up (root on Debian/Ubuntu with
# slurm-wlm, slurmdbd, munge and mariadb-server installed), runs pytest, and takes the cluster down.
# Without root or those packages: `pytest -m "not slurm"` runs every test that needs no cluster.
set -uo pipefail
cd "$(dirname "$0")/.."
bash tests/slurm/cluster.sh up || exit 1
. "${HPML_SLURM_DIR:-/tmp/hpml-slurm}/env.sh"
python -m pytest -q "$@"
rc=$?
bash tests/slurm/cluster.sh down
exit $rc
