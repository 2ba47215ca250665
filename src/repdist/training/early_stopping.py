"""Early stopping per model of a stack, on the loop's test passes: give the run the validation set.
Roeder et al. 2021, App. A.3: "we early stop based on a validation loss failing to improve further".

A model stops after `patience` test passes in a row without a loss below its best, and ends as if
stopped alone at its best pass; the run ends when every model has. The best weights, losses and
steps travel with the checkpoint, so a resumed run stops where an uninterrupted one does."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch


@dataclass
class EarlyStopping:
    """Per-model early stopping for a stack whose every parameter holds the models along its
    first dimension. A stopped model goes back to its best weights, its Adam moments are zeroed
    and its loss sends no gradient: zero moments and gradient make a zero update."""

    patience: int
    best_loss: np.ndarray = field(default_factory=lambda: np.zeros(0))
    best_step: list[int] = field(default_factory=list)
    stopped_step: list[int | None] = field(default_factory=list)
    waited: list[int] = field(default_factory=list)
    best_weights: dict[str, torch.Tensor] = field(default_factory=dict)
    active: torch.Tensor | None = None  # (S,) bool on the training device

    def __post_init__(self) -> None:
        if isinstance(self.patience, bool) or not isinstance(self.patience, int) \
                or self.patience < 1:
            raise ValueError(f"early stopping's patience must be a positive integer (test "
                             f"passes), got {self.patience!r}")

    def attach(self, model: torch.nn.Module) -> None:
        """Start tracking `model` (on its training device): nothing stopped, no best yet."""
        n = _stack_size(model)
        self.best_loss = np.full(n, np.inf)
        self.best_step, self.stopped_step, self.waited = [-1] * n, [None] * n, [0] * n
        self.best_weights = {name: p.detach().clone() for name, p in model.named_parameters()}
        self.active = torch.ones(n, dtype=torch.bool, device=next(model.parameters()).device)

    @property
    def all_stopped(self) -> bool:
        return all(s is not None for s in self.stopped_step)

    def mask(self, loss: torch.Tensor) -> torch.Tensor:
        """The per-model loss with the stopped models' gradient cut (values unchanged)."""
        assert self.active is not None, "attach() first"
        return torch.where(self.active, loss, loss.detach())

    def update(self, step: int, losses: np.ndarray, model: torch.nn.Module,
               optimizer: torch.optim.Optimizer) -> list[int]:
        """The test pass after `step` updates: keep each improved model's weights, stop the
        models out of patience (set back to their best). Returns the models stopped now."""
        losses = np.asarray(losses, dtype=np.float64)
        training = [i for i, s in enumerate(self.stopped_step) if s is None]
        improved = [i for i in training if losses[i] < self.best_loss[i]]
        params = dict(model.named_parameters())
        with torch.no_grad():
            for i in improved:
                self.best_loss[i], self.best_step[i], self.waited[i] = losses[i], step, 0
                for name, p in params.items():
                    self.best_weights[name][i].copy_(p[i])
        for i in set(training) - set(improved):
            self.waited[i] += 1
        out = [i for i in training if self.waited[i] >= self.patience]
        self._restore(out, model, optimizer)
        for i in out:
            self.stopped_step[i] = step
            self.active[i] = False
        return out

    def finish(self, step: int, losses: np.ndarray, model: torch.nn.Module,
               optimizer: torch.optim.Optimizer) -> None:
        """The run's end: a last test pass, the models still training set back to their best."""
        self.update(step, losses, model, optimizer)
        training = [i for i, s in enumerate(self.stopped_step) if s is None]
        self._restore(training, model, optimizer)

    def _restore(self, models: list[int], model: torch.nn.Module,
                 optimizer: torch.optim.Optimizer) -> None:
        """Models' weights back to their best pass's, their Adam moments zeroed."""
        with torch.no_grad():
            for name, p in model.named_parameters():
                moments = [v for k, v in optimizer.state.get(p, {}).items()
                           if k in ("exp_avg", "exp_avg_sq", "max_exp_avg_sq")]
                for i in models:
                    p[i].copy_(self.best_weights[name][i])
                    for moment in moments:
                        moment[i].zero_()

    def summary(self) -> dict[str, list[Any]]:
        """Per model: its best test pass's step and loss, the pass it stopped at (None: never)."""
        return {"best_step": list(self.best_step),
                "best_loss": [float(v) for v in self.best_loss],
                "stopped_step": list(self.stopped_step)}

    def state_dict(self) -> dict[str, Any]:
        return {**self.summary(), "waited": list(self.waited),
                "best_weights": self.best_weights}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """A checkpoint's state (its tensors already on the training device)."""
        self.best_loss = np.asarray(state["best_loss"], dtype=np.float64)
        self.best_step, self.waited = list(state["best_step"]), list(state["waited"])
        self.stopped_step = list(state["stopped_step"])
        self.best_weights = dict(state["best_weights"])
        device = next(iter(self.best_weights.values())).device
        self.active = torch.tensor([s is None for s in self.stopped_step], device=device)


def _stack_size(model: torch.nn.Module) -> int:
    """The stack's size; ValueError unless all parameters lead with it and no buffer keeps state."""
    n = getattr(model, "num_models", None)
    params = list(model.named_parameters())
    if not isinstance(n, int) or any(p.dim() == 0 or p.shape[0] != n for _, p in params):
        raise ValueError("early stopping needs a stack of models (num_models) whose every "
                         "parameter holds the models along its first dimension")
    persistent = set(model.state_dict())
    buffers = [name for name, _ in model.named_buffers() if name in persistent]
    if buffers:
        raise ValueError(f"early stopping sets back parameters only, and this model keeps "
                         f"state in buffers too: {buffers}")
    return n
