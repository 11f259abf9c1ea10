#!/usr/bin/env bash
# A real single-node SLURM cluster on localhost, for testing `snakemake --profile profiles/slurm`.
#
#   bash scripts/local_slurm.sh install            # apt-get the Debian packages (root; idempotent)
#   bash scripts/local_slurm.sh start  RUN_DIR     # munged + slurmctld + slurmd, wait for idle, smoke job
#   bash scripts/local_slurm.sh status RUN_DIR     # daemons, sinfo, squeue (exit 0: all run, 3: none, 1: some)
#   bash scripts/local_slurm.sh stop   RUN_DIR     # cancel jobs; TERM, then KILL, daemons (PID files) and jobs
#   eval "$(bash scripts/local_slurm.sh env RUN_DIR)"   # SLURM_CONF and PATH for sbatch/snakemake
#
# Made for containers without systemd (Debian 12, SLURM 22.05): nothing is started through init
# scripts (policy-rc.d denies that anyway); every daemon is started by hand as root and keeps its
# PID, state, spool and log files, the generated slurm.conf/cgroup.conf and the munge key in RUN_DIR.
# Clients find the cluster through SLURM_CONF=RUN_DIR/slurm.conf; munge through AuthInfo=socket=.
# snakemake-executor-plugin-slurm-jobstep removes SLURM_CONF from the environment of the `srun` it
# runs inside each job, so RUN_DIR/bin holds wrappers of the client commands that set it: put
# RUN_DIR/bin first on PATH (`env` prints both exports) instead of writing /etc/slurm/slurm.conf.
# There is no accounting database (no slurmdbd): use `squeue` as the job status command
# (MinJobAge keeps finished jobs visible to squeue for 10 minutes).
# Environment: LOCAL_SLURM_CTLD_PORT (6817), LOCAL_SLURM_SLURMD_PORT (6818),
# LOCAL_SLURM_DEF_MEM_PER_CPU (1024 MB), LOCAL_SLURM_MIN_JOB_AGE (600 s).
set -euo pipefail
PATH=$PATH:/usr/sbin:/sbin

PACKAGES=(slurmctld slurmd slurm-client munge)
DAEMONS=(slurmd slurmctld munged)   # stop order
CLIENTS="srun sbatch squeue sinfo scancel scontrol sacct"

die() { echo "local_slurm.sh: $*" >&2; exit 1; }

usage() {
    sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
        sudo -n "$@"
    else
        die "'$*' needs root (or passwordless sudo)"
    fi
}

installed() {
    command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v sbatch >/dev/null \
        && command -v munged >/dev/null && command -v mungekey >/dev/null
}

cmd_install() {
    if installed; then
        echo "local_slurm.sh: SLURM $(slurmctld -V | awk '{print $2}') and munge already installed"
        return 0
    fi
    export DEBIAN_FRONTEND=noninteractive
    # The packages' init scripts cannot start anything here (no systemd, policy-rc.d); that is fine.
    if ! as_root apt-get install -y --no-install-recommends "${PACKAGES[@]}"; then
        as_root apt-get update
        as_root apt-get install -y --no-install-recommends "${PACKAGES[@]}"
    fi
    installed || die "packages installed but slurmctld/slurmd/sbatch/munged still missing"
    echo "local_slurm.sh: installed SLURM $(slurmctld -V | awk '{print $2}')"
}

# --- run directory ------------------------------------------------------------------------

set_run_dir() {
    [ $# -ge 1 ] || usage
    RUN_DIR=$(realpath -m -- "$1")
    case "$RUN_DIR" in
        *[[:space:]]* | *'#'* | *'='*) die "RUN_DIR must not contain spaces, '#' or '=': $RUN_DIR" ;;
    esac
    CONF=$RUN_DIR/slurm.conf
    SOCKET=$RUN_DIR/munge/munge.socket.2
}

pid_file() {
    case "$1" in
        munged) echo "$RUN_DIR/munge/munged.pid" ;;
        *) echo "$RUN_DIR/$1.pid" ;;
    esac
}

# PID of a daemon of this run dir if it is alive (PID file present, process exists, same program).
alive_pid() {
    local f pid
    f=$(pid_file "$1")
    [ -s "$f" ] || return 1
    pid=$(tr -dc '0-9' <"$f")
    [ -n "$pid" ] && [ -r "/proc/$pid/comm" ] || return 1
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$1" ] || return 1
    case "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" in Z | X | "") return 1 ;; esac
    echo "$pid"
}

# Processes of this cluster's jobs: slurmstepd started by our slurmd, and every process that runs
# in one of our jobs (SLURM_JOB_ID set, SLURM_CONF ours), also those whose parent has died.
job_pids() {
    local f pid
    for f in $(grep -lzxF "SLURM_CONF=$CONF" /proc/[0-9]*/environ 2>/dev/null); do
        pid=${f#/proc/}
        pid=${pid%/environ}
        [ "$pid" != "$$" ] || continue
        case "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" in Z | X | "") continue ;; esac
        if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = slurmstepd ] \
            || grep -qz '^SLURM_JOB_ID=' "$f" 2>/dev/null; then
            echo "$pid"
        fi
    done
}

