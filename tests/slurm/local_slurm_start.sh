#!/usr/bin/env bash
# local_slurm_start.sh - bring up a single-node SLURM "cluster" on localhost, for
# `make test-slurm` (tests/slurm/run_slurm_check.sh). Adapted from the team's local-slurm tool:
# several partitions on the one node (a CPU one and a GPU one, as the SLURM profile expects),
# and a record of which daemons THIS call started ($LOCAL_SLURM_STARTED_FILE), so the caller
# can stop exactly those afterwards and leave a cluster that was already up alone.
#
# Target: Debian 12 (bookworm), run as root, no systemd needed (every daemon
# is started directly). Idempotent: running it again while the cluster is up
# changes nothing; daemons it finds alive (by its own pid records) are kept.
#
# What it does:
#   1. apt-get installs munge slurmctld slurmd slurm-client (+ slurmdbd
#      mariadb-server in accounting mode) if missing
#   2. makes sure the munge key and all runtime/state/log directories exist
#   3. writes /etc/slurm/slurm.conf + gres.conf (+ slurmdbd.conf) for ONE node
#      named after `hostname -s`, CPUs/topology from `slurmd -C`; refuses to
#      overwrite a slurm.conf that it did not write itself
#   4. starts munged, [mariadbd, slurmdbd,] slurmctld, slurmd unless already
#      running, and records their pids in $RUNDIR/<daemon>.pid;
#      stop_local_slurm.sh stops exactly those pids and nothing else
#   5. waits until the node is idle and prints sinfo
#
# Knobs (environment variables):
#   LOCAL_SLURM_PARTITIONS   space-separated partition names, all on the one node; the first
#                            is the default              (default: "debug gpu")
#   LOCAL_SLURM_STARTED_FILE if set, the names of the daemons this call started are
#                            appended to it, one per line
#   LOCAL_SLURM_FAKE_GPUS    fake GPU GRES on the node, 0 to 4 (default: 1):
#                            gpu:fake:N, each backed by a character device of
#                            /dev/{null,zero,full,urandom}, so --gpus=1 /
#                            --gres=gpu:1 jobs can be scheduled on a GPU-less box
#   LOCAL_SLURM_MIN_JOB_AGE  seconds finished jobs stay visible to squeue
#                            (default: 600). Without accounting, the snakemake
#                            slurm executor must use `--slurm-status-command
#                            squeue`, which needs MinJobAge >= 3x its first
#                            status-check delay.
#   LOCAL_SLURM_ACCOUNTING   0|1 (default: 0). 1 = also run MariaDB + slurmdbd so
#                            that `sacct`/`sacctmgr` work like on a real cluster
#                            (the executor's default status command is sacct).
#   LOCAL_SLURM_ACCOUNT      account created in accounting mode (default: local)
#   LOCAL_SLURM_SLURMD_TIMEOUT seconds without an answer from slurmd before slurmctld sets the
#                            node DOWN and fails (and requeues) its jobs (default: 300, SLURM's)
set -euo pipefail

read -r -a PARTITIONS <<<"${LOCAL_SLURM_PARTITIONS:-debug gpu}"
PARTITION=${PARTITIONS[0]}
STARTED_FILE="${LOCAL_SLURM_STARTED_FILE:-/dev/null}"
started() { echo "$1" >>"$STARTED_FILE"; }
FAKE_GPUS="${LOCAL_SLURM_FAKE_GPUS:-1}"
MIN_JOB_AGE="${LOCAL_SLURM_MIN_JOB_AGE:-600}"
ACCOUNTING="${LOCAL_SLURM_ACCOUNTING:-0}"
ACCOUNT="${LOCAL_SLURM_ACCOUNT:-local}"
SLURMD_TIMEOUT="${LOCAL_SLURM_SLURMD_TIMEOUT:-300}"
RUNDIR=/run/local-slurm
CONF=/etc/slurm/slurm.conf
GRESCONF=/etc/slurm/gres.conf
DBDCONF=/etc/slurm/slurmdbd.conf
DBPASS=localslurm            # loopback-only MariaDB, test cluster only
MARK="# managed by start_local_slurm.sh"
NODE="$(hostname -s)"

