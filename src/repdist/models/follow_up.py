"""The follow-up's models: an encoder f, then a bias-free linear head whose rows are the
unembeddings g. The follow-up is Nielsen et al. 2026, "Logit Distance Bounds Representational
Similarity" (their `backbones/nn.py`, `models/classifier.py`, `kldistill.py`, `logitdistill.py`,
`cbm.py`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import torch
from torch import nn


@dataclass(frozen=True)
class FollowUpArch:
    """One model of the follow-up: encoder (in_dim -> hidden x depth -> rep_dim; their "MLP",
    depth 3 and width 512 on the spirals, or "Shallow", depth 1 and width 2,048 on SUB), head
    over num_classes labels, an optional probe over `concepts` (0: none), dropout, and whether
    the head is Xavier-initialised (their students and concept-bottleneck models)."""

    in_dim: int = 2
    hidden: int = 512
    depth: int = 3
    rep_dim: int = 2
    num_classes: int = 7
    concepts: int = 0
    dropout: float = 0.1
    xavier_head: bool = False


class FollowUpMLP(nn.Module):
    """One model: `encoder`, `linear` (the head: g its weight rows), `probe` if it has concepts."""

    def __init__(self, arch: FollowUpArch) -> None:
        super().__init__()
        self.arch = arch
        encoder = nn.Module()
        sizes = [arch.in_dim] + [arch.hidden] * arch.depth
        for i in range(arch.depth):
            setattr(encoder, f"enc_block_{i + 1}", nn.Linear(sizes[i], sizes[i + 1]))
        encoder.enc_final = nn.Linear(sizes[-1], arch.rep_dim)
        self.encoder = encoder
        self.linear = nn.Linear(arch.rep_dim, arch.num_classes, bias=False)
        if arch.concepts:
            self.probe = nn.Linear(arch.rep_dim, arch.concepts, bias=False)
        if arch.xavier_head:
            nn.init.xavier_uniform_(self.linear.weight)
        self.drop = nn.Dropout(arch.dropout)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        h = x.flatten(1)
        for i in range(self.arch.depth):
            h = self.drop(torch.relu(getattr(self.encoder, f"enc_block_{i + 1}")(h)))
        return self.encoder.enc_final(h)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The logits f(x)^T g(y) (their LOGITS)."""
        return self.linear(self.embed(x))


def build_follow_up(arch: FollowUpArch, seed: int) -> FollowUpMLP:
    """The model their code builds after set_random_seed(seed): their keys, built in their order
    (encoder, head, probe, Xavier on the head), so checkpoints pass between the two codes."""
    torch.manual_seed(seed)
    return FollowUpMLP(arch)


class FollowUpStack(nn.Module):
    """What every stack of S follow-up models (MLPs or ResNets) shares: one architecture (the
    head's initialisation aside) and `head`, the heads (S, K, M) in nn.Linear's layout: g."""

    head: torch.Tensor

    def __init__(self, archs: Iterable) -> None:
        super().__init__()
        shapes = {replace(a, xavier_head=False) for a in archs}  # init aside, one shape
        if len(shapes) != 1:
            raise ValueError(f"the models of one stack differ in architecture: {shapes}")
        self.arch = shapes.pop()

    @property
    def num_models(self) -> int:
        return self.head.shape[0]

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        return torch.bmm(self.embed(x), self.head.transpose(1, 2))

    def unembed(self, codes: torch.Tensor | None = None) -> torch.Tensor:
        """The heads (S, K, M): g (codes are not read; the training loop passes some)."""
        del codes
        return self.head

    def log_probs(self, x: torch.Tensor, codes: torch.Tensor | None = None) -> torch.Tensor:
        """(S, B, K) float64 log-softmax of the logits (the training loop's NLL reads it)."""
        del codes
        return torch.log_softmax(self.logits(x).double(), dim=-1)


class StackedFollowUp(FollowUpStack):
    """S follow-up MLPs of one architecture: block weights (S, in, out), biases (S, 1, out),
    head (S, K, M), probe (S, C, M). Each model has its own dropout masks, and follows the
    trajectory it would follow alone, given the same batches and masks."""

    def __init__(self, models: Sequence[FollowUpMLP]) -> None:
        super().__init__(m.arch for m in models)
        self.block_names = [f"enc_block_{i + 1}" for i in range(self.arch.depth)] + ["enc_final"]
        for name in self.block_names:
            layers = [getattr(m.encoder, name) for m in models]
            self.register_parameter(f"{name}_weight", nn.Parameter(torch.stack(
                [lyr.weight.detach().T for lyr in layers]).contiguous()))
            self.register_parameter(f"{name}_bias", nn.Parameter(torch.stack(
                [lyr.bias.detach()[None, :] for lyr in layers]).contiguous()))
        self.head = nn.Parameter(torch.stack([m.linear.weight.detach() for m in models]))
        if self.arch.concepts:
            self.probe = nn.Parameter(torch.stack([m.probe.weight.detach() for m in models]))

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """x: (B, in) shared by every model, or (S, B, in). Returns (S, B, M)."""
        h = x if x.dim() == 3 else x.expand(self.num_models, *x.shape)
        for name in self.block_names[:-1]:
            h = torch.relu(torch.baddbmm(getattr(self, f"{name}_bias"), h,
                                         getattr(self, f"{name}_weight")))
            h = nn.functional.dropout(h, self.arch.dropout, self.training)
        last = self.block_names[-1]
        return torch.baddbmm(getattr(self, f"{last}_bias"), h, getattr(self, f"{last}_weight"))

    def concept_logits(self, x: torch.Tensor) -> torch.Tensor:
        return torch.bmm(self.embed(x), self.probe.transpose(1, 2))

    def state_dict_of(self, index: int) -> dict[str, torch.Tensor]:
        """Model `index` in their keys (encoder.enc_block_1.weight, ..., linear.weight)."""
        out = {}
        for name in self.block_names:
            out[f"encoder.{name}.weight"] = getattr(self, f"{name}_weight")[index].detach().T.clone()
            out[f"encoder.{name}.bias"] = getattr(self, f"{name}_bias")[index, 0].detach().clone()
        out["linear.weight"] = self.head[index].detach().clone()
        if self.arch.concepts:
            out["probe.weight"] = self.probe[index].detach().clone()
        return out
