"""Stopping a run: SIGTERM and SIGINT both cancel the run's jobs, and the head exits in bounded
time.
SIGTERM comes from a login session ending, `timeout` or `kill`; SIGINT from Ctrl-C. A rerun then
resumes.

This is ours and not Snakemake's: its own handling can deadlock on SIGTERM, and waits on running
jobs (the reasons are at `stop_on_signals`). So the head process (Snakefile `onstart`, never cluster
jobs, which run with --no-hooks) takes both signals. The first cancels the jobs through Snakemake's
own cancel path; later ones are noted and ignored. A watchdog ends the process `grace_s` after the
first signal if Snakemake has not finished by then, releasing Snakemake's directory lock first, so
the rerun needs no --unlock."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Callable
from types import FrameType

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
STOPPING_NOTE = " received: cancelling the running jobs and stopping"  # in the run's log
STOP_GRACE_S = 45.0  # the jobs are cancelled within seconds; this bounds the status thread's sleep


# Why this is ours and not Snakemake's (9.27.1, SLURM plugin 2.8.0, the newest on PyPI; no report in
# either tracker): Snakemake's SIGTERM handler takes the scheduler's lock, a plain `threading.Lock`,
# inside the main thread. A SIGTERM that lands while the main thread holds that lock (it does while
# it finishes jobs and selects new ones) waits for itself forever. The executor's status thread,
# which needs the same lock to report a finished job, waits behind it: the deadlock seen under
# `timeout make test-slurm`. When the handler does get the lock, SIGTERM still means "finish every
# running job first", on a cluster hours of jobs. SIGINT takes another path (KeyboardInterrupt:
# Snakemake cancels the jobs, `scancel` on SLURM), which works, except that the executor's status
# thread is then joined while it sleeps between `sacct` polls, up to 180 s.
#
# A local run has the opposite gap: its cancel path waits for the running jobs to finish. Ctrl-C in
# a terminal reaches them too (the terminal signals the whole foreground process group), but a
# signal to the head alone does not.
#
# So the first signal sends SIGTERM to the head's descendants (a local run's jobs; on a cluster only
# short-lived sbatch/sacct calls) and raises KeyboardInterrupt (Snakemake's own cancel path,
# `scancel` on SLURM; safe wherever the main thread is, since `with lock:` blocks release on the way
# out).
def stop_on_signals(
    release: Callable[[], None],
    *,
    grace_s: float = STOP_GRACE_S,
    log: Callable[[str], None] = print,
) -> None:
    """Make SIGTERM and SIGINT cancel the run (KeyboardInterrupt) and bound the exit by `grace_s`.

    `release` is called before a forced exit (the head passes Snakemake's unlock)."""
    stopping: list[int] = []

    def handler(signum: int, _frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if stopping:
            log(f"{name} received: already stopping (the run ends within {grace_s:.0f} s of "
                "the first signal)")
            return
        stopping.append(signum)
        log(f"{name}{STOPPING_NOTE}; rerun the same command to resume (training jobs continue "
            "from their checkpoints)")
        watchdog = threading.Timer(grace_s, _force_exit, args=(signum, grace_s, release, log))
        watchdog.daemon = True
        watchdog.start()
        for pid in descendants(os.getpid()):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGTERM)
        raise KeyboardInterrupt

    for signum in STOP_SIGNALS:
        signal.signal(signum, handler)


def descendants(pid: int) -> list[int]:
    """The processes below `pid` (children, their children, ...), from one `ps` listing."""
    out = subprocess.run(["ps", "-A", "-o", "pid=", "-o", "ppid="], capture_output=True,
                         text=True, check=False).stdout
    children: dict[int, list[int]] = {}
    for line in out.splitlines():
        child, parent = map(int, line.split())
        children.setdefault(parent, []).append(child)
    found, todo = [], list(children.get(pid, []))
    while todo:
        found.append(todo.pop())
        todo += children.get(found[-1], [])
    return [p for p in found if p != pid]


def _force_exit(signum: int, grace_s: float, release: Callable[[], None],
                log: Callable[[str], None]) -> None:
    """The watchdog: the jobs were cancelled long ago; only Snakemake's wait is left."""
    log(f"still running {grace_s:.0f} s after {signal.Signals(signum).name}: exiting now (the "
        "jobs were cancelled; Snakemake was waiting out its status thread's sleep)")
    try:
        release()
    finally:
        os._exit(128 + signum)
