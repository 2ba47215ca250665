"""S SmallMLP models with the same shapes, held as stacked weights and run with batched matmuls:
one after another, a tiny MLP's seeds leave the CPU idle in Python and kernel overhead. Each seed's
parameters only meet its own activations and Adam is elementwise, so every seed follows the
trajectory it would follow alone (up to float rounding of the batched kernels)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from .mlp import LEAKY_SLOPE, ModelClass, SmallMLP, fix_length, padded_rows
from .resnet import ResNet18
from .stacked_resnet import StackedResNet18

_leaky_backward = torch.ops.aten.leaky_relu_backward


class StackedMLPFunction(torch.autograd.Function):
    """The whole MLP of S models as one autograd node. Arguments: x, each hidden layer's weight
    and bias, the output layer's weight. Hidden layers: leaky_relu(h @ weight + bias) in place
    (the output's sign tells where the input was negative). The output layer is transposed,
    out^T = weight @ h^T (S, M, B): with M = 2, h @ weight^T is an N = 2 matmul that MKL runs far
    below its peak (benchmarks/synthetic_training.py). Transposes go to bmm as views."""

    @staticmethod
    def forward(ctx, x, *params):  # type: ignore[override]
        weights, biases, w_out = params[:-1:2], params[1:-1:2], params[-1]
        hidden = [x]
        for w, b in zip(weights, biases, strict=True):
            hidden.append(nn.functional.leaky_relu_(torch.baddbmm(b, hidden[-1], w),
                                                    LEAKY_SLOPE))
        ctx.save_for_backward(*hidden, *weights, w_out)
        return torch.bmm(w_out, hidden[-1].transpose(1, 2))

    @staticmethod
    def backward(ctx, grad):  # type: ignore[override]
        saved = ctx.saved_tensors
        depth = (len(saved) - 2) // 2
        hidden, weights, w_out = saved[: depth + 1], saved[depth + 1 : -1], saved[-1]
        grad = grad.contiguous()
        g_out = torch.bmm(grad, hidden[-1])
        g = grad.transpose(1, 2)
        w_next = w_out
        grads: list[torch.Tensor | None] = []
        for i in reversed(range(depth)):
            g = _leaky_backward(torch.bmm(g, w_next), hidden[i + 1], LEAKY_SLOPE, True)
            grads[:0] = [torch.bmm(hidden[i].transpose(1, 2), g), g.sum(dim=1, keepdim=True)]
            w_next = weights[i].transpose(1, 2)
        g_x = torch.bmm(g, w_next) if ctx.needs_input_grad[0] else None
        return (g_x, *grads, g_out)


def _class_log_probs(g: torch.Tensor, f_t: torch.Tensor) -> torch.Tensor:
    """(S, K, B) float64 log-softmax over classes of the float32 logits g @ f_t, for g (S, K, M)
    and f_t (S, M, B): the one definition the training loss and evaluation share. Classes along
    dim 1, where torch's log-softmax over a few classes runs faster than along the last."""
    return torch.log_softmax(torch.bmm(g, f_t).double(), dim=1)


class StackedNLL(torch.autograd.Function):
    """Mean NLL per model of a batch from embeddings (S, M, B) and unembeddings (S, K, M): the
    float32 logits' float64 log-softmax over classes, as the original's loss. One node with the
    closed-form gradient (softmax - onehot) / B instead of seven small ops and their backwards,
    whose fixed per-op cost is what a narrow stack's step mostly pays."""

    @staticmethod
    def forward(ctx, f_t, g, labels):  # type: ignore[override]
        log_probs = _class_log_probs(g, f_t)
        idx = labels.expand(log_probs.shape[0], 1, -1)
        ctx.save_for_backward(f_t, g, log_probs, idx)
        return -log_probs.gather(1, idx).squeeze(1).mean(dim=-1)

    @staticmethod
    def backward(ctx, grad):  # type: ignore[override]
        f_t, g, log_probs, idx = ctx.saved_tensors
        d_logits = log_probs.exp().scatter_add_(1, idx, log_probs.new_full(idx.shape, -1.0))
        d_logits = (d_logits * (grad / idx.shape[-1]).view(-1, 1, 1)).to(f_t.dtype)
        grad_f = torch.bmm(g.transpose(1, 2), d_logits) if ctx.needs_input_grad[0] else None
        grad_g = torch.bmm(d_logits, f_t.transpose(1, 2)) if ctx.needs_input_grad[1] else None
        return grad_f, grad_g, None


class StackedMLP(nn.Module):
    """Hidden layers: weight (S, in, out) (nn.Linear's transposed), bias (S, 1, out); the output
    layer (l4 at the original's depth): weight (S, out, in) as nn.Linear's."""

    def __init__(self, mlps: Sequence[SmallMLP]) -> None:
        super().__init__()
        if len({m.depth for m in mlps}) != 1:
            raise ValueError("the MLPs of one stack must have the same depth")
        self.layer_names = list(mlps[0].layer_names)
        last = self.layer_names[-1]
        # outputs of different widths (the stack across M) padded with zero rows (padded_rows)
        self.out_dims = [getattr(m, last).out_features for m in mlps]
        for name in self.layer_names:
            layers = [getattr(m, name) for m in mlps]
            if name != last and len({lyr.weight.shape for lyr in layers}) != 1:
                raise ValueError(f"the MLPs of one stack differ in the shape of {name}")
            w = padded_rows([self._stored(name, lyr.weight.detach()) for lyr in layers])
            self.register_parameter(f"{name}_weight", nn.Parameter(w.contiguous()))
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
        params = [getattr(self, f"{name}_{kind}") for name in self.layer_names[:-1]
                  for kind in ("weight", "bias")]
        params.append(getattr(self, f"{self.layer_names[-1]}_weight"))
        return StackedMLPFunction.apply(x, *params)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: (B, in) shared by all models, or (S, B, in). Returns (S, B, out) (a view)."""
        return self.forward_t(x).transpose(1, 2)

    def state_dict_of(self, index: int, prefix: str) -> dict[str, torch.Tensor]:
        """Model `index` as an nn.Linear-style state dict under `prefix` (e.g. 'f_net.')."""
        out = {}
        for name in self.layer_names:
            weight = getattr(self, f"{name}_weight")[index].detach()
            if name == self.layer_names[-1]:
                weight = weight[: self.out_dims[index]]
            out[f"{prefix}{name}.weight"] = self._stored(name, weight).clone()
            bias = getattr(self, f"{name}_bias", None)
            if bias is not None:
                out[f"{prefix}{name}.bias"] = bias[index, 0].detach().clone()
        return out

    def _stored(self, name: str, weight: torch.Tensor) -> torch.Tensor:
        """nn.Linear's (out, in) weight in the stack's layout and back: hidden layers transposed."""
        return weight if name == self.layer_names[-1] else weight.T


class StackedModelClass(nn.Module):
    """S models (f_s, g_s) of the same shapes (seeds, or length fixings), run all at once."""

    def __init__(self, models: Sequence[ModelClass]) -> None:
        super().__init__()
        nets = [m.f_net for m in models]  # ResNet-18s stack as grouped convolutions
        self.f_net = StackedResNet18(nets) if isinstance(nets[0], ResNet18) else StackedMLP(nets)
        self.g_net = StackedMLP([m.g_net for m in models])
        for name in ("fix_g", "fix_f"):
            lengths = [getattr(m, name) for m in models]
            if len(set(lengths)) == 1:
                setattr(self, name, lengths[0])
            else:  # one per model: moves with the model, not in its state dict
                per_model = torch.tensor(lengths, dtype=torch.float32).reshape(-1, 1, 1)
                self.register_buffer(name, per_model, persistent=False)

    @property
    def num_models(self) -> int:
        return self.f_net.num_models

    def embed_t(self, x: torch.Tensor) -> torch.Tensor:
        return fix_length(self.f_net.forward_t(x), self.fix_f, dim=1)  # (S, M, B)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        return self.embed_t(x).transpose(1, 2)  # (S, B, M)

    def unembed(self, codes: torch.Tensor) -> torch.Tensor:
        return fix_length(self.g_net(codes), self.fix_g)  # (S, K, M)

    def log_probs(self, x: torch.Tensor, all_codes: torch.Tensor) -> torch.Tensor:
        """(S, B, K) float64 log p(y|x): a view of _class_log_probs' (S, K, B)."""
        return _class_log_probs(self.unembed(all_codes), self.embed_t(x)).transpose(1, 2)

    def nll(self, x: torch.Tensor, all_codes: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """(S,) mean NLL of a batch per model, the training loss (see StackedNLL)."""
        return StackedNLL.apply(self.embed_t(x), self.unembed(all_codes), labels)

    def state_dict_of(self, index: int) -> dict[str, torch.Tensor]:
        return {**self.f_net.state_dict_of(index, "f_net."), **self.g_net.state_dict_of(index, "g_net.")}
