# Shared by the docs/results/*/run_h200.sh scripts: set-up, the machine's description and `stage`, which runs
# one `hpml launch` unless it is not selected or would overrun the time budget. Source it after setting
# BUDGET_S's default and NAME (the prefix of the work folder):
#
#   NAME=hw5_h200 BUDGET_S=${BUDGET_S:-450}; source "$(dirname "$0")/../lib/stages.sh"
#
# Environment read here:
#   OUT      (default ./h200_out) the folder that receives the files; run.log there logs every stage
#   GPUS     (default: all that nvidia-smi lists, at most 4): N in {1, 2, 4} <= GPUS; sets NS (e.g. 1,2,4),
#            MAXN (the largest N) and BELOW (the Ns under MAXN, empty on one GPU)
#   STAGES   (default: all) the stage names to run, separated by commas or spaces; a stage called
#            "large.none" is selected by "large" or by "large.none". They run in the script's order, not in
#            STAGES's (STAGES=limit,dp still runs dp first)
#   BUDGET_S a stage starts only if the seconds elapsed plus its estimate stay within it; a skipped stage
#            is logged as SKIPPED, so it can be run alone later with STAGES=<name>
#   DRY_RUN  =1: every stage runs `hpml launch --dry-run` (its points composed and checked, nothing run),
#            the budget is not applied and nvidia-smi is not needed (give GPUS). A check of a script's
#            command lines on any machine, before spending GPU time on them.
#
# A script that runs its own commands rather than stages takes the set-up functions alone: sourced with
# STAGES_FUNCTIONS_ONLY=1, this file defines no_nvlink_multicast, on_pythonpath, wheels_if_missing and hpml and
# does nothing else (no cd, no OUT or run.log, no GPU count, no work folder):
#
#   STAGES_FUNCTIONS_ONLY=1 source "$(dirname "${BASH_SOURCE[0]}")/../lib/stages.sh"
#   no_nvlink_multicast; wheels_if_missing; on_pythonpath "$PWD"
set -uo pipefail

# no_nvlink_multicast: NCCL, torch's symmetric memory and NVSHMEM never use NVLink multicast (the lent machines'
# rule).
no_nvlink_multicast() {
  export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
}

# on_pythonpath DIR: DIR first on PYTHONPATH (exported), before what was there.
on_pythonpath() {
  export PYTHONPATH=$1${PYTHONPATH:+:$PYTHONPATH}
}