log() { printf '[local_slurm_start %s] %s\n' "$(date +%T)" "$*"; }
die() { log "ERROR: $*" >&2; exit 1; }
t0=$(date +%s.%N)

[[ $(id -u) -eq 0 ]] || die "must run as root"
getent hosts "$NODE" >/dev/null || die "hostname $NODE does not resolve (add it to /etc/hosts)"

# alive <pidfile> <name>: pid in file exists and its cmdline mentions <name>
alive() {
    local f=$1 name=$2 pid
    [[ -s $f ]] || return 1
    pid=$(<"$f")
    [[ $pid =~ ^[0-9]+$ && -d /proc/$pid ]] || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "$name"
}
wait_for() {  # wait_for <tries> <sleep> <command...>
    local n=$1 s=$2; shift 2
    for _ in $(seq "$n"); do "$@" >/dev/null 2>&1 && return 0; sleep "$s"; done
    return 1
}

# ---------------------------------------------------------------- 1. packages
pkgs=(munge slurmctld slurmd slurm-client)
if [[ $ACCOUNTING == 1 ]]; then pkgs+=(slurmdbd mariadb-server); fi
need=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
        || need+=("$p")
done
if ((${#need[@]})); then
    log "installing: ${need[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
getent passwd slurm >/dev/null || die "user 'slurm' missing (should come with the packages)"
getent passwd munge >/dev/null || die "user 'munge' missing (should come with the packages)"

# ------------------------------------------------------ 2. key + directories
install -d -o munge -g munge -m 0700 /etc/munge
if [[ ! -s /etc/munge/munge.key ]]; then
    log "creating munge key"
    mungekey --create --keyfile=/etc/munge/munge.key
fi
chown munge:munge /etc/munge/munge.key
chmod 0400 /etc/munge/munge.key
install -d -o munge -g munge -m 0755 /run/munge      # tmpfs: gone after reboot
install -d -o munge -g munge -m 0700 /var/log/munge
install -d -o munge -g munge -m 0711 /var/lib/munge
install -d -o root  -g root  -m 0755 "$RUNDIR" /etc/slurm
install -d -o slurm -g slurm -m 0755 /var/lib/slurm /var/lib/slurm/slurmctld /var/log/slurm
install -d -o root  -g root  -m 0755 /var/lib/slurm/slurmd
if [[ $ACCOUNTING == 1 ]]; then install -d -o mysql -g root -m 0755 /run/mysqld; fi

# ------------------------------------------------------------- 3. config
hw=$(slurmd -C | head -n1)   # NodeName=.. CPUs=.. Boards=.. SocketsPerBoard=.. ... RealMemory=..
cpus=$(sed -n 's/.*CPUs=\([0-9]*\).*/\1/p' <<<"$hw")
sockets=$(sed -n 's/.*SocketsPerBoard=\([0-9]*\).*/\1/p' <<<"$hw")
cores=$(sed -n 's/.*CoresPerSocket=\([0-9]*\).*/\1/p' <<<"$hw")
threads=$(sed -n 's/.*ThreadsPerCore=\([0-9]*\).*/\1/p' <<<"$hw")
realmem=$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$hw")
mem=$((realmem * 9 / 10))    # headroom: RealMemory above the real value drains the node
gres_node="" gres_types=""
if (( FAKE_GPUS > 0 )); then
    gres_node=" Gres=gpu:fake:$FAKE_GPUS"
    gres_types="GresTypes=gpu"
fi
if [[ $ACCOUNTING == 1 ]]; then
    acct_lines="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoreFlags=job_comment
AccountingStorageTRES=gres/gpu
JobAcctGatherType=jobacct_gather/linux"
else
    acct_lines="AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none"
fi

tmpconf=$(mktemp)
cat >"$tmpconf" <<EOF
$MARK
ClusterName=localcluster
SlurmctldHost=$NODE
AuthType=auth/munge
# bind to the address $NODE resolves to (loopback here), not to 0.0.0.0
CommunicationParameters=NoInAddrAny
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
ReturnToService=2
SlurmUser=slurm
SlurmctldPidFile=$RUNDIR/slurmctld.pid
SlurmdPidFile=$RUNDIR/slurmd.pid
StateSaveLocation=/var/lib/slurm/slurmctld
SlurmdSpoolDir=/var/lib/slurm/slurmd
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
JobCompType=jobcomp/none
$acct_lines
MinJobAge=$MIN_JOB_AGE
SlurmdTimeout=$SLURMD_TIMEOUT
$gres_types
NodeName=$NODE CPUs=$cpus Sockets=$sockets CoresPerSocket=$cores ThreadsPerCore=$threads RealMemory=$mem$gres_node State=UNKNOWN
EOF
for part in "${PARTITIONS[@]}"; do
    default=NO
    if [[ $part == "$PARTITION" ]]; then default=YES; fi
    echo "PartitionName=$part Nodes=ALL Default=$default MaxTime=INFINITE State=UP" >>"$tmpconf"
done
tmpgres=$(mktemp)
{
    echo "$MARK"
    echo "AutoDetect=off"
    fake_files=(/dev/null /dev/zero /dev/full /dev/urandom)
    for file in "${fake_files[@]:0:FAKE_GPUS}"; do
        echo "NodeName=$NODE Name=gpu Type=fake File=$file"
    done
} >"$tmpgres"
tmpdbd=$(mktemp)
cat >"$tmpdbd" <<EOF
$MARK
AuthType=auth/munge
DbdHost=localhost
SlurmUser=slurm
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=slurm
StoragePass=$DBPASS
StorageLoc=slurm_acct_db
PidFile=$RUNDIR/slurmdbd.pid
LogFile=/var/log/slurm/slurmdbd.log
EOF

check=("$CONF")
if [[ $ACCOUNTING == 1 ]]; then check+=("$DBDCONF"); fi
for f in "${check[@]}"; do
    if [[ -e $f ]] && ! grep -qF "$MARK" "$f"; then
        rm -f "$tmpconf" "$tmpgres" "$tmpdbd"
        die "$f exists and was not written by this script; not touching it"
    fi
done
conf_changed=0
if ! cmp -s "$tmpconf" "$CONF"; then install -m 0644 "$tmpconf" "$CONF"; conf_changed=1; fi
if ! cmp -s "$tmpgres" "$GRESCONF"; then install -m 0644 "$tmpgres" "$GRESCONF"; conf_changed=1; fi
if [[ $ACCOUNTING == 1 ]] && ! cmp -s "$tmpdbd" "$DBDCONF"; then
    install -m 0600 -o slurm -g slurm "$tmpdbd" "$DBDCONF"; conf_changed=1
fi
rm -f "$tmpconf" "$tmpgres" "$tmpdbd"

if ((conf_changed)); then
    log "wrote slurm config files in /etc/slurm"
    # restart only our own slurm daemons so they pick up the new config
    for d in slurmd slurmctld slurmdbd; do
        if alive "$RUNDIR/$d.pid" "$d"; then
            pid=$(<"$RUNDIR/$d.pid")
            log "config changed: restarting $d (pid $pid)"
            kill -TERM "$pid"
            for _ in $(seq 50); do [[ -d /proc/$pid ]] || break; sleep 0.2; done
            rm -f "$RUNDIR/$d.pid"
        fi
    done
fi

# ------------------------------------------------------------- 4. daemons
if alive "$RUNDIR/munged.pid" munged; then
    log "munged already running (pid $(<"$RUNDIR/munged.pid"))"
elif munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    log "a munged not started by this script answers; using it (will not stop it)"
else
    log "starting munged"
    rm -f /run/munge/munged.pid
    runuser -u munge -- /usr/sbin/munged
    wait_for 50 0.1 test -s /run/munge/munged.pid || die "munged wrote no pid file"
    cp /run/munge/munged.pid "$RUNDIR/munged.pid"
    started munged
fi
munge -n | unmunge >/dev/null || die "munge round trip failed"

if [[ $ACCOUNTING == 1 ]]; then
    if alive "$RUNDIR/mariadbd.pid" mariadbd; then
        log "mariadbd already running (pid $(<"$RUNDIR/mariadbd.pid"))"
    elif mariadb -e "SELECT 1" >/dev/null 2>&1; then
        log "a MariaDB not started by this script answers; using it (will not stop it)"
    else
        log "starting mariadbd (127.0.0.1 only)"
        rm -f /run/mysqld/mysqld.pid
        setsid /usr/sbin/mariadbd --user=mysql --bind-address=127.0.0.1 \
            --pid-file=/run/mysqld/mysqld.pid --socket=/run/mysqld/mysqld.sock \
            </dev/null >>/var/log/slurm/mariadbd.log 2>&1 &
        wait_for 100 0.1 mariadb -e "SELECT 1" || die "mariadbd did not come up (/var/log/slurm/mariadbd.log)"
        cp /run/mysqld/mysqld.pid "$RUNDIR/mariadbd.pid"
        started mariadbd
    fi
    mariadb -e "CREATE DATABASE IF NOT EXISTS slurm_acct_db;
        CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '$DBPASS';
        GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost'; FLUSH PRIVILEGES;"

    if alive "$RUNDIR/slurmdbd.pid" slurmdbd; then
        log "slurmdbd already running (pid $(<"$RUNDIR/slurmdbd.pid"))"
    else
        log "starting slurmdbd"
        rm -f "$RUNDIR/slurmdbd.pid"
        /usr/sbin/slurmdbd      # daemonizes, writes PidFile
        started slurmdbd
        wait_for 50 0.2 sacctmgr -n list cluster || die "slurmdbd not answering (/var/log/slurm/slurmdbd.log)"
    fi
fi

if alive "$RUNDIR/slurmctld.pid" slurmctld; then
    log "slurmctld already running (pid $(<"$RUNDIR/slurmctld.pid"))"
else
    if scontrol ping 2>/dev/null | grep -q "is UP"; then
        die "a slurmctld not started by this script is answering; stop it first"
    fi
    log "starting slurmctld"
    rm -f "$RUNDIR/slurmctld.pid"
    /usr/sbin/slurmctld     # daemonizes, writes SlurmctldPidFile
    started slurmctld
fi

if alive "$RUNDIR/slurmd.pid" slurmd; then
    log "slurmd already running (pid $(<"$RUNDIR/slurmd.pid"))"
else
    log "starting slurmd"
    rm -f "$RUNDIR/slurmd.pid"
    /usr/sbin/slurmd        # daemonizes, writes SlurmdPidFile
    started slurmd
fi

# ------------------------------------------------------------- 5. readiness
state=""
for _ in $(seq 60); do
    state=$(sinfo -h -n "$NODE" -o %T 2>/dev/null | head -n1 || true)
    case $state in
        idle|mixed|allocated|completing) break ;;
        down*|drain*|fail*)
            scontrol update NodeName="$NODE" State=RESUME 2>/dev/null || true ;;
    esac
    sleep 0.5
done
case $state in
    idle|mixed|allocated|completing) ;;
    *)  reason=$(scontrol show node "$NODE" 2>/dev/null | sed -n 's/^ *Reason=//p' || true)
        die "node $NODE not ready (state '$state'${reason:+, reason: $reason}); see /var/log/slurm/*.log" ;;
esac

hint="--slurm-status-command squeue"
if [[ $ACCOUNTING == 1 ]]; then
    # slurmctld registers the cluster itself; add an account + users (idempotent)
    wait_for 50 0.2 sh -c "sacctmgr -n -P list cluster format=cluster | grep -qx localcluster" \
        || die "cluster not registered in slurmdbd"
    sacctmgr -i add account "$ACCOUNT" Description=local Organization=local >/dev/null 2>&1 || true
    for u in root ${SUDO_USER:-}; do
        sacctmgr -i add user "$u" Account="$ACCOUNT" >/dev/null 2>&1 || true
    done
    hint="slurm_account=$ACCOUNT (sacct works)"
fi
for d in munged mariadbd slurmdbd slurmctld slurmd; do
    [[ -s $RUNDIR/$d.pid ]] && log "$d pid $(<"$RUNDIR/$d.pid")"
done
sinfo -o "%P %a %l %D %T %N %c %m %G"
log "cluster up in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')s;" \
    "use: --executor slurm --default-resources slurm_partition=$PARTITION $hint"
