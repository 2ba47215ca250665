"""The log-bilinear language model (Mnih & Teh 2012) of Roeder et al. (2021)'s Fig. 1, in the
family p(y|x) = softmax_y(f(x)^T g(y)), seeds stacked along a leading dimension.

A word w has a context vector r_w, a target vector q_w (M = 2 in the figure) and a bias b_w. The
context x = (w_1 .. w_n) is predicted as f(x) = sum_i C_i r_{w_i}, C_i an M x M matrix per position,
and the next word scores f(x)^T q_y + b_y. Inputs are the context's word ids, held as floats (the
training loop keeps inputs in the model's float type); `codes`, what g reads, are the word ids."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from .stacked import StackedNLL

MAX_VOCABULARY = 2**24  # word ids travel as float32 (training/loop.py): exact up to here
INIT_STD = 0.1  # word vectors at the start, N(0, INIT_STD^2) per coordinate


def _seed_parameters(seed: int, vocabulary: int, context: int,
                     rep_dim: int) -> dict[str, torch.Tensor]:
    """One seed's start: torch.manual_seed(seed), then r, C, q (the bias starts at 0)."""
    torch.manual_seed(seed)
    return {
        "context_vectors": torch.randn(vocabulary, rep_dim) * INIT_STD,
        "positions": torch.randn(context, rep_dim, rep_dim) / rep_dim**0.5,
        "target_vectors": torch.randn(vocabulary, rep_dim) * INIT_STD,
        "bias": torch.zeros(vocabulary),
    }


# The bias is the family's with one more coordinate: f~(x) = (f(x), 1) and g~(y) = (q_y, b_y) give
# f~^T g~ = f^T q_y + b_y, so `embed` and `unembed` return these (M + 1 columns). f~'s last
# coordinate never varies (m_CCA of f runs over the M that do). p(y|x) is unchanged by f~ -> A f~,
# g~ -> A^{-T} g~ for every invertible A that keeps f~'s 1: q_y -> B^{-T} q_y + c for f -> B f + t.
# So the word vectors q of two models that fit the same p differ by an affine map of R^M.
class StackedLogBilinear(nn.Module):
    """S log-bilinear models of one shape: context_vectors (S, V, M), positions (S, n, M, M),
    target_vectors (S, V, M), bias (S, V); model s starts as `_seed_parameters(seeds[s])`."""

    def __init__(self, seeds: Sequence[int], vocabulary: int, context: int,
                 rep_dim: int) -> None:
        super().__init__()
        if not 2 <= vocabulary <= MAX_VOCABULARY:
            raise ValueError(f"vocabulary must be in [2, {MAX_VOCABULARY}], got {vocabulary}")
        if context < 1 or rep_dim < 1 or not seeds:
            raise ValueError(f"need context >= 1, rep_dim >= 1 and a seed, got {context}, "
                             f"{rep_dim}, {list(seeds)}")
        starts = [_seed_parameters(int(s), vocabulary, context, rep_dim) for s in seeds]
        for name in starts[0]:
            self.register_parameter(name, nn.Parameter(torch.stack([p[name] for p in starts])))
        self.context = context

    @property
    def num_models(self) -> int:
        return self.bias.shape[0]

    def predicted(self, x: torch.Tensor) -> torch.Tensor:
        """f(x) = sum_i C_i r_{w_i} of every model: x (B, n) word ids -> (S, B, M)."""
        ids = x.long()
        if ids.dim() != 2 or ids.shape[1] != self.context:
            raise ValueError(f"contexts must be (B, {self.context}) word ids, got {tuple(x.shape)}")
        vectors = self.context_vectors[:, ids]  # (S, B, n, M)
        return torch.einsum("sbnm,snkm->sbk", vectors, self.positions)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """f~(x) = (f(x), 1): (S, B, M + 1)."""
        f = self.predicted(x)
        return torch.cat([f, torch.ones_like(f[..., :1])], dim=-1)

    def unembed(self, codes: torch.Tensor) -> torch.Tensor:
        """g~(y) = (q_y, b_y) of the words `codes` ((V,) or (V, 1) ids): (S, V, M + 1)."""
        ids = codes.reshape(-1).long()
        return torch.cat([self.target_vectors[:, ids], self.bias[:, ids, None]], dim=-1)

    def log_probs(self, x: torch.Tensor, all_codes: torch.Tensor) -> torch.Tensor:
        """(S, B, V) float64 log p(y|x) over the words `all_codes`: the logits f^T q_y + b_y in
        the model's float type, their log-softmax in float64."""
        ids = all_codes.reshape(-1).long()
        f = self.predicted(x)
        logits = torch.baddbmm(self.bias[:, None, ids], f,
                               self.target_vectors[:, ids].transpose(1, 2))
        return torch.log_softmax(logits.double(), dim=-1)

    def nll(self, x: torch.Tensor, all_codes: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """(S,) mean NLL per model of a batch: StackedNLL on f~ and g~ (f~^T g~ = f^T q_y + b_y)."""
        return StackedNLL.apply(self.embed(x).transpose(1, 2), self.unembed(all_codes), labels)

    def state_dict_of(self, index: int) -> dict[str, torch.Tensor]:
        """Model `index`'s parameters (its seed's slice of each)."""
        return {name: p[index].detach().clone() for name, p in self.named_parameters()}
