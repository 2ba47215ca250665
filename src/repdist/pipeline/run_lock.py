"""One run per results folder: Snakemake's own lock only stops runs whose files overlap, within
one working directory. The head holds a flock on `<outdir>/.repdist-run.lock`, released however
the process ends, so a killed run leaves no stale lock. Cluster jobs (--no-hooks) do not take it."""

from __future__ import annotations

import fcntl
import os
import socket
import time
from pathlib import Path
from typing import IO

LOCK_NAME = ".repdist-run.lock"
_HELD: list[IO[str]] = []  # open for the life of the head process


class RunLockedError(RuntimeError):
    """Another run is writing to this results folder."""


def lock_results_folder(outdir: str | os.PathLike[str]) -> Path:
    """Hold the results folder's run lock, or raise RunLockedError naming who holds it."""
    path = Path(outdir) / LOCK_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "a+")  # noqa: SIM115 (held open until the process ends)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "a run that has not written its name yet"
        handle.close()
        raise RunLockedError(
            f"{outdir} is in use by another repdist run ({holder}): wait for it to finish or "
            "stop it, or give this run another outdir") from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()} on {socket.gethostname()}, started "
                 f"{time.strftime('%Y-%m-%d %H:%M:%S')}\n")
    handle.flush()
    _HELD.append(handle)
    return path
