"""The run's GPU plan, made once in the head when the DAG is built, without torch, on a machine
that may have no GPU (a SLURM login node): whether the training jobs run where there are GPUs, how
many GPU jobs Snakemake runs at once (its `gpu` resource), and the pool of GPUs a local run's GPU
jobs share. A running job asks torch instead (training/devices.py::resolve_device)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..training.devices import DEVICES
from .gpu_pool import export_pool, pool_ids


def cuda_present() -> bool:
    """An NVIDIA GPU is visible to this process (driver files, CUDA_VISIBLE_DEVICES); no torch."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return False
    return _driver_gpu_count() > 0 or Path("/dev/nvidia0").exists()


def _driver_gpu_count() -> int:
    """The GPUs the NVIDIA driver lists (/proc), else 1 if its first device file exists."""
    gpus = Path("/proc/driver/nvidia/gpus")
    return len(list(gpus.iterdir())) if gpus.is_dir() else int(Path("/dev/nvidia0").exists())


def visible_gpus() -> list[str]:
    """The GPU ids this process may use: CUDA_VISIBLE_DEVICES's, else the driver's 0..n-1."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [v.strip() for v in visible.split(",") if v.strip() and v.strip() != "-1"]
    return [str(i) for i in range(_driver_gpu_count())]


def gpus_planned(declared: int | None, present: bool | None = None) -> bool:
    """Whether the training jobs run on GPUs: as `declared` (0: off), else `present` (None: ask)."""
    if declared is not None:
        return declared > 0
    return cuda_present() if present is None else present


def uses_gpu(requested: str, gpus: bool | None = None) -> bool:
    """Whether a job set to `requested` trains on a GPU, where `gpus` (None: ask) are present."""
    if requested not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, got {requested!r}")
    has_gpus = cuda_present() if gpus is None else gpus
    return requested == "cuda" or (requested == "auto" and has_gpus)


@dataclass(frozen=True)
class GpuPlan:
    """`gpus`: the training jobs run where there are GPUs; `resource`: the `gpu` resource to
    count (None: the run's own); `pool`: the GPU ids local jobs share; `note`: a log line."""

    declared: int | None
    gpus: bool
    resource: int | None
    pool: list[str]
    slots_per_gpu: int
    note: str | None = None

    def uses_gpu(self, device: str) -> bool:
        """Whether a job configured with `device` (auto | cpu | cuda) trains on a GPU."""
        return uses_gpu(device, self.gpus)

    def export(self) -> list[str]:
        """The pool into the environment the head's local jobs inherit (gpu_pool.gpu_slot)."""
        return export_pool(self.pool, self.slots_per_gpu)


# A declared `gpu` (a profile's `resources: [gpu=N]`, `--resources gpu=N`) is planned as declared,
# whatever the building machine has: on a workstation N jobs share the first ceil(N / k) GPUs,
# k = `gpu_slots_per_gpu` each; SLURM gives each job a GPU. Undeclared, the resource is GPUs x k.
def plan_gpus(declared: int | None, slots_per_gpu: int = 1, visible: list[str] | None = None,
              present: bool | None = None) -> GpuPlan:
    """The plan of a run that declared `declared` GPU jobs (None: undeclared); `visible` and
    `present` (this machine's GPUs, whether it has any) default to asking it."""
    if slots_per_gpu < 1:
        raise ValueError(f"gpu_slots_per_gpu must be at least 1, got {slots_per_gpu}")
    visible = visible_gpus() if visible is None else visible
    present = cuda_present() if present is None else present
    gpus = gpus_planned(declared, present)
    pool = pool_ids(declared, visible, slots_per_gpu) if gpus else []
    resource = len(visible) * slots_per_gpu if gpus and declared is None else None
    note = None
    if gpus and not present:
        note = (f"gpu={declared} declared: training jobs planned for GPUs (cluster nodes with "
                "GPUs); this machine shows none, so locally they would train on the CPU one at "
                "a time")
    elif gpus and slots_per_gpu > 1:
        note = (f"GPU jobs share the GPUs {','.join(pool)} of this machine, {slots_per_gpu} at "
                "a time on each (gpu_slots_per_gpu)")
    return GpuPlan(declared, gpus, resource, pool, slots_per_gpu, note)


def apply_gpu_plan(workflow: Any, slots_per_gpu: int, log: Callable[[str], None]) -> GpuPlan:
    """In the Snakefile's head: plan `workflow`'s `gpu` resource, set it where the plan counts it,
    log the note and export the pool."""
    from snakemake.resources import Resource

    declared = getattr(workflow.global_resources.get("gpu"), "value", None)
    plan = plan_gpus(None if declared is None else int(declared), slots_per_gpu)
    if plan.resource is not None:
        workflow.global_resources["gpu"] = Resource("gpu", plan.resource)
    if plan.note:
        log(plan.note)
    plan.export()
    return plan
