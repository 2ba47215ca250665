#!/usr/bin/env bash
# local_slurm_stop.sh - stop the daemons that local_slurm_start.sh started,
# and only those: it reads the pid records in /run/local-slurm/<daemon>.pid,
# checks that each pid is still that daemon (via /proc/<pid>/cmdline), sends
# SIGTERM, waits up to 10 s, then SIGKILL. A munged/mariadbd/slurm daemon
# that this script pair did not start has no pid record and is left alone.
#
#   --only FILE     stop only the daemons named in FILE (one per line; what
#                   local_slurm_start.sh wrote to LOCAL_SLURM_STARTED_FILE)
#   --cancel-jobs   first ask slurmctld to cancel all queued/running jobs
#                   (scancel), so no slurmstepd job processes linger after
#                   slurmd is gone. Without it, running jobs are reported.
# The munge key, /var/lib/slurm state and the MariaDB data are kept, so a later
# local_slurm_start.sh is fast; so are the config files, except slurm.conf once no
# slurmctld runs (see the end).
set -uo pipefail

RUNDIR=/run/local-slurm
log() { printf '[local_slurm_stop %s] %s\n' "$(date +%T)" "$*"; }
cancel=0 only=""
while (($#)); do
    case $1 in
        --cancel-jobs) cancel=1 ;;
        --only) only=$2; shift ;;
        *) log "unknown argument: $1" >&2; exit 2 ;;
    esac
    shift
done
[[ $(id -u) -eq 0 ]] || { log "must run as root" >&2; exit 1; }

alive() {
    local pid=$1 name=$2
    [[ $pid =~ ^[0-9]+$ && -d /proc/$pid ]] || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "$name"
}

wanted() { [[ -z $only ]] || grep -qx -- "$1" "$only"; }

if wanted slurmctld && [[ -s $RUNDIR/slurmctld.pid ]] && alive "$(<"$RUNDIR/slurmctld.pid")" slurmctld; then
    jobs=$(squeue -h -o %i 2>/dev/null | tr '\n' ' ')
    if [[ -n ${jobs// /} ]]; then
        if ((cancel)); then
            log "cancelling jobs: $jobs"
            # shellcheck disable=SC2086
            scancel $jobs
            for _ in $(seq 50); do
                [[ -z $(squeue -h -t R,PD,CG -o %i 2>/dev/null) ]] && break
                sleep 0.2
            done
        else
            log "WARNING: jobs still queued/running ($jobs); their slurmstepd" \
                "processes may outlive slurmd (use --cancel-jobs)"
        fi
    fi
fi

stop_one() {
    local name=$1 f=$RUNDIR/$1.pid pid
    if ! wanted "$name"; then
        log "$name: running before this test started it, leaving it alone"
        return 0
    fi
    if [[ ! -s $f ]]; then
        log "$name: no pid record in $RUNDIR - not started by local_slurm_start.sh, skipping"
        return 0
    fi
    pid=$(<"$f")
    if alive "$pid" "$name"; then
        kill -TERM "$pid"
        for _ in $(seq 50); do alive "$pid" "$name" || break; sleep 0.2; done
        if alive "$pid" "$name"; then
            log "$name (pid $pid) ignored SIGTERM; sending SIGKILL"
            kill -KILL "$pid"
        fi
        log "$name: stopped pid $pid"
    else
        log "$name: pid $pid is not running (stale record), removing it"
    fi
    rm -f "$f"
}

# order matters: node daemon, controller, accounting, database, authentication
stop_one slurmd
stop_one slurmctld
stop_one slurmdbd
stop_one mariadbd
stop_one munged

# With no controller, SLURM's client commands wait about 9 s for one: `scontrol show config`
# does, and the Snakemake SLURM plugin runs it whenever Snakemake starts, so every later
# snakemake on this machine would start 9 s late. Without slurm.conf they fail at once, as on a
# machine without SLURM: the slurm.conf this pair wrote goes aside (the next start writes it).
# A stopped slurmctld can linger a moment as a zombie that pgrep still sees: wait for it.
for _ in $(seq 25); do pgrep -x slurmctld >/dev/null || break; sleep 0.2; done
if ! pgrep -x slurmctld >/dev/null && grep -qs "managed by start_local_slurm.sh" /etc/slurm/slurm.conf; then
    mv /etc/slurm/slurm.conf /etc/slurm/slurm.conf.stopped
    log "slurm.conf set aside (no slurmctld runs): SLURM's commands now fail at once"
fi
