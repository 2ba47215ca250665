"""Which device a training job uses, decided twice: when the DAG is built (to tag jobs with
`resources: gpu`, without importing torch, on a machine that may have no GPU, e.g. a SLURM
login node) and when the job runs (where a job that was promised a GPU and finds none fails at
once, saying so, instead of silently training for hours on the CPU).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

DEVICES = ("auto", "cpu", "cuda")


class DeviceError(RuntimeError):
    """A job configured for a GPU found none."""


def cuda_present() -> bool:
    """An NVIDIA GPU is visible to this process (driver files, CUDA_VISIBLE_DEVICES); no torch."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return False
    gpus = Path("/proc/driver/nvidia/gpus")
    return (gpus.is_dir() and any(gpus.iterdir())) or Path("/dev/nvidia0").exists()


def uses_gpu(requested: str) -> bool:
    """Whether a job configured with `requested` will train on a GPU: its `resources: gpu`."""
    if requested not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, got {requested!r}")
    return requested == "cuda" or (requested == "auto" and cuda_present())


def resolve_device(requested: str, key: str):
    """The torch device for a job configured with `requested` (config key `key`)."""
    import torch

    if requested not in DEVICES:
        raise ValueError(f"{key} must be one of {DEVICES}, got {requested!r}")
    available = torch.cuda.is_available()
    if requested == "cuda" and not available:
        raise DeviceError(
            f"{key} is 'cuda' but this job sees no GPU (host {socket.gethostname()}, "
            f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', '(unset)')}, "
            f"torch {torch.__version__} built with CUDA {torch.version.cuda or 'none'}): run it "
            f"on a GPU node, or set {key}: cpu (or auto)"
        )
    return torch.device("cuda" if requested != "cpu" and available else "cpu")
