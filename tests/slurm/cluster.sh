#!/usr/bin/env bash
# Throwaway 2-node SLURM cluster on localhost, for the hpml test suite and CI.
#
#   bash tests/slurm/cluster.sh up       # start (or confirm running), wait until usable
#   bash tests/slurm/cluster.sh down     # stop exactly the daemons this script started
#   bash tests/slurm/cluster.sh status   # daemon liveness + sinfo
#   bash tests/slurm/cluster.sh clean    # down, then delete the state directory
#
# Then: source "${HPML_SLURM_DIR:-/tmp/hpml-slurm}/env.sh"  (exports SLURM_CONF)
#
# Needs root on Debian/Ubuntu with: slurm-wlm slurmdbd munge mariadb-server.
# Works without systemd (containers): every daemon is started directly, with
# private sockets/ports/pid files under the state directory, so it neither uses
# nor disturbs a system-wide munge/MariaDB/SLURM that may also be installed.
#
# Knobs (environment):
#   HPML_SLURM_DIR        state directory            (default /tmp/hpml-slurm)
#   HPML_SLURM_PORT_BASE  first of the ports we use  (default 16800)
#   HPML_SLURM_TIMEOUT    seconds to wait for health (default 90)
#   HPML_SLURM_GPU_FILES  gres.conf File= for the fake GPUs (default: see gen_configs)
set -euo pipefail

# Daemons live in /usr/sbin, which is not on PATH in every shell.
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

DIR=$(realpath -m "${HPML_SLURM_DIR:-/tmp/hpml-slurm}")
PORT_BASE=${HPML_SLURM_PORT_BASE:-16800}
TIMEOUT=${HPML_SLURM_TIMEOUT:-90}
CLUSTER=hpml
ACCOUNT=hpml
NODES=(n1 n2)
# slurmctld refuses to start unless SlurmctldHost matches the short hostname.
HOST=$(hostname -s)

