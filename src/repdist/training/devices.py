"""Which device a running job uses and how float32 runs there (TF32, cuDNN's algorithms). A job
promised a GPU that finds none fails at once, instead of training for hours on the CPU. Which jobs
get `resources: gpu` is decided without torch, by pipeline/gpu_plan.py."""

from __future__ import annotations

import os
import socket
import warnings

DEVICES = ("auto", "cpu", "cuda")


class DeviceError(RuntimeError):
    """A job configured for a GPU found none."""


def resolve_device(requested: str, key: str, promised: bool = False):
    """The torch device for a job configured with `requested` (config key `key`); `promised`:
    the job was planned for a GPU (its `resources: gpu`), so `auto` finding none says so."""
    import torch

    if requested not in DEVICES:
        raise ValueError(f"{key} must be one of {DEVICES}, got {requested!r}")
    available = torch.cuda.is_available()
    seen = (f"host {socket.gethostname()}, "
            f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', '(unset)')}")
    if requested == "cuda" and not available:
        raise DeviceError(
            f"{key} is 'cuda' but this job sees no GPU ({seen}, torch {torch.__version__} built "
            f"with CUDA {torch.version.cuda or 'none'}): run it on a GPU node, or set {key}: cpu "
            "(or auto)")
    if promised and requested == "auto" and not available:
        warnings.warn(f"this job was planned for a GPU ({key}: auto on machines declared to have "
                      f"GPUs) but sees none ({seen}): training on the CPU",
                      RuntimeWarning, stacklevel=2)
    return torch.device("cuda" if requested != "cpu" and available else "cpu")


TF32_MODES = ("convolutions", "none", "all")


def set_cuda_float32(tf32: str) -> None:
    """Float32 arithmetic on CUDA: `convolutions` in TF32 and matrix products in float32
    (PyTorch's default since 1.12, what the original's code got on an Ampere GPU), `none`
    (float32 throughout) or `all` (matrix products in TF32 too). TF32 keeps 10 mantissa bits
    of float32's 23 in the products; nothing changes on a CPU or in float64."""
    import torch

    if tf32 not in TF32_MODES:
        raise ValueError(f"tf32 must be one of {TF32_MODES}, got {tf32!r}")
    torch.backends.cudnn.allow_tf32 = tf32 in ("convolutions", "all")
    torch.backends.cuda.matmul.allow_tf32 = tf32 == "all"


def set_cudnn_benchmark(on: bool) -> None:
    """How cuDNN chooses a convolution's algorithm on CUDA: by its heuristics (off, PyTorch's
    default), or `on` by timing all of them for each shape at its first call (benchmark_limit 0).
    The algorithms sum in other orders: the same arithmetic up to rounding. No effect on a CPU."""
    import torch

    torch.backends.cudnn.benchmark = on
    torch.backends.cudnn.benchmark_limit = 0 if on else 10  # 10: PyTorch's default
