"""Roeder et al. (2021)'s contrastive models (§5.2, App. A.3; CPC on image patches) as a stack:
f an MLP of a patch from an image's top half (x), g an MLP of a patch from its bottom half (y),

    p(y | x, S) = exp(f(x)^T g(y)) / sum_{y' in S} exp(f(x)^T g(y')),

S the bottom patches of every image in the minibatch (the true one and the others as
distractors). A model of the paper's family whose label set is the batch's candidates: the
stacked classifier's fused loss (models/stacked.py, StackedNLL) with g's rows the candidates'
g(y') and image i's label its own position i, so the training loop (training/loop.py) trains it
as it trains every model, by its `nll`.

Each step cuts and augments the batch's patches afresh (`patches`, e.g. data/patches.py's
PatchSpec), once for the whole stack: the models of a stack differ in their initialisation only, as the seeds of every stack
here share their batches. The random draws of step t come from a generator seeded by
(data_seed, t), t counted by the model itself and kept in its state dict, so a run resumed from
a checkpoint draws what an uninterrupted run draws.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import torch
from torch import nn

from .mlp import ModelClass, SmallMLP
from .stacked import StackedModelClass

DRAW_SEED_STRIDE = 1_000_003  # the draws of step t of data seed s are seeded by s * this + t


class PatchPairs(Protocol):
    """How (x, y) come from images: flattened patches of the top and of the bottom half."""

    def fixed_pair(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]: ...

    def random_pair(self, images: torch.Tensor,
                    generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]: ...


def build_cpc_model(seed: int, in_features: int, width: int, depth: int,
                    rep_dim: int) -> ModelClass:
    """torch.manual_seed(seed), then f, then g: two MLPs of `depth` hidden layers of `width`
    units from a flattened patch into `rep_dim` dimensions."""
    torch.manual_seed(seed)
    f_net = SmallMLP(in_features, width, rep_dim, depth=depth)
    g_net = SmallMLP(in_features, width, rep_dim, depth=depth)
    return ModelClass(f_net, g_net)


class ContrastiveStack(nn.Module):
    """S contrastive models trained together; inputs are whole images (N, C, H, W) in [0, 1],
    the patches are cut here (`patches`). `codes` and `labels` of the loop's calls are unused:
    g reads the batch's bottom patches, and image i's label is its place in its batch."""

    def __init__(self, models: Sequence[ModelClass], patches: PatchPairs,
                 data_seed: int) -> None:
        super().__init__()
        self.stack = StackedModelClass(models)
        self.patches, self.data_seed = patches, data_seed
        self.draws = 0  # training batches cut so far (the step), in the state dict

    @property
    def num_models(self) -> int:
        return self.stack.num_models

    def patch_pair(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The evaluation patches (x, y) of `images`: centred, unaugmented, flattened."""
        return self.patches.fixed_pair(images)

    def nll(self, images: torch.Tensor, codes: torch.Tensor,
            labels: torch.Tensor) -> torch.Tensor:
        """(S,) the contrastive loss of a training batch per model: fresh random patches."""
        generator = torch.Generator(device=images.device)
        generator.manual_seed(self.data_seed * DRAW_SEED_STRIDE + self.draws)
        self.draws += 1
        x, y = self.patches.random_pair(images, generator)
        return self.stack.nll(x, y, _positions(images))

    def log_probs(self, images: torch.Tensor, codes: torch.Tensor) -> torch.Tensor:
        """(S, B, B) float64 log p(y_j | x_i, S = the batch's bottom patches), evaluation
        patches: the validation loss is the NLL of the diagonal (labels = positions)."""
        x, y = self.patch_pair(images)
        return self.stack.log_probs(x, y)

    def state_dict_of(self, index: int) -> dict[str, torch.Tensor]:
        """Model `index` as a ModelClass state dict (f_net.l1.weight, ...)."""
        return self.stack.state_dict_of(index)

    def get_extra_state(self) -> dict[str, Any]:
        return {"draws": self.draws}

    def set_extra_state(self, state: dict[str, Any]) -> None:
        self.draws = int(state["draws"])


def _positions(images: torch.Tensor) -> torch.Tensor:
    return torch.arange(images.shape[0], device=images.device)
