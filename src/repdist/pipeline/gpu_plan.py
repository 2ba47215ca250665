"""The run's GPU plan, made once in the head when the DAG is built (rules/common.smk calls
`plan_gpus`), without torch, on a machine that may have no GPU (a SLURM login node): whether
the training jobs run where there are GPUs, how many GPU jobs Snakemake runs at once (its `gpu`
resource), and the pool of GPUs a local run's GPU jobs share (pipeline.gpu_pool).

- A run that declares `gpu` (a SLURM profile's `resources: [gpu=N]`, `--resources gpu=N`) is
  planned as declared: N GPU jobs at once, whatever the building machine has. On a workstation
  they share the first ceil(N / k) GPUs it sees, k = `gpu_slots_per_gpu` jobs on each; on
  SLURM each job gets a GPU of its own from the scheduler (k is not used there).
- An undeclared run asks this machine: with GPUs, each visible GPU holds k jobs at once, so
  the `gpu` resource becomes GPUs x k (one job per GPU by default).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..training.devices import cuda_present, gpus_planned, uses_gpu, visible_gpus
from .gpu_pool import export_pool, pool_ids


@dataclass(frozen=True)
class GpuPlan:
    """`gpus`: the training jobs run where there are GPUs; `resource`: the `gpu` resource the
    run should count (None: keep the run's own); `pool`: the GPU ids a local run's jobs share,
    `slots_per_gpu` jobs on each; `note`: a line for the run's log, or None."""

    declared: int | None
    gpus: bool
    resource: int | None
    pool: list[str]
    slots_per_gpu: int
    note: str | None = None

    def uses_gpu(self, device: str) -> bool:
        """Whether a job configured with `device` (auto | cpu | cuda) trains on a GPU: its
        `resources: gpu`."""
        return uses_gpu(device, self.gpus)

    def export(self) -> list[str]:
        """The pool into the environment the head's local jobs inherit (gpu_pool.gpu_slot)."""
        return export_pool(self.pool, self.slots_per_gpu)


def plan_gpus(declared: int | None, slots_per_gpu: int = 1, visible: list[str] | None = None,
              present: bool | None = None) -> GpuPlan:
    """The plan of a run that declared `declared` GPU jobs (None: undeclared); `visible` and
    `present` (the GPUs this machine shows, whether it has any) default to asking it."""
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
    """In the Snakefile's head: the plan of `workflow`'s declared `gpu` resource, that resource
    set where the plan counts it (an undeclared GPU workstation), its note logged and its pool
    exported to the jobs."""
    from snakemake.resources import Resource

    declared = getattr(workflow.global_resources.get("gpu"), "value", None)
    plan = plan_gpus(None if declared is None else int(declared), slots_per_gpu)
    if plan.resource is not None:
        workflow.global_resources["gpu"] = Resource("gpu", plan.resource)
    if plan.note:
        log(plan.note)
    plan.export()
    return plan