# Private ports, away from the defaults (3306, 6817-6819) so a system install
# on the same box does not collide with us.
MYSQL_PORT=$((PORT_BASE + 6))
CTLD_PORT=$((PORT_BASE + 17))
DBD_PORT=$((PORT_BASE + 19))
slurmd_port() { echo $((PORT_BASE + 20 + ${1#n})); }   # n1 -> base+21, n2 -> base+22
# Node features as a cluster with two GPU models has them, ordered by GPU memory: cluster.gpu_ladder=[gpu40g,gpu80g]
# (hpml resume --grow moves a point that ran out of CUDA memory from n1 to n2).
node_feature() { if [ "$1" = n1 ]; then echo gpu40g; else echo gpu80g; fi; }

CONF=$DIR/slurm.conf
LOGDIR=$DIR/log
RUNDIR=$DIR/run
MUNGE_DIR=$DIR/munge
MUNGE_SOCK=$MUNGE_DIR/munge.socket
MYSQL_DIR=$DIR/mysql
MYSQL_SOCK=$MYSQL_DIR/mysqld.sock
DB_NAME=slurm_acct_db
DB_USER=slurm
DB_PASS=hpml-test-only   # throwaway DB bound to 127.0.0.1 only

# All slurm commands below (and in the caller, via env.sh) use our config.
export SLURM_CONF=$CONF

# ----------------------------------------------------------------- helpers --

log() { echo "[cluster.sh] $*"; }
die() {
    echo "[cluster.sh] ERROR: $*" >&2
    exit 1
}

first_cmd() { # first of the given commands that exists (MariaDB renamed its tools)
    local c
    for c in "$@"; do
        if command -v "$c" >/dev/null 2>&1; then
            echo "$c"
            return 0
        fi
    done
    return 1
}

# alive NAME PIDFILE: the pid file names a live process whose command is NAME.
# Checking the command name (not just kill -0) means a stale pid file whose pid
# was reused by an unrelated process is never mistaken for our daemon.
alive() {
    local name=$1 pidfile=$2 pid comm
    [[ -s $pidfile ]] || return 1
    pid=$(tr -dc '0-9' <"$pidfile")
    [[ -n $pid ]] || return 1
    pid_running "$pid" || return 1
    comm=$(cat "/proc/$pid/comm" 2>/dev/null) || return 1
    [[ $comm == "$name" ]]
}

# pid_running PID: exists and is not a zombie. A killed daemon stays a zombie
# until reaped, and container init processes do not always reap.
pid_running() {
    local state
    kill -0 "$1" 2>/dev/null || return 1
    state=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1) || return 1
    [[ -n $state && $state != [ZX] ]]
}

pid_of() { tr -dc '0-9' <"$2"; }

# Remove a pid file that does not point at a live NAME process.
clear_stale() {
    local name=$1 pidfile=$2
    if [[ -e $pidfile ]] && ! alive "$name" "$pidfile"; then
        log "removing stale pid file $pidfile"
        rm -f "$pidfile"
    fi
}

# wait_for SECONDS CMD...: poll CMD (quietly) until it succeeds.
wait_for() {
    local secs=$1
    shift
    local deadline=$((SECONDS + secs))
    until "$@" >/dev/null 2>&1; do
        if ((SECONDS >= deadline)); then
            return 1
        fi
        sleep 0.5
    done
}

# Fail with a pointer to the log that explains why.
fail_with_log() {
    local msg=$1 logfile=$2
    {
        echo "[cluster.sh] ERROR: $msg"
        echo "[cluster.sh] see $logfile (last lines below); all logs: $LOGDIR"
        [[ -f $logfile ]] && tail -n 25 "$logfile" | sed 's/^/    /'
    } >&2
    exit 1
}

# stop NAME PIDFILE: TERM, wait, then KILL; only ever the pid from our file.
stop() {
    local name=$1 pidfile=$2 pid i
    if ! alive "$name" "$pidfile"; then
        rm -f "$pidfile"
        return 0
    fi
    pid=$(pid_of "$name" "$pidfile")
    log "stopping $name (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 60; i++)); do # up to 30 s (MariaDB flushes on shutdown)
        pid_running "$pid" || break
        sleep 0.5
    done
    if pid_running "$pid"; then
        log "$name (pid $pid) ignored SIGTERM, sending SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
        sleep 0.5
    fi
    rm -f "$pidfile"
}

# ----------------------------------------------------------------- configs --

gen_configs() {
    mkdir -p "$DIR" "$LOGDIR" "$RUNDIR" "$DIR/spool/slurmctld"
    # Job scripts are exec'd out of SlurmdSpoolDir, so 0755 (slurm.conf(5)).
    for n in "${NODES[@]}"; do mkdir -p "$DIR/spool/slurmd-$n"; done
    chmod 0755 "$DIR" "$DIR/spool" "$DIR"/spool/slurmd-*

    # Fake GPUs, of GRES type "fake" (a typed request, --gres=gpu:fake:2, is tested
    # beside the untyped --gpus-per-node=2). 22.05 drops GRES that have no File=, so point them at two
    # existing character devices; the trailing digits become the device
    # numbers, hence CUDA_VISIBLE_DEVICES=0,1. Nothing ever opens them.
    local gpu_files=${HPML_SLURM_GPU_FILES:-}
    if [[ -z $gpu_files ]]; then
        if [[ -c /dev/tty0 && -c /dev/tty1 ]]; then
            gpu_files='/dev/tty[0-1]'
        else
            # Containers often lack /dev/tty0. Symlinks to /dev/null stat() as
            # character devices (slurm rejects regular files: CUDA_VISIBLE_DEVICES
            # then stays empty) and need no CAP_MKNOD.
            mkdir -p "$DIR/dev"
            for i in 0 1; do ln -sfn /dev/null "$DIR/dev/gpu$i"; done
            gpu_files="$DIR/dev/gpu[0-1]"
        fi
    fi

    cat >"$CONF" <<EOF
# Generated by tests/slurm/cluster.sh -- edits are overwritten by 'up'.
ClusterName=$CLUSTER
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$CTLD_PORT
# Everything runs as root: simplest in a throwaway container.
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# Our own munged, not the system one. cred_expire: a step credential's lifetime, and also how long SLURM holds a
# requeued job before it may start again (slurm.conf(5), AuthInfo; default 120 s, which the requeue test waited out
# once per requeue; 30 s until issue 41's stop 49). 15 s still leaves a step on a loaded machine ample time between
# its credential and its launch (both on this host: a launch RPC takes milliseconds); SLURM's floor is 5 s.
AuthInfo=socket=$MUNGE_SOCK,cred_expire=15

StateSaveLocation=$DIR/spool/slurmctld
SlurmdSpoolDir=$DIR/spool/slurmd-%n
SlurmctldPidFile=$RUNDIR/slurmctld.pid
SlurmdPidFile=$RUNDIR/slurmd-%n.pid
SlurmctldLogFile=$LOGDIR/slurmctld.log
SlurmdLogFile=$LOGDIR/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info

# No cgroups in a container: track processes via /proc, no task binding.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/linux
# Without cgroups, --mem is enforced by the accounting poll: a step whose processes' memory (PSS: shared pages
# counted once, not once per torch process) passes the job's --mem is killed and the job ends OUT_OF_MEMORY, as
# the cgroup OOM killer makes it end on a production cluster (hpml resume --grow's host-memory case).
JobAcctGatherFrequency=task=1
JobAcctGatherParams=OverMemoryKill,UsePss
MpiDefault=none
SwitchType=switch/none
# Containers may forbid raising rlimits; do not copy the submitter's.
PropagateResourceLimits=NONE

SelectType=select/cons_tres
# Memory is a consumable resource so that --mem is each job's enforced limit (OverMemoryKill above); a job that
# asks for none gets 2000 MB a CPU, the node's 8000 MB over its 4 CPUs: as many 1-CPU jobs fit as before, and a
# training point (Python, torch and a torchrun: 1.05-1.13 GB PSS measured) fits its share.
SelectTypeParameters=CR_CPU_Memory
DefMemPerCPU=2000
GresTypes=gpu
# Nodes claim more CPUs/memory than the box has; trust slurm.conf, not the HW.
SlurmdParameters=config_overrides

# Accounting via slurmdbd -> MariaDB, so sacct works.
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$DBD_PORT
# Not a password: with auth/munge, connections to slurmdbd are signed via the
# munge socket named here. AuthInfo is NOT used for them, so without this every
# sacct/sacctmgr tries /run/munge/munge.socket.2 and fails.
AccountingStoragePass=$MUNGE_SOCK
AccountingStorageTRES=gres/gpu
AccountingStoreFlags=job_comment
JobCompType=jobcomp/none
# No mail(1) in containers; the default MailProg only produces log errors.
MailProg=/bin/true

# Limits the tests rely on.
MaxArraySize=101
MaxJobCount=20000
# Keep finished jobs visible in squeue/scontrol for 10 minutes.
MinJobAge=600
KillWait=5
OverTimeLimit=0
InactiveLimit=0
JobRequeue=1
# Reject jobs that exceed partition limits (e.g. --time over MaxTime) at
# submit time instead of leaving them PENDING (PartitionTimeLimit) forever.
EnforcePartLimits=ALL
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=60
MessageTimeout=10

# Schedule quickly: tests submit and then wait on the result.
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2,bf_interval=2,bf_resolution=60,default_queue_depth=1000,bf_max_job_test=1000

EOF
    for n in "${NODES[@]}"; do
        echo "NodeName=$n NodeHostname=$HOST NodeAddr=127.0.0.1 Port=$(slurmd_port "$n") CPUs=4 RealMemory=8000 Gres=gpu:fake:2 Features=$(node_feature "$n") State=UNKNOWN" >>"$CONF"
    done
    cat >>"$CONF" <<EOF

PartitionName=debug Nodes=n[1-2] Default=YES MaxTime=60 State=UP
PartitionName=short Nodes=n1 Default=NO MaxTime=5 State=UP
EOF

    cat >"$DIR/gres.conf" <<EOF
# Generated by tests/slurm/cluster.sh. AutoDetect=off so a real NVML on the
# host cannot replace the fake devices.
AutoDetect=off
NodeName=n[1-2] Name=gpu Type=fake File=$gpu_files
EOF

    # slurmdbd reads slurmdbd.conf from the directory of SLURM_CONF and refuses
    # a file readable by others (it holds the DB password).
    (
        umask 077
        cat >"$DIR/slurmdbd.conf" <<EOF
# Generated by tests/slurm/cluster.sh.
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCK
DbdHost=$HOST
DbdAddr=127.0.0.1
DbdPort=$DBD_PORT
SlurmUser=root
LogFile=$LOGDIR/slurmdbd.log
PidFile=$RUNDIR/slurmdbd.pid
DebugLevel=info
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$MYSQL_PORT
StorageUser=$DB_USER
StoragePass=$DB_PASS
StorageLoc=$DB_NAME
EOF
    )
    chmod 0600 "$DIR/slurmdbd.conf"

    cat >"$DIR/env.sh" <<EOF
# source me: points slurm commands (sbatch, squeue, sacct, ...) at the test cluster
export SLURM_CONF=$CONF
export HPML_SLURM_DIR=$DIR
EOF
}

# ------------------------------------------------------------------- munge --

munge_ok() { munge -n -S "$MUNGE_SOCK" | unmunge -S "$MUNGE_SOCK"; }

start_munge() {
    local pidfile=$RUNDIR/munged.pid key=$MUNGE_DIR/munge.key
    clear_stale munged "$pidfile"
    if alive munged "$pidfile"; then
        log "munged already running (pid $(pid_of munged "$pidfile"))"
        return
    fi
    # munged insists the key dir is not group/other-writable and the key is
    # private; /tmp itself is fine because it has the sticky bit.
    mkdir -p "$MUNGE_DIR"
    chmod 0755 "$MUNGE_DIR"
    if [[ ! -s $key ]]; then
        log "generating munge key"
        dd if=/dev/urandom of="$key" bs=1024 count=1 status=none
    fi
    chmod 0400 "$key"
    rm -f "$MUNGE_SOCK" "$MUNGE_SOCK.lock"
    log "starting munged"
    # --force: downgrade munged's file-permission checks (and a leftover
    # socket) from fatal to warnings, since container mounts are often odd.
    # --num-threads: slurm's own advice for many concurrent clients.
    # It forks itself and writes the pid file.
    munged --force --num-threads=10 \
        --key-file="$key" \
        --socket="$MUNGE_SOCK" \
        --pid-file="$pidfile" \
        --log-file="$LOGDIR/munged.log" \
        --seed-file="$MUNGE_DIR/munged.seed" ||
        fail_with_log "munged failed to start" "$LOGDIR/munged.log"
    wait_for 15 munge_ok || fail_with_log "munged does not answer" "$LOGDIR/munged.log"
}

# ----------------------------------------------------------------- mariadb --

sql() { "$MYSQL_CLIENT" --no-defaults -S "$MYSQL_SOCK" -u root; }
mariadb_ok() { "$MYSQL_ADMIN" --no-defaults -S "$MYSQL_SOCK" -u root ping; }

start_mariadb() {
    local pidfile=$RUNDIR/mariadbd.pid datadir=$MYSQL_DIR/data mlog=$LOGDIR/mariadb.log
    local server
    server=$(first_cmd mariadbd mysqld) || die "mariadbd not found (apt-get install mariadb-server)"
    MYSQL_CLIENT=$(first_cmd mariadb mysql) || die "mariadb client not found"
    MYSQL_ADMIN=$(first_cmd mariadb-admin mysqladmin) || die "mariadb-admin not found"

    clear_stale "$(basename "$server")" "$pidfile"
    if alive "$(basename "$server")" "$pidfile"; then
        log "mariadbd already running (pid $(pid_of x "$pidfile"))"
    else
        mkdir -p "$MYSQL_DIR"
        # The marker is written only after a complete init, so an interrupted
        # first run is redone rather than leaving a half-built datadir.
        if [[ ! -f $MYSQL_DIR/.installed ]]; then
            log "initialising MariaDB datadir"
            rm -rf "$datadir"
            local installer
            installer=$(first_cmd mariadb-install-db mysql_install_db) || die "mariadb-install-db not found"
            "$installer" --no-defaults --datadir="$datadir" --user=root \
                --auth-root-authentication-method=socket --skip-test-db \
                >>"$mlog" 2>&1 || fail_with_log "mariadb-install-db failed" "$mlog"
            touch "$MYSQL_DIR/.installed"
        fi
        rm -f "$MYSQL_SOCK"
        log "starting mariadbd"
        # No systemd/mysqld_safe: run the server directly, detached (setsid,
        # no tty) so it outlives this shell; it writes its own pid file.
        # --user=root: it refuses to run as root otherwise.
        # --innodb-use-native-aio=0: container seccomp often blocks io_uring/aio.
        # lock_wait_timeout / log_file_size: values slurmdbd asks for.
        setsid "$server" --no-defaults \
            --datadir="$datadir" \
            --socket="$MYSQL_SOCK" \
            --port="$MYSQL_PORT" --bind-address=127.0.0.1 --skip-name-resolve \
            --pid-file="$pidfile" \
            --log-error="$mlog" \
            --user=root \
            --innodb-use-native-aio=0 \
            --innodb-buffer-pool-size=256M \
            --innodb-log-file-size=64M \
            --innodb-lock-wait-timeout=900 \
            </dev/null >>"$mlog" 2>&1 &
        wait_for 60 mariadb_ok || fail_with_log "mariadbd did not come up" "$mlog"
    fi
    # Idempotent: database + user for slurmdbd, over TCP from 127.0.0.1.
    sql <<EOF || fail_with_log "creating the slurm database failed" "$mlog"
CREATE DATABASE IF NOT EXISTS $DB_NAME;
CREATE USER IF NOT EXISTS '$DB_USER'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
CREATE USER IF NOT EXISTS '$DB_USER'@'localhost' IDENTIFIED BY '$DB_PASS';
GRANT ALL ON $DB_NAME.* TO '$DB_USER'@'127.0.0.1';
GRANT ALL ON $DB_NAME.* TO '$DB_USER'@'localhost';
FLUSH PRIVILEGES;
EOF
}

# ---------------------------------------------------------------- slurmdbd --

start_slurmdbd() {
    local pidfile=$RUNDIR/slurmdbd.pid
    clear_stale slurmdbd "$pidfile"
    if alive slurmdbd "$pidfile"; then
        log "slurmdbd already running (pid $(pid_of x "$pidfile"))"
    else
        log "starting slurmdbd"
        # Daemonises itself; finds slurmdbd.conf next to \$SLURM_CONF.
        slurmdbd || fail_with_log "slurmdbd failed to start" "$LOGDIR/slurmdbd.log"
    fi
    # First start creates the schema, which takes a few seconds.
    wait_for 60 sacctmgr -n list cluster ||
        fail_with_log "slurmdbd does not answer" "$LOGDIR/slurmdbd.log"
}

# Register cluster, account and root's association so sacct/sbatch accounting
# work. Done before slurmctld starts so it finds its cluster on first contact.
register_accounting() {
    if ! sacctmgr -n -P list cluster format=cluster | grep -qx "$CLUSTER"; then
        log "registering cluster '$CLUSTER' in slurmdbd"
        sacctmgr -i add cluster "$CLUSTER" >/dev/null
    fi
    if ! sacctmgr -n -P list account "$ACCOUNT" format=account | grep -qx "$ACCOUNT"; then
        sacctmgr -i add account "$ACCOUNT" Cluster="$CLUSTER" \
            Description="hpml tests" Organization=hpml >/dev/null
    fi
    if ! sacctmgr -n -P list assoc cluster="$CLUSTER" account="$ACCOUNT" user=root format=user |
        grep -qx root; then
        sacctmgr -i add user root Account="$ACCOUNT" Cluster="$CLUSTER" >/dev/null
    fi
}

# ---------------------------------------------------------- slurmctld / d --

start_slurmctld() {
    local pidfile=$RUNDIR/slurmctld.pid
    clear_stale slurmctld "$pidfile"
    if alive slurmctld "$pidfile"; then
        log "slurmctld already running (pid $(pid_of x "$pidfile"))"
    else
        log "starting slurmctld"
        slurmctld || fail_with_log "slurmctld failed to start" "$LOGDIR/slurmctld.log"
    fi
    wait_for 30 scontrol ping ||
        fail_with_log "slurmctld does not answer 'scontrol ping'" "$LOGDIR/slurmctld.log"
}

start_slurmd() {
    local n=$1 pidfile=$RUNDIR/slurmd-$1.pid
    clear_stale slurmd "$pidfile"
    if alive slurmd "$pidfile"; then
        log "slurmd -N $n already running (pid $(pid_of x "$pidfile"))"
        return
    fi
    log "starting slurmd -N $n"
    # -N: several slurmd on one host, each acting as a different node.
    slurmd -N "$n" || fail_with_log "slurmd -N $n failed to start" "$LOGDIR/slurmd-$n.log"
}

# ------------------------------------------------------------------ health --

# Node states as "n1 idle" lines (a node in two partitions is listed twice).
node_states() { sinfo -h -N -o '%N %T' | sort -u; }

# Usable = responding: idle, or busy with jobs (mixed/allocated/completing).
nodes_ready() {
    local states
    states=$(node_states) || return 1
    for n in "${NODES[@]}"; do
        grep -Eqx "$n (idle|mixed|allocated|completing)" <<<"$states" || return 1
    done
}

no_active_jobs() { [[ -z $(squeue -h -t R,CG,S -o %i) ]]; }

sacct_ok() { sacct -n -X -a --starttime=now-1minutes; }

all_alive() {
    alive munged "$RUNDIR/munged.pid" &&
        { alive mariadbd "$RUNDIR/mariadbd.pid" || alive mysqld "$RUNDIR/mariadbd.pid"; } &&
        alive slurmdbd "$RUNDIR/slurmdbd.pid" &&
        alive slurmctld "$RUNDIR/slurmctld.pid" &&
        alive slurmd "$RUNDIR/slurmd-n1.pid" &&
        alive slurmd "$RUNDIR/slurmd-n2.pid"
}

healthy() { all_alive && scontrol ping >/dev/null 2>&1 && nodes_ready && sacct_ok >/dev/null 2>&1; }

# ---------------------------------------------------------------- commands --

cmd_up() {
    [[ $(id -u) -eq 0 ]] || die "must run as root (daemons run as root, SlurmUser=root)"
    local t0=$SECONDS
    if [[ -f $CONF ]] && healthy; then
        log "already up and healthy ($DIR); source $DIR/env.sh"
        return 0
    fi
    for b in munged slurmctld slurmd slurmdbd sacctmgr sbatch; do
        command -v "$b" >/dev/null || die "$b not found (apt-get install slurm-wlm slurmdbd munge mariadb-server)"
    done
    gen_configs
    start_munge
    start_mariadb
    start_slurmdbd
    register_accounting
    start_slurmctld
    for n in "${NODES[@]}"; do start_slurmd "$n"; done

    log "waiting up to ${TIMEOUT}s for nodes ${NODES[*]} to be idle and sacct to answer"
    local deadline=$((t0 + TIMEOUT))
    until nodes_ready; do
        if ((SECONDS >= deadline)); then
            {
                echo "[cluster.sh] ERROR: nodes not ready after ${TIMEOUT}s. sinfo says:"
                node_states 2>&1 | sed 's/^/    /'
                echo "[cluster.sh] look at $LOGDIR/slurmd-n1.log, $LOGDIR/slurmd-n2.log, $LOGDIR/slurmctld.log"
                for f in slurmd-n1 slurmd-n2 slurmctld; do
                    echo "    --- $f.log (tail)"
                    tail -n 8 "$LOGDIR/$f.log" 2>/dev/null | sed 's/^/    /'
                done
            } >&2
            exit 1
        fi
        sleep 0.5
    done
    until sacct_ok >/dev/null 2>&1; do
        ((SECONDS < deadline)) || fail_with_log "sacct does not answer after ${TIMEOUT}s" "$LOGDIR/slurmdbd.log"
        sleep 0.5
    done
    log "cluster '$CLUSTER' up in $((SECONDS - t0))s; state dir $DIR"
    log "use it with: source $DIR/env.sh"
    sinfo
}

cmd_down() {
    if [[ ! -d $RUNDIR ]]; then
        log "nothing to stop ($RUNDIR does not exist)"
        return 0
    fi
    # Cancel our jobs first so their processes (slurmstepd + payload) exit
    # instead of outliving the cluster. Best effort, bounded wait.
    if alive slurmctld "$RUNDIR/slurmctld.pid" && [[ -n $(squeue -h -o %i 2>/dev/null) ]]; then
        log "cancelling remaining jobs"
        local u
        for u in $(squeue -h -o %u 2>/dev/null | sort -u); do
            scancel --user="$u" 2>/dev/null || true
        done
        wait_for 15 no_active_jobs || true
    fi
    # Reverse start order: compute nodes, controller, dbd, database, munge.
    for n in "${NODES[@]}"; do stop slurmd "$RUNDIR/slurmd-$n.pid"; done
    stop slurmctld "$RUNDIR/slurmctld.pid"
    stop slurmdbd "$RUNDIR/slurmdbd.pid"
    stop mariadbd "$RUNDIR/mariadbd.pid"
    stop mysqld "$RUNDIR/mariadbd.pid"
    stop munged "$RUNDIR/munged.pid"
    log "down (state kept in $DIR; 'clean' deletes it)"
}

cmd_status() {
    local rc=0 name pidfile
    for pair in munged:munged mariadbd:mariadbd slurmdbd:slurmdbd slurmctld:slurmctld \
        slurmd:slurmd-n1 slurmd:slurmd-n2; do
        name=${pair%%:*}
        pidfile=$RUNDIR/${pair#*:}.pid
        if alive "$name" "$pidfile" || { [[ $name == mariadbd ]] && alive mysqld "$pidfile"; }; then
            printf '%-12s running (pid %s)\n' "${pair#*:}" "$(pid_of x "$pidfile")"
        else
            printf '%-12s not running\n' "${pair#*:}"
            rc=1
        fi
    done
    if alive slurmctld "$RUNDIR/slurmctld.pid"; then
        echo
        sinfo || rc=1
    fi
    return $rc
}

cmd_clean() {
    cmd_down
    case $DIR in
    / | /tmp | /root | /home | "$HOME") die "refusing to delete $DIR" ;;
    esac
    log "removing $DIR"
    rm -rf "$DIR"
}

case ${1:-} in
up) cmd_up ;;
down) cmd_down ;;
status) cmd_status ;;
clean) cmd_clean ;;
*)
    echo "usage: $0 {up|down|status|clean}   (state dir: $DIR)" >&2
    exit 2
    ;;
esac
