#!/usr/bin/env bash
# A real SLURM cluster on localhost (one node, or two), for testing `snakemake --profile profiles/slurm`.
#
#   bash scripts/local_slurm.sh install            # apt-get the Debian packages (root; idempotent)
#   bash scripts/local_slurm.sh start  RUN_DIR [--nodes 2]  # munged + slurmctld + slurmd(s), idle, smoke job
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
# --nodes 2: two slurmd on this host (`slurmd -N NAME`, ports SLURMD_PORT and SLURMD_PORT+1; Debian's
# SLURM 22.05 allows it), each a node with this machine's CPUs and half its memory, named `hostname -s`
# and `localhost`: the launcher's MASTER_ADDR is the first node's name (scontrol show hostnames), which
# must resolve as on a real cluster, and these two do without touching /etc/hosts. Jobs spanning both
# nodes oversubscribe the real CPUs twice. (Two network namespaces, the other way, are not needed.)
# Environment: LOCAL_SLURM_CTLD_PORT (6817), LOCAL_SLURM_SLURMD_PORT (6818),
# LOCAL_SLURM_DEF_MEM_PER_CPU (1024 MB), LOCAL_SLURM_MIN_JOB_AGE (600 s).
set -euo pipefail
PATH=$PATH:/usr/sbin:/sbin

PACKAGES=(slurmctld slurmd slurm-client munge)
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
    NODES_FILE=$RUN_DIR/nodes
    load_nodes
}

# The node names of this run dir (written by start), one a line; none yet: a single node, this host.
# SLURMDS: the slurmd daemons to start / stop: `slurmd` for a single node, `slurmd@NAME` for each of two.
load_nodes() {
    if [ -s "$NODES_FILE" ]; then
        mapfile -t NODES <"$NODES_FILE"
    else
        NODES=("$(hostname -s)")
    fi
    if [ ${#NODES[@]} -eq 1 ]; then
        SLURMDS=(slurmd)
    else
        SLURMDS=("${NODES[@]/#/slurmd@}")
    fi
    DAEMONS=("${SLURMDS[@]}" slurmctld munged)   # stop order
}

set_nodes() {  # set_nodes COUNT: the nodes a start creates
    local host
    host=$(hostname -s)
    case "$1" in
        1) NODES=("$host") ;;
        2)
            [ "$host" != localhost ] || die "--nodes 2 names its nodes '$(hostname -s)' and 'localhost': rename this host"
            NODES=("$host" localhost)
            ;;
        *) die "--nodes $1: 1 or 2 (two slurmd on this host)" ;;
    esac
    mkdir -p "$RUN_DIR"
    printf '%s\n' "${NODES[@]}" >"$NODES_FILE"
    load_nodes
}

