"""Stopping a run: SIGTERM (a session ending, `timeout`, `kill`) and SIGINT (Ctrl-C) both cancel
the run's jobs, and the head exits in bounded time; a rerun then resumes. The head (Snakefile
`onstart`; cluster jobs run with --no-hooks) takes both signals; later ones are ignored. A watchdog
ends it `grace_s` after the first, releasing Snakemake's lock so the rerun needs no --unlock."""

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


# Why not Snakemake's own handling (9.27.1, SLURM plugin 2.8.0): its SIGTERM handler takes the
# scheduler's plain `threading.Lock` in the main thread. A SIGTERM landing while the main thread
# holds it waits for itself forever, with the status thread behind it (seen under `timeout make
# test-slurm`). Otherwise SIGTERM still finishes every running job first: hours on a cluster.
# SIGINT works, but then joins the status thread while it sleeps between `sacct` polls, up to
# 180 s. A local run's cancel path waits for its jobs, which a signal to the head never reaches.
# So the first signal sends SIGTERM to the head's descendants and raises KeyboardInterrupt: safe
# wherever the main thread is, since `with lock:` blocks release on the way out.
def stop_on_signals(release: Callable[[], None], *, grace_s: float = STOP_GRACE_S,
                    log: Callable[[str], None] = print) -> None:
    """Make SIGTERM and SIGINT cancel the run (KeyboardInterrupt) and bound the exit by
    `grace_s`; `release` (Snakemake's unlock) is called before a forced exit."""
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
