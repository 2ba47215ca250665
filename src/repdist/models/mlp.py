"""SmallMLP (the original's `src/models/small_mlp.py`) and the model class
p(y|x) = softmax(f(x)^T g(y)), f and g both SmallMLPs. State-dict keys match the original
(`f_net.l1.weight`, ...), so checkpoints can be compared with the authors'."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn
from torch.nn import functional

LEAKY_SLOPE = 0.01
NORM_EPS = 1e-8


class SmallMLP(nn.Module):
    """`depth` hidden layers of `width` units with bias and LeakyReLU(0.01) (3: the original's;
    4: Roeder et al.'s; 0: a class table), then a linear output layer without bias; layers l1 ..
    l<depth+1>, created in that order (the initialisation order)."""

    def __init__(self, in_features: int, width: int, out_features: int, depth: int = 3) -> None:
        super().__init__()
        if depth < 0:
            raise ValueError(f"depth must be >= 0, got {depth}")
        sizes = [in_features] + [width] * depth
        for i in range(depth):
            setattr(self, f"l{i + 1}", nn.Linear(sizes[i], sizes[i + 1]))
        setattr(self, f"l{depth + 1}", nn.Linear(sizes[-1], out_features, bias=False))
        self.depth = depth
        self.act = nn.LeakyReLU(LEAKY_SLOPE)

    @property
    def layer_names(self) -> list[str]:
        return [f"l{i + 1}" for i in range(self.depth + 1)]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x
        for name in self.layer_names[:-1]:
            h = self.act(getattr(self, name)(h))
        return getattr(self, self.layer_names[-1])(h)


def fix_length(v: torch.Tensor, length: float | torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Rescale vectors along `dim` to norm `length` (0 = leave them), as the original's length
    fixing. A tensor `length` (broadcast against v, e.g. (S, 1, 1)) gives each model its own."""
    if isinstance(length, torch.Tensor):
        return torch.where(length > 0, length * v / _clamped_norm(v, dim), v)
    if not length:
        return v
    return length * v / _clamped_norm(v, dim)


def _clamped_norm(v: torch.Tensor, dim: int) -> torch.Tensor:
    """max(||v||, NORM_EPS) along `dim`, as sqrt(max(sum v^2, NORM_EPS^2)): the same value and
    gradient (zero where clamped) as clamping `v.norm`, whose backward over a middle dim of a
    stack's (S, M, B) output is slow enough to dominate a narrow stack's step."""
    return torch.sqrt(torch.clamp((v * v).sum(dim=dim, keepdim=True), min=NORM_EPS**2))


def padded_rows(tensors: Sequence[torch.Tensor]) -> torch.Tensor:
    """Tensors of shape (rows_i, ...) stacked into (S, max rows, ...), padded with zero rows.
    A padded row of a head stays exactly zero in training: its gradient is a product with the
    other side's zero rows (f's and g's heads are padded alike), so Adam never moves it, and
    the logits' sums gain only exact zeros: each model computes what it computes alone."""
    rows = max(t.shape[0] for t in tensors)
    return torch.stack([functional.pad(t, (*[0, 0] * (t.dim() - 1), 0, rows - t.shape[0]))
                        for t in tensors])


class ModelClass(nn.Module):
    """One model (f, g): embeddings f(x), unembeddings g(code), optional length fixing."""

    def __init__(self, f_net: nn.Module, g_net: nn.Module, fix_g: float = 0.0,
                 fix_f: float = 0.0) -> None:
        super().__init__()
        self.f_net, self.g_net, self.fix_g, self.fix_f = f_net, g_net, fix_g, fix_f

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        return fix_length(self.f_net(x), self.fix_f)

    def unembed(self, codes: torch.Tensor) -> torch.Tensor:
        return fix_length(self.g_net(codes), self.fix_g)

    def log_probs(self, x: torch.Tensor, all_codes: torch.Tensor) -> torch.Tensor:
        """B x K log p(y|x), f evaluated once; float64 log-softmax as the original's loss."""
        logits = self.embed(x) @ self.unembed(all_codes).T
        return torch.log_softmax(logits.double(), dim=-1)


def build_synthetic_model(seed: int, num_classes: int, width: int, rep_dim: int, fix_g: float,
                          fix_f: float) -> ModelClass:
    """torch.manual_seed(seed), then f, then g: seed s starts where the original's seed s starts."""
    torch.manual_seed(seed)
    return ModelClass(SmallMLP(2, width, rep_dim), SmallMLP(num_classes - 1, width, rep_dim),
                      fix_g=fix_g, fix_f=fix_f)


def build_roeder_model(seed: int, num_classes: int, in_features: int, width: int, depth: int,
                       rep_dim: int, g_depth: int = 0) -> ModelClass:
    """Roeder et al. (2021) App. A.2's classifier: f an MLP of `depth` hidden layers of `width`
    units ending in a `rep_dim` bottleneck; g a table of class vectors (g_depth 0: one linear
    map of the truncated one-hot code, the last class's vector fixed at 0, no restriction
    under softmax's shift invariance) or an MLP. torch.manual_seed(seed), then f, then g."""
    torch.manual_seed(seed)
    return ModelClass(SmallMLP(in_features, width, rep_dim, depth=depth),
                      SmallMLP(num_classes - 1, width, rep_dim, depth=g_depth))
