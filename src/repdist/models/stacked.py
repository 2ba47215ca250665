"""S SmallMLP models with the same shapes, held as stacked weights and run with batched matmuls.

Training 20 seeds of a tiny MLP one after another leaves the CPU idle in Python and kernel
overhead; stacking them turns each layer into one (S, B, w) x (S, w, w) batched matmul. Each
seed's parameters only ever meet that seed's activations, and Adam is elementwise, so every
seed follows the trajectory it would follow alone (up to float rounding of the batched kernels).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from .mlp import LEAKY_SLOPE, ModelClass, SmallMLP, fix_length

LAYERS = ("l1", "l2", "l3", "l4")


def _affine_grads(ctx, h, weight, grad, has_bias: bool):
    """Gradients of h @ weight + bias given the (contiguous) gradient of the product. h's
    transpose goes to bmm as a view: MKL reads it transposed, faster than copying it first.
    (Autograd's own bmm backward hands bmm a strided gradient: 8x slower for g's few rows.)"""
    grad_h = torch.bmm(grad, weight.transpose(1, 2)) if ctx.needs_input_grad[0] else None
    grad_w = torch.bmm(h.transpose(1, 2), grad)
    grad_b = grad.sum(dim=1, keepdim=True) if has_bias else None
    return grad_h, grad_w, grad_b


class StackedReadout(torch.autograd.Function):
    """The output layer, transposed: out^T[s] = weight[s] @ h[s]^T, (S, M, B) for weight (S, M, w).

    With M = 2 outputs, h @ weight^T is an N = 2 matmul that MKL runs at ~4 GFLOP/s; the
    transposed product (and its weight gradient grad^T @ h) has N = B or w and runs 2-6x faster.
    """

    @staticmethod
    def forward(ctx, h, weight):  # type: ignore[override]
        ctx.save_for_backward(h, weight)
        return torch.bmm(weight, h.transpose(1, 2))

    @staticmethod
    def backward(ctx, grad):  # type: ignore[override]
        h, weight = ctx.saved_tensors
        grad = grad.contiguous()
        grad_h = torch.bmm(grad.transpose(1, 2), weight) if ctx.needs_input_grad[0] else None
        return grad_h, torch.bmm(grad, h)


class StackedAffineLeaky(torch.autograd.Function):
    """leaky_relu(h @ weight + bias) as one autograd node, the activation applied in place on the
    product: one buffer and one node less per layer than the two ops (~9% of a step at w=128)."""

    @staticmethod
    def forward(ctx, h, weight, bias):  # type: ignore[override]
        out = torch.baddbmm(bias, h, weight)
        nn.functional.leaky_relu_(out, LEAKY_SLOPE)
        ctx.save_for_backward(h, weight, out)
        return out

    @staticmethod
    def backward(ctx, grad):  # type: ignore[override]
        h, weight, out = ctx.saved_tensors
        # the slope is positive, so the output's sign tells where the input was negative
        grad = torch.ops.aten.leaky_relu_backward(grad.contiguous(), out, LEAKY_SLOPE, True)
        return _affine_grads(ctx, h, weight, grad, True)


class StackedMLP(nn.Module):
    """Hidden layers: weight (S, in, out) (the transpose of nn.Linear's), bias (S, 1, out);
    the output layer l4: weight (S, out, in) as nn.Linear's (see StackedReadout)."""

    def __init__(self, mlps: Sequence[SmallMLP]) -> None:
        super().__init__()
        for name in LAYERS:
            layers = [getattr(m, name) for m in mlps]
            w = torch.stack([_stored(name, lyr.weight.detach()) for lyr in layers]).contiguous()
            self.register_parameter(f"{name}_weight", nn.Parameter(w))
            if layers[0].bias is not None:
                b = torch.stack([lyr.bias.detach()[None, :] for lyr in layers]).contiguous()
                self.register_parameter(f"{name}_bias", nn.Parameter(b))

    @property
    def num_models(self) -> int:
        return self.l1_weight.shape[0]

    def forward_t(self, x: torch.Tensor) -> torch.Tensor:
        """x: (B, in) shared by all models, or (S, B, in). Returns (S, out, B): transposed."""
        if x.dim() == 2:
            x = x.expand(self.num_models, *x.shape)
        h = StackedAffineLeaky.apply(x, self.l1_weight, self.l1_bias)
        h = StackedAffineLeaky.apply(h, self.l2_weight, self.l2_bias)
        h = StackedAffineLeaky.apply(h, self.l3_weight, self.l3_bias)
        return StackedReadout.apply(h, self.l4_weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: (B, in) shared by all models, or (S, B, in). Returns (S, B, out) (a view)."""
        return self.forward_t(x).transpose(1, 2)

    def state_dict_of(self, index: int, prefix: str) -> dict[str, torch.Tensor]:
        """Model `index` as an nn.Linear-style state dict under `prefix` (e.g. 'f_net.')."""
        out = {}
        for name in LAYERS:
            weight = getattr(self, f"{name}_weight")[index].detach()
            out[f"{prefix}{name}.weight"] = _stored(name, weight).clone()
            bias = getattr(self, f"{name}_bias", None)
            if bias is not None:
                out[f"{prefix}{name}.bias"] = bias[index, 0].detach().clone()
        return out


def _stored(name: str, weight: torch.Tensor) -> torch.Tensor:
    """nn.Linear's (out, in) weight in the stack's layout and back (a transpose is its own
    inverse): hidden layers transposed, the output layer as it is."""
    return weight if name == LAYERS[-1] else weight.T


def _lengths(lengths: Sequence[float]) -> float | torch.Tensor:
    """One length for the whole stack where the models agree, else an (S, 1, 1) tensor."""
    if len(set(lengths)) == 1:
        return lengths[0]
    return torch.tensor(lengths, dtype=torch.float32).reshape(-1, 1, 1)


class StackedModelClass(nn.Module):
    """S models (f_s, g_s) of the same shapes, e.g. the seeds of one configuration, or of
    several that differ only in length fixing; log-probabilities for all of them at once."""

    def __init__(self, models: Sequence[ModelClass]) -> None:
        super().__init__()
        self.f_net = StackedMLP([m.f_net for m in models])
        self.g_net = StackedMLP([m.g_net for m in models])
        for name in ("fix_g", "fix_f"):
            lengths = _lengths([getattr(m, name) for m in models])
            if isinstance(lengths, torch.Tensor):  # moves with the model, not in its state dict
                self.register_buffer(name, lengths, persistent=False)
            else:
                setattr(self, name, lengths)

    @property
    def num_models(self) -> int:
        return self.f_net.num_models

    def embed_t(self, x: torch.Tensor) -> torch.Tensor:
        return fix_length(self.f_net.forward_t(x), self.fix_f, dim=1)  # (S, M, B)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        return self.embed_t(x).transpose(1, 2)  # (S, B, M)

    def unembed(self, codes: torch.Tensor) -> torch.Tensor:
        return fix_length(self.g_net(codes), self.fix_g)  # (S, K, M)

    def class_log_probs(self, x: torch.Tensor, all_codes: torch.Tensor) -> torch.Tensor:
        """(S, K, B) float64 log p(y|x): classes along dim 1, where torch's log-softmax over
        a few classes runs ~5x faster than along the last dim (contiguous in B)."""
        logits = torch.bmm(self.unembed(all_codes), self.embed_t(x))
        return torch.log_softmax(logits.double(), dim=1)

    def log_probs(self, x: torch.Tensor, all_codes: torch.Tensor) -> torch.Tensor:
        """(S, B, K) float64 log p(y|x) (a view of class_log_probs)."""
        return self.class_log_probs(x, all_codes).transpose(1, 2)

    def state_dict_of(self, index: int) -> dict[str, torch.Tensor]:
        return {**self.f_net.state_dict_of(index, "f_net."), **self.g_net.state_dict_of(index, "g_net.")}
