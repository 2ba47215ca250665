"""One GPU slot for each GPU job on a workstation: Snakemake counts GPU jobs (the `gpu`
resource) but does not say which GPU a job gets, so every job would start on GPU 0. On SLURM the
scheduler binds GPUs itself (gres), so jobs there leave the pool alone."""

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
PER_GPU_ENV = "REPDIST_GPU_SLOTS_PER_GPU"  # jobs one GPU holds at once (set by the head)
SLOTS_ENV = "REPDIST_GPU_SLOTS"  # the folder of lock files (default: one per user in /tmp)


def pool_ids(declared: int | None, visible: list[str], slots_per_gpu: int = 1) -> list[str]:
    """The first of `visible` that hold `declared` jobs at `slots_per_gpu` each (None: all)."""
    return visible if declared is None else visible[:-(-declared // slots_per_gpu)]


def export_pool(ids: list[str], slots_per_gpu: int = 1) -> list[str]:
    """In the head: the run's pool and its slots per GPU into the environment its jobs inherit."""
    if ids:
        os.environ[POOL_ENV] = ",".join(ids)
        os.environ[PER_GPU_ENV] = str(slots_per_gpu)
    else:
        os.environ.pop(POOL_ENV, None)
        os.environ.pop(PER_GPU_ENV, None)
    return ids


def slots_folder() -> Path:
    folder = os.environ.get(SLOTS_ENV) or Path(tempfile.gettempdir()) / (
        f"repdist-gpu-slots-{os.getuid()}")
    Path(folder).mkdir(parents=True, exist_ok=True)
    return Path(folder)


def slot_file(folder: Path, gpu: str, slot: int) -> Path:
    """The lock file of one slot of a GPU (slot 0's keeps the name of the one-job-per-GPU pool,
    so runs of either kind on one machine share it)."""
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", gpu)
    return folder / (f"gpu-{name}.lock" if slot == 0 else f"gpu-{name}.slot{slot}.lock")


def _claim(pool: list[str], folder: Path, slots_per_gpu: int = 1):
    """(gpu, slot, open lock file) for the first slot of `pool` no other process holds (every
    GPU's first slot, then every GPU's second, ...: jobs spread over the GPUs first), or None."""
    for slot in range(slots_per_gpu):
        for gpu in pool:
            fh = open(slot_file(folder, gpu, slot), "a+")  # noqa: SIM115
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                fh.close()
                continue
            return gpu, slot, fh
    return None


def slots_per_gpu() -> int:
    """The run's slots per GPU (the head's `gpu_slots_per_gpu`; 1 when it set none)."""
    return max(1, int(os.environ.get(PER_GPU_ENV) or 1))


# A slot is an exclusive lock on a file, shared by every run on the machine; it goes with the
# process, however it ends (SIGKILL included).
@contextlib.contextmanager
def gpu_slot(logger: logging.Logger, poll_s: float = 0.5,
             say_every_s: float = 60.0) -> Iterator[str | None]:
    """Hold one GPU slot of the run's pool (CUDA_VISIBLE_DEVICES set to its GPU) while the block
    runs, waiting while every slot is held. None without a pool or on SLURM."""
    pool = [g for g in os.environ.get(POOL_ENV, "").split(",") if g]
    if not pool or "SLURM_JOB_ID" in os.environ:
        yield None
        return
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        raise RuntimeError("gpu_slot: CUDA was started before a GPU was chosen for this job")
    folder, per_gpu = slots_folder(), slots_per_gpu()
    said = since = time.monotonic()
    while (claimed := _claim(pool, folder, per_gpu)) is None:
        if time.monotonic() - said >= say_every_s:
            said = time.monotonic()
            logger.info("waiting for a free GPU of %s (%.0f s so far)", pool, said - since)
        time.sleep(poll_s)
    gpu, slot, fh = claimed
    os.environ["CUDA_VISIBLE_DEVICES"] = gpu
    logger.info("GPU %s of the pool %s: CUDA_VISIBLE_DEVICES=%s%s", gpu, ",".join(pool), gpu,
                f" (slot {slot + 1} of {per_gpu})" if per_gpu > 1 else "")
    try:
        yield gpu
    finally:
        logger.info("GPU %s released", gpu)
        fh.close()
