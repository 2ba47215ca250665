"""Distillation on this pipeline's models (beyond the paper; the question of its authors'
follow-up, Nielsen et al. 2026, "Logit Distance Bounds Representational Similarity"): does a
student distilled by logit distance end up linearly closer to its teacher than one distilled
by KL, at equal or lower KL, and keep the teacher's linearly recoverable concepts?

Teachers are synthetic models of this run (variant (0, 0)); the student of teacher s has the
same architecture, starts from torch seed `student_seed_offset + s` (the same start for every
loss) and trains on the teacher's training inputs with the teacher's budget of steps and batch
order. The students of one (K, width, loss) train together, stacked, student s matching
teacher s."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ...io import provenance
from ...models.extract import extract
from ...models.mlp import build_synthetic_model
from ...models.stacked import StackedModelClass
from ...training.distillation import distillation_objective
from ...training.loop import RunOptions, TrainConfig, train
from ..outputs import SeedFiles, SeedRepresentations, write_seed
from ..synthetic.training import (SyntheticModelConfig, seed_metrics, stack_identity,
                                  synthetic_data, synthetic_stack)


@dataclass(frozen=True)
class StudentSpec:
    """One job's students: their loss (training.distillation.LOSSES) and torch seed offset."""

    loss: str
    student_seed_offset: int

    def student_seeds(self, teacher_seeds: Sequence[int]) -> list[int]:
        return [self.student_seed_offset + int(s) for s in teacher_seeds]


def load_teachers(model_cfg: SyntheticModelConfig,
                  paths: Sequence[str | Path]) -> StackedModelClass:
    """The teachers (model_cfg.seeds, variant (0, 0)) from their model.pt files, as one stack."""
    if len(paths) != len(model_cfg.seeds):
        raise ValueError(f"{len(paths)} teacher files for seeds {list(model_cfg.seeds)}")
    teachers = []
    for seed, path in zip(model_cfg.seeds, paths, strict=True):
        model = build_synthetic_model(seed, model_cfg.num_classes, model_cfg.width,
                                      model_cfg.rep_dim, 0.0, 0.0)
        model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
        teachers.append(model)
    return StackedModelClass(teachers).eval()


@torch.no_grad()
def teacher_log_probs(teachers: StackedModelClass, x: np.ndarray, codes: np.ndarray,
                      device: str | torch.device) -> torch.Tensor:
    """(S, N, K) float64 log p(y|x) of every teacher on the inputs, on `device`."""
    teachers.to(device)
    out = teachers.log_probs(torch.as_tensor(x).to(device), torch.as_tensor(codes).to(device))
    teachers.cpu()
    return out.contiguous()


def train_students(model_cfg: SyntheticModelConfig, spec: StudentSpec, train_cfg: TrainConfig,
                   teacher_paths: Sequence[str | Path], files: Sequence[SeedFiles],
                   run_config: Mapping[str, Any], options: RunOptions) -> None:
    """Train the students of the teachers model_cfg.seeds (files: one SeedFiles per teacher) and
    write each as a synthetic model's files, with its loss and teacher in the metadata."""
    if len(files) != len(model_cfg.seeds):
        raise ValueError(f"{len(files)} output sets for teachers {list(model_cfg.seeds)}")
    data = synthetic_data(model_cfg)
    targets = None if spec.loss == "labels" else teacher_log_probs(
        load_teachers(model_cfg, teacher_paths), data.train_x, data.codes, options.device)
    students = replace(model_cfg, seeds=spec.student_seeds(model_cfg.seeds))
    stack = synthetic_stack([students])
    identity = {**stack_identity([students]), "teachers": list(model_cfg.seeds),
                "distillation": {"loss": spec.loss, "offset": spec.student_seed_offset}}
    log, finals = train(stack, data, train_cfg, replace(
        options, identity=identity, objective=distillation_objective(spec.loss, targets)))
    f_all, g_all = extract(stack, data.test_x, data.codes)
    stack.cpu()
    shared = provenance(run_config)
    for i, (teacher, student, out) in enumerate(zip(model_cfg.seeds, students.seeds, files,
                                                    strict=True)):
        meta = {"experiment": "distillation", "K": model_cfg.num_classes, "M": model_cfg.rep_dim,
                "width": model_cfg.width, "loss": spec.loss, "teacher_seed": int(teacher),
                "steps": train_cfg.steps, "steps_total": finals["steps_total"],
                "protocol": train_cfg.protocol, **shared, "seed": int(student)}
        reps = SeedRepresentations(g_all[i], {"test": f_all[i]}, {"test": data.test_labels})
        write_seed(out, reps, meta, seed_metrics(log, finals, i), stack.state_dict_of(i))