pid_file() {
    case "$1" in
        munged) echo "$RUN_DIR/munge/munged.pid" ;;
        slurmd@*) echo "$RUN_DIR/slurmd-${1#slurmd@}.pid" ;;   # SlurmdPidFile=slurmd-%n.pid
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
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "${1%%@*}" ] || return 1
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
    local slurmd_port=${LOCAL_SLURM_SLURMD_PORT:-6818} node_lines per_node_files
    if [ ${#NODES[@]} -eq 1 ]; then
        node_lines="$node State=UNKNOWN"
        per_node_files="SlurmdSpoolDir=$RUN_DIR/spool
SlurmdPidFile=$(pid_file slurmd)
SlurmdLogFile=$RUN_DIR/log/slurmd.log"
    else
        # one slurmd per node on this host: its own port, spool, PID and log file (%n: the node name);
        # each node half the memory, so that both fit the machine (slurmd drains a node claiming more)
        local mem i=0 n
        mem=$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$node")
        [ -n "$mem" ] || die "no RealMemory in 'slurmd -C' output: $node"
        node_lines=""
        for n in "${NODES[@]}"; do
            node_lines+="$(sed "s/^NodeName=[^ ]*/NodeName=$n NodeHostname=$host NodeAddr=$n Port=$((slurmd_port + i))/; s/RealMemory=[0-9]*/RealMemory=$((mem / ${#NODES[@]}))/" <<<"$node") State=UNKNOWN"$'\n'
            i=$((i + 1))
        done
        node_lines=${node_lines%$'\n'}
        per_node_files="SlurmdSpoolDir=$RUN_DIR/spool/%n
SlurmdPidFile=$RUN_DIR/slurmd-%n.pid
SlurmdLogFile=$RUN_DIR/log/slurmd-%n.log"
    fi
    local nodelist
    nodelist=$(IFS=,; echo "${NODES[*]}")
    cat >"$CONF" <<EOF
# Generated by scripts/local_slurm.sh for a test cluster of ${#NODES[@]} node(s); do not edit (rewritten by start).
ClusterName=localrepro
SlurmctldHost=$host
SlurmctldPort=${LOCAL_SLURM_CTLD_PORT:-6817}
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SOCKET
StateSaveLocation=$RUN_DIR/state
SlurmctldPidFile=$(pid_file slurmctld)
SlurmctldLogFile=$RUN_DIR/log/slurmctld.log
$per_node_files
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
$node_lines
PartitionName=local Nodes=$nodelist Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
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

nodes_idle() {  # every node of the cluster idle
    local states
    states=$(SLURM_CONF=$CONF sinfo -h -N -o '%N %T' 2>/dev/null | sort -u) || return 1
    [ "$(grep -c ' idle$' <<<"$states")" -eq ${#NODES[@]} ]
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
    local count=1 running=() d other
    while [ $# -gt 0 ]; do
        case "$1" in
            --nodes) [ $# -ge 2 ] || usage; count=$2; shift 2 ;;
            --nodes=*) count=${1#--nodes=}; shift ;;
            *) die "start: unknown option '$1'" ;;
        esac
    done
    for d in "${DAEMONS[@]}"; do
        if alive_pid "$d" >/dev/null; then running+=("$d"); fi
    done
    if [ ${#running[@]} -eq ${#DAEMONS[@]} ]; then
        [ "${#NODES[@]}" = "$count" ] || die "running in $RUN_DIR with ${#NODES[@]} node(s), not $count: stop it first"
        echo "local_slurm.sh: already running in $RUN_DIR (nothing done)"
        return 0
    elif [ ${#running[@]} -gt 0 ]; then
        die "partly running in $RUN_DIR (${running[*]}): run 'stop $RUN_DIR' first"
    fi
    set_nodes "$count"
    installed || die "SLURM is not installed: run 'bash scripts/local_slurm.sh install' (as root)"
    [ "$(id -u)" -eq 0 ] || die "start must run as root (SlurmUser=root, slurmd launches jobs)"
    for d in slurmctld slurmd; do
        other=$(pgrep -x "$d" || true)
        [ -z "$other" ] || die "another $d is running (pid $other), e.g. from another RUN_DIR: stop it first"
    done

    mkdir -p "$RUN_DIR"/{state,spool,log,munge}
    for d in "${NODES[@]}"; do [ ${#NODES[@]} -eq 1 ] || mkdir -p "$RUN_DIR/spool/$d"; done
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
    if [ ${#NODES[@]} -eq 1 ]; then
        SLURM_CONF=$CONF slurmd
    else
        for d in "${NODES[@]}"; do SLURM_CONF=$CONF slurmd -N "$d"; done
    fi
    wait_for 60 "node(s) ${NODES[*]} idle in sinfo" nodes_idle

    # smoke test: a batch job with one job step started without SLURM_CONF, as the plugin does, one
    # task on each node
    rm -f "$RUN_DIR"/log/smoke-*.out
    PATH=$RUN_DIR/bin:$PATH SLURM_CONF=$CONF timeout 120 sbatch --wait --quiet -J local-slurm-smoke \
        -N "${#NODES[@]}" -t 2 --mem 100 -o "$RUN_DIR/log/smoke-%j.out" \
        --wrap "env -u SLURM_CONF srun -N ${#NODES[@]} -n ${#NODES[@]} printenv SLURMD_NODENAME"
    trap - ERR
    for d in "${NODES[@]}"; do
        grep -qx "$d" "$RUN_DIR"/log/smoke-*.out || start_failed
    done
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
    for d in munged slurmctld "${SLURMDS[@]}"; do
        if pid=$(alive_pid "$d"); then
            echo "$d: running (pid $pid)"
            n=$((n + 1))
        else
            echo "$d: stopped"
        fi
    done
    if [ "$n" -eq ${#DAEMONS[@]} ]; then
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
    start) [ $# -ge 1 ] || usage; set_run_dir "$1"; shift; cmd_start "$@" ;;
    stop) set_run_dir "$@"; cmd_stop ;;
    status) set_run_dir "$@"; cmd_status ;;
    env) set_run_dir "$@"; cmd_env ;;
    -h | --help | help) usage ;;
    *) usage ;;
esac
