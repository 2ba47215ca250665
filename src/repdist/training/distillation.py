"""Distillation objectives: a student p'(y|x) trained to match a teacher p(y|x) on the training
inputs, by one of the losses the follow-up compares (Nielsen, Marconato, Gresele, Dittadi,
Buchholz, "Logit Distance Bounds Representational Similarity", 2026):

- `kl`: E_x KL(p(.|x) || p'(.|x)), the usual distillation loss (temperature 1);
- `logit_l2`: E_x sum_y (l~'_y(x) - l~_y(x))^2 with centred log-probabilities
  l~_y(x) = log p(y|x) - mean_y' log p(y'|x): the square of the `d_logit` this project measures
  (measures.extra), the loss the follow-up proposes;
- `logit_l1`: E_x sum_y |l~'_y(x) - l~_y(x)|, its L1 variant;
- `labels`: the NLL of the true labels alone, the teacher ignored (the baseline: an
  independently trained seed).

All in float64 from the student's float64 log-probabilities, as the training loss.
"""

from __future__ import annotations

import torch

from .loop import Objective

LOSSES = ("kl", "logit_l2", "logit_l1", "labels")


def _centred(log_probs: torch.Tensor) -> torch.Tensor:
    return log_probs - log_probs.mean(dim=-1, keepdim=True)


def distillation_loss(kind: str, student: torch.Tensor, teacher: torch.Tensor) -> torch.Tensor:
    """The mean over a batch of one loss between (..., B, K) float64 log-probabilities: the
    student's and the teacher's. Returns (...,): one value per model of a stack."""
    if kind == "kl":
        per_input = (teacher.exp() * (teacher - student)).sum(dim=-1)
    elif kind == "logit_l2":
        per_input = (_centred(student) - _centred(teacher)).square().sum(dim=-1)
    elif kind == "logit_l1":
        per_input = (_centred(student) - _centred(teacher)).abs().sum(dim=-1)
    else:
        raise ValueError(f"unknown distillation loss {kind!r}; one of {LOSSES} "
                         "('labels' needs no teacher)")
    return per_input.mean(dim=-1)


def distillation_objective(kind: str, teacher_log_probs: torch.Tensor | None) -> Objective | None:
    """The training loop's objective for loss `kind`: teacher_log_probs is (S, N, K) float64
    over the training inputs (on the training device), model s of the stack matching teacher s.
    `labels` returns None: the loop's own NLL of the labels."""
    if kind == "labels":
        return None
    if kind not in LOSSES:
        raise ValueError(f"unknown distillation loss {kind!r}; one of {LOSSES}")
    if teacher_log_probs is None:
        raise ValueError(f"distillation loss {kind!r} needs the teacher's log-probabilities")

    def objective(model: torch.nn.Module, x: torch.Tensor, codes: torch.Tensor,
                  labels: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        del labels  # the teacher's distribution is the target
        return distillation_loss(kind, model.log_probs(x, codes), teacher_log_probs[:, idx])

    return objective

