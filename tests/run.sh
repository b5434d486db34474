#!/usr/bin/env bash
# The whole test suite: brings the throwaway localhost SLURM cluster up (root on Debian/Ubuntu with
# slurm-wlm, slurmdbd, munge and mariadb-server installed), runs pytest, and takes the cluster down.
# Without root or those packages: `pytest -m "not slurm"` runs every test that needs no cluster.
#
# Three parts (issue 25, item 3; docs/results/test-suite-speed.md), each test in exactly one:
#   1. the tests that neither time anything nor need the cluster, on HPML_TEST_WORKERS pytest-xdist workers
#      (default 2, one per core of the 2-core machine it is timed on): the suite waits on subprocesses
#      (torchrun, gloo, polling) much of its time, so a second worker fills the idle core. --dist loadfile
#      keeps a file's tests on one worker, so a module's shared sweep (module-scoped fixture) is made once; the
#      files go out heaviest first (tests/file_order.py, with --no-loadscope-reorder: xdist's own order puts the files
#      with the most tests first, and the heaviest have few), so the part ends with light files on both workers.
#   2. meanwhile, the SLURM tests (marker `slurm`), one at a time: one cluster, and mostly waiting on it
#      (queueing, a requeue held 15 s: cred_expire in tests/slurm/cluster.sh). Their output is printed after part 1's.
#   3. then the tests marked `serial`, alone on the machine: only those whose claim is a ratio of two things that
#      must be timed one after the other, which a load changing between them would skew (a run's steps against the
#      communication probe the workload times after them). Two things that can run at once do so in part 1 instead
#      (test_compare.py's gate launches both its sides together). No test bounds a duration in seconds (issue 41):
#      a test that checks speed bounds the ratio of two things it times itself, so it runs in part 1 or 2 and
#      passes on a slow or busy machine (docs/results/test-suite-speed.md).
# Extra arguments go to every part (-x, -k ...); to select by marker (-m), run pytest yourself.
# Python caches bytecode here even where PYTHONDONTWRITEBYTECODE is set (issue 41): the suite starts about a thousand
# Python processes that import hpml's modules, and each pytest rewrites the test modules' asserts; without the cache
# every one compiles them again (docs/results/test-suite-speed.md, "stop 54"). The caches are the __pycache__
# folders that .gitignore already leaves out.
# Each test process computes on one CPU thread (OMP_NUM_THREADS=1, unless it is set already): three streams of
# processes share the two cores (two xdist workers and the SLURM part), and torch's default of a thread per core
# made each parallel region's threads wait on a core another process held (docs/results/test-suite-speed.md,
# "stop 57"). hpml's points set their own from resources.cpus_per_worker, as they do for users.
# Without arguments, the SLURM part and the serial part collect only the files that hold their marker's tests,
# instead of importing every test module to keep a few; with arguments (a path, -k ...), every part collects as asked.
set -uo pipefail
cd "$(dirname "$0")/.."
unset PYTHONDONTWRITEBYTECODE
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
marked() {  # the test files that hold tests of marker $1 (tests/part_markers.py), none where arguments select
    if [ "$#" -gt 1 ]; then return; fi
    python -m tests.part_markers "$1"  # should it print nothing, the part collects every file: slower, not wrong
}
bash tests/slurm/cluster.sh up || exit 1
. "${HPML_SLURM_DIR:-/tmp/hpml-slurm}/env.sh"
slurm_log=$(mktemp)
# shellcheck disable=SC2046  # one word per file name: test file names have no spaces
python -m pytest -q -p no:cacheprovider -m "slurm and not serial" $(marked slurm "$@") "$@" >"$slurm_log" 2>&1 &
slurm_pid=$!
python -m pytest -q -n "${HPML_TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder -p tests.file_order \
    -m "not slurm and not serial" "$@"
parallel=$?
wait "$slurm_pid"
slurm=$?
echo "--- SLURM tests (run beside the above) ---"
cat "$slurm_log" && rm -f "$slurm_log"
echo "--- tests that time something (alone) ---"
# shellcheck disable=SC2046
python -m pytest -q -m serial $(marked serial "$@") "$@"
serial=$?
bash tests/slurm/cluster.sh down
# pytest's 5 is "no test collected": a selection (-k) that matches none of one part's tests is no failure
for rc in $parallel $slurm $serial; do
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 5 ]; then exit "$rc"; fi
done
exit 0