write_config() {
    local host node
    host=$(hostname -s)
    # `slurmd -C` prints this machine's node line; NodeName must equal the hostname.
    node=$(slurmd -C | head -n 1)
    case "$node" in NodeName=*) ;; *) die "unexpected 'slurmd -C' output: $node" ;; esac
    [ "${node%% *}" = "NodeName=$host" ] || die "slurmd -C names '${node%% *}', hostname is '$host'"
    cat >"$CONF" <<EOF
# Generated by scripts/local_slurm.sh for a single-node test cluster; do not edit (rewritten by start).
ClusterName=localrepro
SlurmctldHost=$host
SlurmctldPort=${LOCAL_SLURM_CTLD_PORT:-6817}
SlurmdPort=${LOCAL_SLURM_SLURMD_PORT:-6818}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SOCKET
StateSaveLocation=$RUN_DIR/state
SlurmdSpoolDir=$RUN_DIR/spool
SlurmctldPidFile=$(pid_file slurmctld)
SlurmdPidFile=$(pid_file slurmd)
SlurmctldLogFile=$RUN_DIR/log/slurmctld.log
SlurmdLogFile=$RUN_DIR/log/slurmd.log
SlurmctldDebug=info
MailProg=/bin/true
SlurmdDebug=info
# containers: no cgroups
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# without a default, a job without --mem is given the whole node's memory
DefMemPerCPU=${LOCAL_SLURM_DEF_MEM_PER_CPU:-1024}
# no accounting database: squeue is the status command and must still see finished jobs
# (snakemake-executor-plugin-slurm needs MinJobAge >= 3 x its initial status-check delay, 40 s)
MinJobAge=${LOCAL_SLURM_MIN_JOB_AGE:-600}
ReturnToService=2
SlurmctldTimeout=120
SlurmdTimeout=300
InactiveLimit=0
KillWait=30
Waittime=0
$node State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
    local c
    mkdir -p "$RUN_DIR/bin"
    for c in $CLIENTS; do
        printf '#!/bin/sh\n# generated by scripts/local_slurm.sh: this cluster even where SLURM_CONF was removed\nSLURM_CONF=%s\nexport SLURM_CONF\nexec %s "$@"\n' \
            "$CONF" "$(command -v "$c")" >"$RUN_DIR/bin/$c"
        chmod 0755 "$RUN_DIR/bin/$c"
    done
    cat >"$RUN_DIR/cgroup.conf" <<EOF
# Generated by scripts/local_slurm.sh: cgroups are not used (proctrack/linuxproc, task/none).
CgroupPlugin=autodetect
IgnoreSystemd=yes
ConstrainCores=no
ConstrainRAMSpace=no
ConstrainDevices=no
EOF
}

wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...
    local limit=$1 what=$2 t=0
    shift 2
    until "$@" >/dev/null 2>&1; do
        t=$((t + 1))
        [ "$t" -le "$((limit * 2))" ] || { echo "local_slurm.sh: timed out after ${limit}s waiting for $what" >&2; return 1; }
        sleep 0.5
    done
}

node_idle() {
    [ "$(SLURM_CONF=$CONF sinfo -h -N -n "$(hostname -s)" -o %T 2>/dev/null)" = "idle" ]
}

