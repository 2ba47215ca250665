"""The follow-up's two training jobs (rules/logit_distance.smk), a data set's teachers or all
their students, built from the settings a rule passes (`resnet` None: the MLP data sets)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ...io import provenance
from ...models.follow_up import FollowUpArch
from ...models.follow_up_resnet import ResNetArch, read_imagenet_weights
from ...training.distillation import cbm_objective
from ...training.devices import resolve_device
from ...training.loop import RunOptions
from .training import (
    Arch,
    FollowUpTraining,
    JobData,
    Probe,
    Student,
    StudentRun,
    TeacherRun,
    job_data,
)

Member = tuple[int, str, int]  # a student: (teacher seed, loss, seed)


def architectures(arch: Mapping[str, Any], resnet: Mapping[str, Any] | None
                  ) -> tuple[Arch, Arch]:
    """The teachers' and students' architecture: one FollowUpArch, or CIFAR-100's ResNet-50
    teacher and ResNet students as wide, of resnet["student_depth"] layers."""
    if resnet is None:
        mlp = FollowUpArch(**arch)
        return mlp, mlp
    return ResNetArch(**arch), ResNetArch(**{**arch, "depth": resnet["student_depth"]})


def teacher_run(arch: Mapping[str, Any], seeds: Sequence[int], training: FollowUpTraining,
                resnet: Mapping[str, Any] | None, probe: Probe | None = None) -> TeacherRun:
    """A teachers job's run; CIFAR-100's from resnet["imagenet_weights"] where it names a
    file, in the data's order where resnet["teacher_in_order"]."""
    teachers, _ = architectures(arch, resnet)
    if resnet is None:
        return TeacherRun(teachers, seeds, training, probe)
    weights = resnet["imagenet_weights"]
    return TeacherRun(teachers, seeds, training, probe,
                      read_imagenet_weights(weights) if weights else None,
                      in_order=bool(resnet["teacher_in_order"]))


def student_run(arch: Mapping[str, Any], members: Sequence[Member], training: FollowUpTraining,
                eval_every_epochs: int, d_rep_subsets: int, resnet: Mapping[str, Any] | None,
                probe: Probe | None = None) -> StudentRun:
    """A students job's run: every member, each indexed to its teacher in first-seen order."""
    teachers, students = architectures(arch, resnet)
    seeds = list(dict.fromkeys(int(t) for t, _, _ in members))
    run_of = [Student(seeds.index(int(t)), int(t), loss, int(s)) for t, loss, s in members]
    return StudentRun(students, run_of, training, eval_every_epochs, d_rep_subsets, probe,
                      teacher_arch=teachers if resnet is not None else None)


def job_options(checkpoint: str | Path, device: str | torch.device,
                resnet: Mapping[str, Any] | None, concepts: np.ndarray | None = None
                ) -> RunOptions:
    """A job's checkpoint and device, CIFAR-100's eval batches, and SUB's concept-bottleneck
    objective where the training inputs' `concepts` are given (its teachers)."""
    return RunOptions(checkpoint=checkpoint, device=device,
                      objective=cbm_objective(torch.as_tensor(concepts))
                      if concepts is not None else None,
                      eval_batch_size=resnet["eval_batch_size"] if resnet is not None else None)


def job_metadata(dataset: str, run_config: Mapping[str, Any]) -> dict[str, Any]:
    """What every file of a training job carries: the experiment, the data set, provenance."""
    return {"experiment": "logit_distance", "data": dataset, **provenance(run_config)}


def job_start(params: Any, data: Any, threads: int, gpus: int) -> tuple[torch.device, JobData]:
    """A job's first steps: its threads, its device (a GPU only if promised) and its data."""
    torch.set_num_threads(threads)
    device = resolve_device(params.device, "logit_distance.device", promised=bool(gpus))
    return device, job_data(params.dataset, data, params.arch["num_classes"],
                            params.probe_seed)