# wheels_if_missing: a bare GPU machine lacks hydra, omegaconf and submitit; they are installed from the carried
# .whl/ (of the current folder) into /tmp/site, which goes on PYTHONPATH. Returns pip's failure, if any.
wheels_if_missing() {
  python3 -c "import hydra, omegaconf, submitit" 2>/dev/null && return 0
  local rc=0
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    .whl/*.whl || rc=$?
  on_pythonpath /tmp/site
  return "$rc"
}

hpml() { python3 -m hpml.launcher.cli "$@"; }

if [ "${STAGES_FUNCTIONS_ONLY:-0}" = 1 ]; then
  return 0
fi

no_nvlink_multicast
export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1  # a worker stopped with SIGABRT logs where it was

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
cd "$REPO" || exit 1
OUT=${OUT:-$REPO/h200_out}
mkdir -p "$OUT"
WORK=$(mktemp -d "/tmp/${NAME:-h200}.XXXXXX")
ROOT=$WORK/sweeps
LOG=$OUT/run.log
START=$(date +%s)
DRY_RUN=${DRY_RUN:-0}

wheels_if_missing || { echo "missing hydra/omegaconf/submitit and no usable .whl/" | tee -a "$LOG"; exit 1; }
on_pythonpath "$REPO"

GPUS=${GPUS:-$(nvidia-smi -L 2>/dev/null | wc -l)}
[ "$GPUS" -ge 1 ] || { echo "no GPU found (nvidia-smi -L); give GPUS=<n> with DRY_RUN=1" | tee -a "$LOG"; exit 1; }
[ "$GPUS" -gt 4 ] && GPUS=4
case $GPUS in 1) NS=1;; 2|3) NS=1,2; GPUS=2;; *) NS=1,2,4; GPUS=4;; esac
MAXN=${NS##*,}
BELOW=$([ "$NS" = 1 ] || echo "${NS%,*}")

{
  echo "# $(basename "$0") $(date -u +%FT%TZ) on $(hostname); GPUs used: $GPUS (N = $NS); budget ${BUDGET_S}s"
  # The device tool copies the working tree, not always a current .git: the scripts' own hashes say which ran.
  echo "# git HEAD of this copy $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown); sha256:" \
    "$(sha256sum "$0" | cut -c1-12) $(basename "$0"), $(sha256sum "${BASH_SOURCE[0]}" | cut -c1-12) stages.sh;" \
    "STAGES=${STAGES:-all}"
  if [ "$DRY_RUN" = 1 ]; then
    echo "# DRY_RUN=1: points composed and checked, nothing run"
  else
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
    nvidia-smi topo -m 2>/dev/null | head -n $((GPUS + 1))
    python3 -c "import torch, torchvision; print('torch', torch.__version__, 'torchvision', torchvision.__version__, 'cuda', torch.version.cuda, 'nccl', torch.cuda.nccl.version())"
  fi
} 2>&1 | tee "$LOG"

# stage NAME ESTIMATE_S hpml-launch-arguments...: one launch (logged with its time), unless STAGES leaves it
# out or the budget cannot hold its estimate.
stage() {
  local name=$1 est=$2; shift 2
  local selected=" ${STAGES:-$name} "
  selected=${selected//,/ }
  if [[ "$selected" != *" $name "* && "$selected" != *" ${name%%.*} "* ]]; then
    return
  fi
  local now=$(( $(date +%s) - START ))
  if [ "$DRY_RUN" = 1 ]; then
    echo "## stage $name (estimate ${est}s): hpml launch --dry-run $*" | tee -a "$LOG"
    hpml launch --dry-run "$@" sweep.root="$ROOT" cluster.assume_gpus="$GPUS" 2>&1 | tee -a "$LOG"
    return
  fi
  if [ $(( now + est )) -gt "$BUDGET_S" ]; then
    echo "## stage $name: SKIPPED (elapsed ${now}s + estimate ${est}s > budget ${BUDGET_S}s)" | tee -a "$LOG"
    return
  fi
  # A stage that hangs is stopped at twice its estimate (and before the budget's end), its workers too
  # (torchrun starts them in sessions of their own), and what finished before is kept: save_results.
  local limit=$(( est * 2 + 30 )) left=$(( BUDGET_S + 30 - now ))
  [ "$left" -lt "$limit" ] && limit=$left
  echo "## stage $name at ${now}s (estimate ${est}s, stopped after ${limit}s): hpml launch $*" | tee -a "$LOG"
  local t0=$(date +%s) rc
  timeout -k 10 "$limit" python3 -m hpml.launcher.cli launch "$@" sweep.root="$ROOT" >>"$LOG" 2>&1
  rc=$?
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    echo "## stage $name: STOPPED after ${limit}s; its unfinished points are lost" | tee -a "$LOG"
    # SIGABRT first: with PYTHONFAULTHANDLER=1 a hung worker writes every thread's stack to its log.
    pkill -ABRT -f "workloads\.(train|synthetic|allreduce)" 2>/dev/null && sleep 3
    pkill -9 -f "workloads\.(train|synthetic|allreduce)" 2>/dev/null
    sleep 2
  fi
  echo "## stage $name: exit $rc after $(( $(date +%s) - t0 ))s" | tee -a "$LOG"
  save_results
}

# save_results: every finished point so far into $OUT/<NAME>_partial.tar.gz (replaced after each stage), so
# that a call cut short still returns them; finish_results replaces it with the whole tarball.
save_results() {
  [ -d "$ROOT" ] && tar -C "$WORK" -czf "$OUT/${NAME:-h200}_partial.tar.gz" --exclude=checkpoint.pt sweeps
}

# finish_results TARBALL: sweeps and report into $OUT/TARBALL; the partial tarball goes.
finish_results() {
  find "$ROOT" -name checkpoint.pt -delete 2>/dev/null
  tar -C "$WORK" -czf "$OUT/$1" sweeps report && rm -f "$OUT/${NAME:-h200}_partial.tar.gz"
}

# skipped_stages: the SKIPPED lines of run.log, or "all stages ran"; for the end of bars.txt.
skipped_stages() {
  grep SKIPPED "$LOG" || echo "all selected stages ran"
}
