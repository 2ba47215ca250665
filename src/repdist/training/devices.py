"""Which device a training job uses, decided twice: when the DAG is built (to tag jobs with
`resources: gpu`, without importing torch, on a machine that may have no GPU, e.g. a SLURM
login node) and when the job runs (where a job that was promised a GPU and finds none fails at
once, saying so, instead of silently training for hours on the CPU).

When the DAG is built, "is there a GPU" is asked of the machines that will run the training
jobs: a run that declares its GPUs (the `gpu` resource: a SLURM profile's `resources:
[gpu=N]`, or `--resources gpu=N`) is planned as declared, whatever the building machine has;
otherwise the building machine is the one that runs them (a workstation) and is asked.
"""

from __future__ import annotations

import os
import socket
import warnings
from pathlib import Path

DEVICES = ("auto", "cpu", "cuda")


class DeviceError(RuntimeError):
    """A job configured for a GPU found none."""


def cuda_present() -> bool:
    """An NVIDIA GPU is visible to this process (driver files, CUDA_VISIBLE_DEVICES); no torch."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return False
    return _driver_gpu_count() > 0 or Path("/dev/nvidia0").exists()


def _driver_gpu_count() -> int:
    """The GPUs the NVIDIA driver lists (/proc), else 1 if its first device file exists."""
    gpus = Path("/proc/driver/nvidia/gpus")
    return len(list(gpus.iterdir())) if gpus.is_dir() else int(Path("/dev/nvidia0").exists())


def visible_gpus() -> list[str]:
    """The ids of the GPUs this process may use: CUDA_VISIBLE_DEVICES's entries (indices or
    UUIDs) when set, else 0..n-1 for the n GPUs the NVIDIA driver lists; no torch."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [v.strip() for v in visible.split(",") if v.strip() and v.strip() != "-1"]
    return [str(i) for i in range(_driver_gpu_count())]


def gpus_planned(declared: int | None, present: bool | None = None) -> bool:
    """Whether the training jobs run where there are GPUs: as the run declares (`declared`,
    its `gpu` resource; 0 turns GPUs off), else as this machine has (`present`; None asks it;
    see the module's text)."""
    if declared is not None:
        return declared > 0
    return cuda_present() if present is None else present


def uses_gpu(requested: str, gpus: bool | None = None) -> bool:
    """Whether a job configured with `requested` will train on a GPU: its `resources: gpu`.
    `gpus`: whether its machine has GPUs (gpus_planned); None asks this machine."""
    if requested not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, got {requested!r}")
    has_gpus = cuda_present() if gpus is None else gpus
    return requested == "cuda" or (requested == "auto" and has_gpus)


def resolve_device(requested: str, key: str, promised: bool = False):
    """The torch device for a job configured with `requested` (config key `key`); `promised`:
    the job was planned for a GPU (its `resources: gpu`), so `auto` finding none says so."""
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
    if promised and requested == "auto" and not available:
        warnings.warn(
            f"this job was planned for a GPU ({key}: auto on machines declared to have GPUs) "
            f"but sees none (host {socket.gethostname()}, CUDA_VISIBLE_DEVICES="
            f"{os.environ.get('CUDA_VISIBLE_DEVICES', '(unset)')}): training on the CPU",
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