start_failed() {
    echo "local_slurm.sh: start failed; log tails:" >&2
    for f in "$RUN_DIR"/log/*.log; do
        [ -f "$f" ] && { echo "== $f" >&2; tail -n 15 "$f" >&2; }
    done
    SLURM_CONF=$CONF sinfo -N -l >&2 2>&1 || true
    cmd_stop >&2 || true
    exit 1
}

cmd_start() {
    local running=() d other
    for d in "${DAEMONS[@]}"; do
        if alive_pid "$d" >/dev/null; then running+=("$d"); fi
    done
    if [ ${#running[@]} -eq ${#DAEMONS[@]} ]; then
        echo "local_slurm.sh: already running in $RUN_DIR (nothing done)"
        return 0
    elif [ ${#running[@]} -gt 0 ]; then
        die "partly running in $RUN_DIR (${running[*]}): run 'stop $RUN_DIR' first"
    fi
    installed || die "SLURM is not installed: run 'bash scripts/local_slurm.sh install' (as root)"
    [ "$(id -u)" -eq 0 ] || die "start must run as root (SlurmUser=root, slurmd launches jobs)"
    for d in slurmctld slurmd; do
        other=$(pgrep -x "$d" || true)
        [ -z "$other" ] || die "another $d is running (pid $other), e.g. from another RUN_DIR: stop it first"
    done

    mkdir -p "$RUN_DIR"/{state,spool,log,munge}
    chmod 0755 "$RUN_DIR/munge"
    rm -f "$SOCKET" "$SOCKET.lock"
    [ -s "$RUN_DIR/munge/munge.key" ] || mungekey --create --keyfile="$RUN_DIR/munge/munge.key"
    chmod 0400 "$RUN_DIR/munge/munge.key"
    write_config
    trap start_failed ERR

    munged --socket="$SOCKET" --key-file="$RUN_DIR/munge/munge.key" --pid-file="$(pid_file munged)" \
        --log-file="$RUN_DIR/log/munged.log" --seed-file="$RUN_DIR/munge/munged.seed" --force
    wait_for 15 "munged" test -S "$SOCKET"
    munge --socket="$SOCKET" -n | unmunge --socket="$SOCKET" >/dev/null

    SLURM_CONF=$CONF slurmctld -c -i   # -c: a fresh cluster, no jobs recovered from an earlier start
    wait_for 30 "slurmctld" env SLURM_CONF="$CONF" scontrol ping
    SLURM_CONF=$CONF slurmd
    wait_for 60 "node $(hostname -s) idle in sinfo" node_idle

    # smoke test: a batch job with one job step started without SLURM_CONF, as the plugin does
    PATH=$RUN_DIR/bin:$PATH SLURM_CONF=$CONF timeout 120 sbatch --wait --quiet -J local-slurm-smoke \
        -t 2 --mem 100 -o "$RUN_DIR/log/smoke-%j.out" --wrap 'env -u SLURM_CONF srun -n1 hostname'
    trap - ERR
    grep -qx "$(hostname -s)" "$RUN_DIR"/log/smoke-*.out || start_failed
    echo "local_slurm.sh: cluster up in $RUN_DIR ($(SLURM_CONF=$CONF sinfo -h -o '%P %D %c %m %T' | head -1))"
    cmd_env
}

cmd_env() {
    echo "export SLURM_CONF=$CONF"
    echo "export PATH=$RUN_DIR/bin:\$PATH"
}

stop_pid() {  # stop_pid NAME PID
    local name=$1 pid=$2 t
    kill -TERM "$pid" 2>/dev/null || return 0
    for t in $(seq 1 40); do
        [ -d "/proc/$pid" ] || return 0
        sleep 0.5
    done
    echo "local_slurm.sh: $name (pid $pid) ignored TERM for 20 s: KILL" >&2
    kill -KILL "$pid" 2>/dev/null || true
    for t in $(seq 1 20); do
        [ -d "/proc/$pid" ] || return 0
        sleep 0.5
    done
    echo "local_slurm.sh: $name (pid $pid) still alive after KILL" >&2
    return 1
}

no_job_pids() { [ -z "$(job_pids)" ]; }

cmd_stop() {
    local d pid rc=0 ids left
    if alive_pid slurmctld >/dev/null; then
        # cancel this cluster's jobs (their slurmstepd are not children of slurmd)
        ids=$(SLURM_CONF=$CONF timeout 20 squeue -h -t PD,R,CG,S -o %i 2>/dev/null || true)
        if [ -n "$ids" ]; then
            # shellcheck disable=SC2086
            SLURM_CONF=$CONF timeout 20 scancel $ids || true
            wait_for 40 "cancelled jobs to end" no_job_pids || true
        fi
    fi
    for d in "${DAEMONS[@]}"; do
        if pid=$(alive_pid "$d"); then
            stop_pid "$d" "$pid" || rc=1
            echo "local_slurm.sh: stopped $d (pid $pid)"
        fi
        rm -f "$(pid_file "$d")"
    done
    # whatever of a job survived (no munge to cancel it, or it left its job step)
    left=$(job_pids)
    if [ -n "$left" ]; then
        echo "local_slurm.sh: ending processes of jobs left behind:" $left >&2
        # shellcheck disable=SC2086
        kill -TERM $left 2>/dev/null || true
        wait_for 20 "job processes to end" no_job_pids || {
            # shellcheck disable=SC2046
            kill -KILL $(job_pids) 2>/dev/null || true
            wait_for 10 "job processes to die" no_job_pids || rc=1
        }
    fi
    rm -f "$SOCKET" "$SOCKET.lock"
    return $rc
}

cmd_status() {
    local d pid n=0
    for d in munged slurmctld slurmd; do
        if pid=$(alive_pid "$d"); then
            echo "$d: running (pid $pid)"
            n=$((n + 1))
        else
            echo "$d: stopped"
        fi
    done
    if [ "$n" -eq 3 ]; then
        SLURM_CONF=$CONF sinfo -N -o '%N %P %T %c %m' || true
        SLURM_CONF=$CONF squeue -o '%i %j %T %M %R' || true
        return 0
    fi
    [ "$n" -eq 0 ] && return 3
    return 1
}

[ $# -ge 1 ] || usage
sub=$1
shift
case "$sub" in
    install) cmd_install ;;
    start) set_run_dir "$@"; cmd_start ;;
    stop) set_run_dir "$@"; cmd_stop ;;
    status) set_run_dir "$@"; cmd_status ;;
    env) set_run_dir "$@"; cmd_env ;;
    -h | --help | help) usage ;;
    *) usage ;;
esac
