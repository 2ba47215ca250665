"""CIFAR-10 experiments (spec Part B §1.2, §2.3, §3.3, §5.5, §5.6): ResNet-18 embeddings of 2, 3
or 5 dimensions, one model per seed, representations extracted once, every pair compared."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..data.cifar10 import CIFAR10, normalise
from ..data.radial import label_codes
from ..io import atomic_path, provenance, write_json, write_parquet
from ..models.resnet import build_cifar_model, effective_bn_momentum
from ..representations import embeddings_frame, unembeddings_frame
from ..training.loop import TrainConfig, train

NUM_CLASSES = 10


@dataclass(frozen=True)
class CifarModelConfig:
    rep_dim: int
    seed: int
    base_width: int = 64
    g_width: int = 128
    bn_momentum: float | str = 0.1  # a number, or "original" for 1 - 0.9^(K+1)
    device: str = "auto"  # auto | cpu | cuda
    bf16: bool = False  # CUDA only: bfloat16 autocast for f
    channels_last: bool = True  # CUDA only
    eval_batch_size: int = 500


def resolve_bn_momentum(value: float | str) -> float:
    if value == "original":
        return effective_bn_momentum(NUM_CLASSES)
    return float(value)


def resolve_device(requested: str) -> torch.device:
    """CUDA when available (or asked for), else the CPU with a warning about the cost."""
    if requested == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("cifar10.device is 'cuda' but torch sees no CUDA device")
    if requested in ("auto", "cuda") and torch.cuda.is_available():
        return torch.device("cuda")
    if requested == "auto":
        warnings.warn(
            "no CUDA device: training ResNet-18 on the CPU (about 4 s per step at full width "
            "on 2 cores); use a GPU node for the paper scale",
            RuntimeWarning,
            stacklevel=2,
        )
    return torch.device("cpu")


class _AutocastF(torch.nn.Module):
    """Wrap f so its forward runs under bfloat16 autocast (on CUDA); outputs come back float32."""

    def __init__(self, net: torch.nn.Module) -> None:
        super().__init__()
        self.net = net

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autocast(device_type=x.device.type, dtype=torch.bfloat16):
            return self.net(x).float()


@torch.no_grad()
def embed_all(model, images: torch.Tensor, batch_size: int) -> np.ndarray:
    model.eval()
    parts = [model.embed(images[i : i + batch_size]).double().cpu() for i in
             range(0, len(images), batch_size)]
    return torch.cat(parts).numpy()


@dataclass(frozen=True)
class CifarPaths:
    model: Path
    metrics: Path
    embeddings_test: Path
    embeddings_train: Path
    unembeddings: Path


def train_cifar_model(
    cfg: CifarModelConfig,
    train_cfg: TrainConfig,
    data: CIFAR10,
    paths: CifarPaths,
    run_config: Mapping[str, Any],
    checkpoint: str | Path | None = None,
) -> dict[str, Any]:
    """Train one (ResNet-18 f, MLP g) model, then write it, its metrics and its representations."""
    device = resolve_device(cfg.device)
    on_cuda = device.type == "cuda"
    model = build_cifar_model(
        cfg.seed, cfg.rep_dim, NUM_CLASSES, cfg.g_width, cfg.base_width,
        resolve_bn_momentum(cfg.bn_momentum),
    )
    if cfg.bf16 and on_cuda:
        model.f_net = _AutocastF(model.f_net)
    codes = label_codes(np.arange(NUM_CLASSES), NUM_CLASSES)
    train_x, test_x = normalise(data.train_images), normalise(data.test_images)
    log, finals = train(
        model, train_x, data.train_labels, test_x, data.test_labels, codes, train_cfg,
        checkpoint=checkpoint, device=device, eval_batch_size=cfg.eval_batch_size,
        channels_last=cfg.channels_last and on_cuda, final_train_eval=True,
    )
    if isinstance(model.f_net, _AutocastF):
        model.f_net = model.f_net.net
    model.eval()
    with torch.no_grad():
        g = model.unembed(torch.from_numpy(codes).to(device)).double().cpu().numpy()
    memory = torch.channels_last if (cfg.channels_last and on_cuda) else torch.contiguous_format

    def as_input(a: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(a).to(device).contiguous(memory_format=memory)

    meta = {
        "experiment": "cifar10",
        "standin_data": data.standin,
        "K": NUM_CLASSES,
        "M": cfg.rep_dim,
        "width": cfg.g_width,
        "base_width": cfg.base_width,
        "bn_momentum": resolve_bn_momentum(cfg.bn_momentum),
        "fix_g": 0.0,
        "fix_f": 0.0,
        "seed": cfg.seed,
        "steps": train_cfg.steps,
        "device": device.type,
        **provenance(run_config),
    }
    for split, images, labels, path in (
        ("test", test_x, data.test_labels, paths.embeddings_test),
        ("train", train_x, data.train_labels, paths.embeddings_train),
    ):
        f = embed_all(model, as_input(images), cfg.eval_batch_size)
        preds = np.argmax(f @ g.T, axis=1)
        write_parquet(path, embeddings_frame(f, labels, preds), {**meta, "split": split})
    write_parquet(paths.unembeddings, unembeddings_frame(g), {**meta, "split": "labels"})
    metrics = {
        "train_loss_steps": log.train_steps,
        "train_loss": [v[0] for v in log.train_loss],
        "test_loss_steps": log.test_steps,
        "test_loss": [v[0] for v in log.test_loss],
        "final_test_loss": finals["test_loss"][0],
        "final_train_loss": finals["train_loss"][0],
        "test_accuracy": finals["test_accuracy"][0],
        "train_accuracy": finals["train_accuracy"][0],
        "wall_time_s": finals["wall_time_s"],
        "steps_run": finals["steps_run"],
        "steps_per_s": finals["steps_run"] / max(finals["wall_time_s"], 1e-9),
        "loss_note": "final losses in eval mode (BatchNorm running statistics)",
        **meta,
    }
    write_json(paths.metrics, metrics)
    with atomic_path(paths.model) as tmp:
        torch.save({k: v.cpu() for k, v in model.state_dict().items()}, tmp)
    return metrics
