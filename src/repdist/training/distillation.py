"""Distillation objectives: a student p'(y|x) trained to match a teacher p(y|x) on the training
inputs, with the losses the follow-up compares (Nielsen, Marconato, Gresele, Dittadi, Buchholz,
"Logit Distance Bounds Representational Similarity", 2026), in float64 as the training loss:

- `kl`: E_x KL(p(.|x) || p'(.|x)), the usual distillation loss (temperature 1);
- `logit_l2`: E_x sum_y (l~'_y(x) - l~_y(x))^2 with centred log-probabilities l~_y(x) = log p(y|x)
  - mean_y' log p(y'|x): the square of the `d_logit` this project measures (measures.extra);
- `logit_l1`: E_x sum_y |l~'_y(x) - l~_y(x)|;
- `labels`: the NLL of the true labels alone, the teacher ignored (the baseline)."""

from __future__ import annotations

import torch

from .loop import Objective, per_model_nll

LOSSES = ("kl", "logit_l2", "logit_l1", "labels")
FOLLOW_UP_LOSSES = ("kl", "l1", "l2", "labels")


def _centred(log_probs: torch.Tensor) -> torch.Tensor:
    return log_probs - log_probs.mean(dim=-1, keepdim=True)


def distillation_loss(kind: str, student: torch.Tensor, teacher: torch.Tensor) -> torch.Tensor:
    """The batch mean of loss `kind` between (..., B, K) float64 log-probabilities: (...,)."""
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
    """The training loop's objective for loss `kind`, model s matching teacher s of
    teacher_log_probs, (S, N, K) float64 over the training inputs; `labels`: None (the NLL)."""
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


# The follow-up's own losses (their `utils/losses.py`) are on raw logits, in the logits' float type,
# as theirs: `kl` KL(teacher || student) (KLDivLoss, batchmean, of the two log-softmaxes), `l1` the
# mean over a batch's logits of |student - teacher| (F.l1_loss), `l2` the sum of squared logit
# differences over the batch size; `labels` their classifier's cross entropy.
def follow_up_loss(kind: str, student: torch.Tensor, teacher: torch.Tensor | None = None,
                   labels: torch.Tensor | None = None) -> torch.Tensor:
    """The follow-up's loss `kind` per model between (..., B, K) logits (or, for `labels`, the
    student's logits and the labels (B,)): one value per model of a stack."""
    if kind == "labels":
        if labels is None:
            raise ValueError("the labels loss needs the labels")
        return per_model_nll(torch.log_softmax(student, dim=-1), labels)
    if teacher is None:
        raise ValueError(f"the {kind!r} loss needs the teacher's logits")
    if kind == "kl":
        log_t = torch.log_softmax(teacher, dim=-1)
        return (log_t.exp() * (log_t - torch.log_softmax(student, dim=-1))).sum(-1).mean(-1)
    if kind == "l1":
        return (student - teacher).abs().mean(dim=(-2, -1))
    if kind == "l2":
        return (student - teacher).square().sum(-1).mean(-1)
    raise ValueError(f"unknown loss {kind!r}; one of {FOLLOW_UP_LOSSES}")


def follow_up_objective(kinds: list[str], teacher_logits: torch.Tensor | None) -> Objective:
    """The training loop's objective for a stack whose model s learns by loss kinds[s]:
    teacher_logits (S, N, K) over the training inputs on the training device (row s: model s's
    teacher). Every loss is taken for every model and each model keeps its own."""
    unknown = sorted(set(kinds) - set(FOLLOW_UP_LOSSES))
    if unknown:
        raise ValueError(f"unknown losses {unknown}; one of {FOLLOW_UP_LOSSES}")
    if teacher_logits is None and set(kinds) != {"labels"}:
        raise ValueError("distillation losses need the teachers' logits")
    picks = {kind: torch.tensor([k == kind for k in kinds]) for kind in FOLLOW_UP_LOSSES}

    def objective(model: torch.nn.Module, x: torch.Tensor, codes: torch.Tensor,
                  labels: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        del codes
        student = model.logits(x)
        teacher = teacher_logits[:, idx] if teacher_logits is not None else None
        loss = follow_up_loss("labels", student, labels=labels)
        for kind in ("kl", "l1", "l2"):
            if picks[kind].any():
                pick = picks[kind].to(loss.device)
                loss = torch.where(pick, follow_up_loss(kind, student, teacher), loss)
        return loss

    return objective


def cbm_objective(concepts: torch.Tensor) -> Objective:
    """Their concept-bottleneck teacher's loss (utils/losses.py::BiClassification_Loss): the
    cross entropy of the labels from the head plus that of the concepts from the probe, per
    model; `concepts` (N,) the training inputs' concepts, moved to the batch's device once."""
    held: dict[torch.device, torch.Tensor] = {}

    def objective(model: torch.nn.Module, x: torch.Tensor, codes: torch.Tensor,
                  labels: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        del codes
        if x.device not in held:
            held[x.device] = concepts.to(x.device)
        labels_loss = follow_up_loss("labels", model.logits(x), labels=labels)
        return labels_loss + follow_up_loss("labels", model.concept_logits(x),
                                            labels=held[x.device][idx])

    return objective
