"""S ResNet-18s of the same shape trained as one network: the seeds of a CIFAR configuration.

Every convolution becomes a grouped convolution with one group per seed, and every BatchNorm one
BatchNorm over S x C channels. So each seed only ever meets its own weights and statistics, exactly
as if it were trained alone (a float64 test holds this to 1e-9). One network of S groups fills a GPU
that one ResNet-18 at batch 32 leaves mostly idle."""

from __future__ import annotations

import copy
from collections.abc import Sequence

import torch
from torch import nn

from .resnet import ResNet18
from .mlp import padded_rows

# torch.compile's modes for the stack's body ("none": eager), untimed candidates of `make gpu-check`
# (docs/gpu.md). "elementwise": inductor fuses what lies between the convolutions, no autotuning and
# no CUDA graphs of its own (RunOptions.cuda_graph captures the step)
COMPILE_MODES = ("none", "default", "reduce-overhead", "max-autotune-no-cudagraphs", "elementwise")
# inductor's settings of the elementwise mode; every inductor compile here leaves convolutions
# to ATen (cuDNN): torch 2.11's Triton convolution template miscomputes 3x3 kernels
ATEN_CONVOLUTIONS = {"max_autotune_conv_backends": "ATEN"}
ELEMENTWISE = {"max_autotune": False, "triton.cudagraphs": False, **ATEN_CONVOLUTIONS}


def compile_arguments(mode: str, backend: str | None = None) -> dict[str, object]:
    """torch.compile's arguments for a mode of COMPILE_MODES other than "none": inductor's
    named mode, or for "elementwise" its settings (ELEMENTWISE); `backend` (e.g. "eager")
    replaces inductor, which alone reads them."""
    if backend is not None:
        return {"backend": backend}
    if mode == "elementwise":
        return {"options": dict(ELEMENTWISE)}
    return {} if mode == "default" else {"mode": mode}


# The stem, which reads the shared input image, is a plain convolution with S x 64 output channels;
# every other convolution is grouped, one group per seed.
def _stacked_conv(convs: Sequence[nn.Conv2d], shared_input: bool) -> nn.Conv2d:
    first, count = convs[0], len(convs)
    conv = nn.Conv2d(
        first.in_channels if shared_input else count * first.in_channels,
        count * first.out_channels, first.kernel_size, first.stride, first.padding,
        bias=False, groups=1 if shared_input else count, device="meta")
    conv.weight = nn.Parameter(torch.cat([c.weight.detach() for c in convs]).clone())
    return conv


def _stacked_batchnorm(norms: Sequence[nn.BatchNorm2d]) -> nn.BatchNorm2d:
    first = norms[0]
    norm = nn.BatchNorm2d(len(norms) * first.num_features, eps=first.eps, momentum=first.momentum,
                          device=first.weight.device, dtype=first.weight.dtype)
    with torch.no_grad():
        for name in ("weight", "bias", "running_mean", "running_var"):
            getattr(norm, name).copy_(torch.cat([getattr(n, name) for n in norms]))
        norm.num_batches_tracked.copy_(first.num_batches_tracked)
    return norm


def _stacked(modules: Sequence[nn.Module]) -> nn.Module:
    """The same module tree with every conv grouped and every BatchNorm widened."""
    first = modules[0]
    if isinstance(first, nn.Conv2d):
        return _stacked_conv(modules, shared_input=False)
    if isinstance(first, nn.BatchNorm2d):
        return _stacked_batchnorm(modules)
    if any(True for _ in first.parameters(recurse=False)):
        raise TypeError(f"cannot stack {type(first).__name__}: it holds its own parameters")
    clone = copy.copy(first)
    clone._modules = {name: _stacked([getattr(m, name) for m in modules])
                      for name in first._modules}
    return clone


class StackedResNet18(nn.Module):
    """ResNet-18s of the same width as one network, the heads a batched matmul. Output widths
    may differ (config cifar10.stack_across_m): heads are padded with zero rows (padded_rows)."""

    def __init__(self, nets: Sequence[ResNet18]) -> None:
        super().__init__()
        body = copy.copy(nets[0])
        body._modules = dict(nets[0]._modules)
        body.conv1 = _stacked_conv([n.conv1 for n in nets], shared_input=True)
        for name in ("bn1", "layer1", "layer2", "layer3", "layer4"):
            setattr(body, name, _stacked([getattr(n, name) for n in nets]))
        body.linear = nn.Identity()
        self.body = body
        self.out_dims = [n.linear.out_features for n in nets]
        self.linear_weight = nn.Parameter(padded_rows([n.linear.weight.detach() for n in nets]))
        self.linear_bias = nn.Parameter(padded_rows([n.linear.bias.detach()[:, None]
                                                     for n in nets]))
        self.autocast_dtype: torch.dtype | None = None  # e.g. torch.float16 on CUDA

    @property
    def num_models(self) -> int:
        return self.linear_weight.shape[0]

    def compile_body(self, mode: str, backend: str | None = None) -> None:
        """torch.compile the body in place in `mode` (COMPILE_MODES; "none": eager), parameters
        and state dict keys unchanged. `backend` None is inductor, its convolutions pinned to
        ATen (ATEN_CONVOLUTIONS); "eager" only traces (what a CPU test can afford)."""
        if mode not in COMPILE_MODES:
            raise ValueError(f"compile must be one of {COMPILE_MODES}, got {mode!r}")
        if mode == "none":
            return
        if backend is None:
            import torch._inductor.config as inductor

            for key, value in ATEN_CONVOLUTIONS.items():  # the modes' own settings keep it
                setattr(inductor, key, value)
        self.body.compile(**compile_arguments(mode, backend))

    def forward_t(self, x: torch.Tensor) -> torch.Tensor:
        """x: (B, 3, 32, 32), shared by all seeds. Returns (S, max M, B) float32, padding zero."""
        if self.autocast_dtype is not None:
            # no cast cache: inside a CUDA graph's capture every cast is the step's own (as
            # torch's CUDA graphs ask of autocast); a weight is cast once a step either way
            with torch.autocast(device_type=x.device.type, dtype=self.autocast_dtype,
                                cache_enabled=False):
                pooled = self.body(x)
            pooled = pooled.float()
        else:
            pooled = self.body(x)  # (B, S * width)
        per_seed = pooled.view(len(x), self.num_models, -1).permute(1, 2, 0)  # (S, width, B)
        return torch.baddbmm(self.linear_bias, self.linear_weight, per_seed)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.forward_t(x).transpose(1, 2)

    def state_dict_of(self, index: int, prefix: str) -> dict[str, torch.Tensor]:
        """Seed `index` as a plain ResNet18 state dict (the original's keys) under `prefix`."""
        out = {}
        for key, value in self.body.state_dict().items():
            if not key.endswith("num_batches_tracked"):  # that one the seeds share
                value = value.chunk(self.num_models)[index]
            out[f"{prefix}{key}"] = value.detach().clone()
        rows = self.out_dims[index]
        out[f"{prefix}linear.weight"] = self.linear_weight[index, :rows].detach().clone()
        out[f"{prefix}linear.bias"] = self.linear_bias[index, :rows, 0].detach().clone()
        return out
