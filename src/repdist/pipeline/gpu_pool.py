"""One GPU for each GPU job on a workstation of several GPUs.

Snakemake counts GPUs (the `gpu` resource: it never runs more GPU jobs at once than the run
declares) but does not say which GPU a job gets: every job would see all of them and start on
GPU 0. So the head exports the run's pool (`export_pool`: the first N of the GPUs it sees, N the
declared `gpu`, all of them when undeclared) and each GPU job takes one free GPU of it for its
lifetime (`gpu_slot`), by an exclusive lock on a file per GPU, shared by every run on the
machine, and sets CUDA_VISIBLE_DEVICES to it before CUDA starts. The lock goes with the process,
however it ends (SIGKILL included). On SLURM the scheduler binds GPUs itself (gres), so jobs
there leave the pool alone.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import re
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

POOL_ENV = "REPDIST_GPU_POOL"  # the run's GPU ids, comma-separated (set by the head)
SLOTS_ENV = "REPDIST_GPU_SLOTS"  # the folder of lock files (default: one per user in /tmp)


def pool_ids(declared: int | None, visible: list[str]) -> list[str]:
    """The GPUs a run's jobs share: the first `declared` of those `visible` (training.devices.
    visible_gpus; all of them when undeclared)."""
    return visible if declared is None else visible[:declared]


def export_pool(declared: int | None, visible: list[str]) -> list[str]:
    """In the head: the run's pool into the environment its local jobs inherit."""
    ids = pool_ids(declared, visible)
    if ids:
        os.environ[POOL_ENV] = ",".join(ids)
    else:
        os.environ.pop(POOL_ENV, None)
    return ids


def slots_folder() -> Path:
    folder = os.environ.get(SLOTS_ENV) or Path(tempfile.gettempdir()) / (
        f"repdist-gpu-slots-{os.getuid()}")
    Path(folder).mkdir(parents=True, exist_ok=True)
    return Path(folder)


def _claim(pool: list[str], folder: Path):
    """(gpu, open lock file) for the first GPU of `pool` no other process holds, or None."""
    for gpu in pool:
        fh = open(folder / f"gpu-{re.sub(r'[^A-Za-z0-9_.-]', '_', gpu)}.lock", "a+")  # noqa: SIM115
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.close()
            continue
        return gpu, fh
    return None


@contextlib.contextmanager
def gpu_slot(logger: logging.Logger, poll_s: float = 0.5,
             say_every_s: float = 60.0) -> Iterator[str | None]:
    """Hold one GPU of the run's pool while the block runs (CUDA_VISIBLE_DEVICES set to it);
    waits, saying so, while every GPU is held by another job. None without a pool or on SLURM."""
    pool = [g for g in os.environ.get(POOL_ENV, "").split(",") if g]
    if not pool or "SLURM_JOB_ID" in os.environ:
        yield None
        return
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        raise RuntimeError("gpu_slot: CUDA was started before a GPU was chosen for this job")
    folder, since = slots_folder(), time.monotonic()
    said = since
    while (claimed := _claim(pool, folder)) is None:
        if time.monotonic() - said >= say_every_s:
            said = time.monotonic()
            logger.info("waiting for a free GPU of %s (%.0f s so far)", pool, said - since)
        time.sleep(poll_s)
    gpu, fh = claimed
    os.environ["CUDA_VISIBLE_DEVICES"] = gpu
    logger.info("GPU %s of the pool %s: CUDA_VISIBLE_DEVICES=%s", gpu, ",".join(pool), gpu)
    try:
        yield gpu
    finally:
        logger.info("GPU %s released", gpu)
        fh.close()
