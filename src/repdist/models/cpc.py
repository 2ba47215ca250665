"""Roeder et al. (2021)'s contrastive models (§5.2, App. A.3; CPC on image patches) as a stack. f is
an MLP of a patch from an image's top half (x), g an MLP of a patch from its bottom half (y):

    p(y | x, S) = exp(f(x)^T g(y)) / sum_{y' in S} exp(f(x)^T g(y')),

S the bottom patches of every image in the minibatch (the true one and the others as distractors):
a model of the paper's family whose label set is the batch's candidates, trained by its `nll`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import torch
from torch import nn

from .mlp import ModelClass, SmallMLP
from .stacked import StackedModelClass

# Each step cuts and augments the batch's patches afresh (`patches`, e.g. data/patches.py's
# PatchSpec). By default every model draws its own (Roeder et al. train independent models): its
# batch (the loop's batch through its own permutation of the training set, so each epoch still
# covers every image once), its patches' places and augmentation. Seeded by (data_seed, the model's
# seed, step t), a seed draws the same alone or in a stack; t is in the state dict, so a resumed run
# draws what an uninterrupted one does. With shared draws the models differ in initialisation only.
DRAW_SEED_STRIDE = 1_000_003  # the draws of step t of data seed s are seeded by s * this + t
MODEL_SEED_STRIDE = 100_003  # and a model's own draws by that * this + its seed


class PatchPairs(Protocol):
    """How (x, y) come from images: flattened patches of the top and of the bottom half."""

    def fixed_pair(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]: ...

    def random_pair(self, images: torch.Tensor,
                    generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]: ...


def build_cpc_model(seed: int, in_features: int, width: int, depth: int,
                    rep_dim: int) -> ModelClass:
    """torch.manual_seed(seed), then f, then g: MLPs of a flattened patch into `rep_dim`."""
    torch.manual_seed(seed)
    return ModelClass(SmallMLP(in_features, width, rep_dim, depth=depth),
                      SmallMLP(in_features, width, rep_dim, depth=depth))


class ContrastiveStack(nn.Module):
    """S contrastive models trained together on whole images (N, C, H, W) in [0, 1], cut into
    patches here; the loop's `codes` and `labels` are unused (image i's label is its place)."""

    def __init__(self, models: Sequence[ModelClass], patches: PatchPairs, data_seed: int,
                 seeds: Sequence[int] | None = None, train_images: torch.Tensor | None = None
                 ) -> None:
        """`seeds` (the models' own) and `train_images` (what the loop's batch indices index):
        each model draws its own batch, patches and augmentation; None: shared draws."""
        super().__init__()
        self.stack = StackedModelClass(models)
        self.patches, self.data_seed = patches, data_seed
        self.draws = 0  # training batches cut so far (the step), in the state dict
        self.seeds = None if seeds is None else [int(s) for s in seeds]
        if self.seeds is not None:
            if train_images is None or len(self.seeds) != self.num_models:
                raise ValueError("own draws need every model's seed and the training images")
            orders = [torch.randperm(len(train_images), generator=torch.Generator().manual_seed(
                data_seed * MODEL_SEED_STRIDE + s)) for s in self.seeds]
            # not in the state dict: rebuilt from the seeds, moved with the model
            self.register_buffer("train_images", train_images, persistent=False)
            self.register_buffer("own_orders", torch.stack(orders), persistent=False)

    @property
    def num_models(self) -> int:
        return self.stack.num_models

    def patch_pair(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The evaluation patches (x, y) of `images`: centred, unaugmented, flattened."""
        return self.patches.fixed_pair(images)

    def nll(self, images: torch.Tensor, codes: torch.Tensor, labels: torch.Tensor,
            idx: torch.Tensor | None = None) -> torch.Tensor:
        """(S,) the contrastive loss of a training batch per model (StackedNLL, g's rows the
        candidates' g(y'), image i's label i): fresh random patches; with own draws (`idx`, the
        batch's indices into the training set), each model's own."""
        step = self.data_seed * DRAW_SEED_STRIDE + self.draws
        self.draws += 1
        positions = torch.arange(images.shape[0], device=images.device)
        if self.seeds is None:
            generator = torch.Generator(device=images.device).manual_seed(step)
            x, y = self.patches.random_pair(images, generator)
            return self.stack.nll(x, y, positions)
        if idx is None:
            raise ValueError("own draws: nll needs the batch's indices (the loop's objective)")
        pairs = []
        for s, seed in enumerate(self.seeds):
            generator = torch.Generator(device=images.device).manual_seed(
                step * MODEL_SEED_STRIDE + seed)
            pairs.append(self.patches.random_pair(self.train_images[self.own_orders[s][idx]],
                                                  generator))
        x, y = (torch.stack(side) for side in zip(*pairs, strict=True))  # (S, B, D) each
        return self.stack.nll(x, y, positions)

    def objective(self, model: nn.Module, images: torch.Tensor, codes: torch.Tensor,
                  labels: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        """The training loop's objective (RunOptions.objective): nll with the batch's indices."""
        return self.nll(images, codes, labels, idx)

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
