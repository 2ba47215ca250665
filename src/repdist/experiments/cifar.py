"""CIFAR-10 experiments (spec Part B §1.2, §2.3, §3.3, §5.5, §5.6): ResNet-18 embeddings of 2, 3
or 5 dimensions; the seeds of a job trained together as one stacked network (each with its own
weights and BatchNorm statistics), representations extracted once, every pair compared."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..data.cifar10 import CIFAR10, normalise
from ..data.radial import label_codes
from ..devices import resolve_device
from ..io import provenance, write_json, write_parquet
from ..models.resnet import build_cifar_model, effective_bn_momentum
from ..models.stacked import StackedModelClass
from ..representations import embeddings_frame, unembeddings_frame
from ..training.checkpoint import write_atomically
from ..training.loop import TrainConfig, train

NUM_CLASSES = 10
DEFAULT_BN_MOMENTUM = 0.1  # PyTorch's


@dataclass(frozen=True)
class CifarModelConfig:
    rep_dim: int
    seeds: Sequence[int]
    base_width: int = 64
    g_width: int = 128
    bn_momentum: float | str = "protocol"  # "protocol", "original" (1 - 0.9^(K+1)) or a number
    device: str = "auto"  # auto | cpu | cuda
    bf16: bool = False  # CUDA only: bfloat16 autocast for f
    channels_last: bool = True  # CUDA only
    eval_batch_size: int = 500


def resolve_bn_momentum(value: float | str, protocol: str) -> float:
    """The BatchNorm momentum of f evaluated once per step. The original evaluated f K+1 = 11
    times per step in train mode, an effective momentum of 1 - 0.9^11 = 0.686 (spec §3.3): the
    paper protocol's; the clean protocol uses PyTorch's 0.1."""
    if value == "protocol":
        value = "original" if protocol == "paper" else DEFAULT_BN_MOMENTUM
    if value == "original":
        return effective_bn_momentum(NUM_CLASSES)
    return float(value)


def training_device(requested: str) -> torch.device:
    """CUDA when available (or asked for: then required), else the CPU with a warning."""
    device = resolve_device(requested, "cifar10.device")
    if requested == "auto" and device.type == "cpu":
        warnings.warn(
            "no CUDA device: training ResNet-18 on the CPU (about 4 s per step at full width "
            "on 2 cores); use a GPU node for the paper scale",
            RuntimeWarning,
            stacklevel=2,
        )
    return device


@torch.no_grad()
def embed_all(model: StackedModelClass, images: torch.Tensor, batch_size: int) -> np.ndarray:
    """(S, N, M) float64 eval-mode embeddings of every image for every seed of the stack."""
    model.eval()
    parts = [model.embed(images[i : i + batch_size]).double().cpu()
             for i in range(0, len(images), batch_size)]
    return torch.cat(parts, dim=1).numpy()


@dataclass(frozen=True)
class CifarPaths:
    model: Path
    metrics: Path
    embeddings_test: Path
    embeddings_train: Path
    unembeddings: Path


LOSS_NOTE = {
    "paper": "final_test_loss: as the original recorded it, the last test pass during training "
             "(BatchNorm in train mode, test batches of the training batch size in order, mean "
             "of the batch means; step 20,000 of 20,319 at paper scale); final_train_loss: the "
             "last logged window of training losses; *_eval: eval mode on the whole split after "
             "training",
    "clean": "final_test_loss, final_train_loss: eval mode (BatchNorm running statistics) on the "
             "whole split after training, as *_eval",
}


def train_cifar_models(
    cfg: CifarModelConfig,
    train_cfg: TrainConfig,
    data: CIFAR10,
    paths: Sequence[CifarPaths],
    run_config: Mapping[str, Any],
    checkpoint: str | Path | None = None,
) -> list[dict[str, Any]]:
    """Train the (ResNet-18 f, MLP g) models of cfg.seeds as one stack, then write each seed's
    model, metrics and representations as if trained alone; return each seed's metrics."""
    if len(paths) != len(cfg.seeds):
        raise ValueError(f"{len(paths)} output sets for {len(cfg.seeds)} seeds")
    device = training_device(cfg.device)
    on_cuda = device.type == "cuda"
    momentum = resolve_bn_momentum(cfg.bn_momentum, train_cfg.protocol)
    stack = StackedModelClass([
        build_cifar_model(seed, cfg.rep_dim, NUM_CLASSES, cfg.g_width, cfg.base_width, momentum)
        for seed in cfg.seeds
    ])
    if cfg.bf16 and on_cuda:
        stack.f_net.autocast_dtype = torch.bfloat16
    codes = label_codes(np.arange(NUM_CLASSES), NUM_CLASSES)
    train_x, test_x = normalise(data.train_images), normalise(data.test_images)
    identity = {"model": {"rep_dim": cfg.rep_dim, "seeds": list(cfg.seeds),
                          "base_width": cfg.base_width, "g_width": cfg.g_width,
                          "bn_momentum": momentum, "bf16": cfg.bf16 and on_cuda},
                "data": {"n_train": len(train_x), "n_test": len(test_x),
                         "standin": data.standin}}
    channels_last = cfg.channels_last and on_cuda
    log, finals = train(
        stack, train_x, data.train_labels, test_x, data.test_labels, codes, train_cfg,
        checkpoint=checkpoint, device=device, eval_batch_size=cfg.eval_batch_size,
        channels_last=channels_last, final_train_eval=True, identity=identity,
    )
    stack.eval()
    with torch.no_grad():
        g_all = stack.unembed(torch.from_numpy(codes).to(device)).double().cpu().numpy()
    memory = torch.channels_last if channels_last else torch.contiguous_format

    def as_input(a: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(a).to(device).contiguous(memory_format=memory)

    f_all = {split: embed_all(stack, as_input(images), cfg.eval_batch_size)
             for split, images in (("test", test_x), ("train", train_x))}
    labels = {"test": data.test_labels, "train": data.train_labels}
    stack.cpu()
    shared = {
        "experiment": "cifar10",
        "standin_data": data.standin,
        "K": NUM_CLASSES,
        "M": cfg.rep_dim,
        "width": cfg.g_width,
        "base_width": cfg.base_width,
        "bn_momentum": momentum,
        "fix_g": 0.0,
        "fix_f": 0.0,
        "steps": train_cfg.steps,
        "steps_total": finals["steps_total"],
        "protocol": train_cfg.protocol,
        "device": device.type,
        **provenance(run_config),
    }
    paper = train_cfg.rules.train_mode_test_loss
    all_metrics = []
    for i, (seed, p) in enumerate(zip(cfg.seeds, paths, strict=True)):
        meta = {**shared, "seed": int(seed)}
        for split, path in (("test", p.embeddings_test), ("train", p.embeddings_train)):
            f = f_all[split][i]
            preds = np.argmax(f @ g_all[i].T, axis=1)
            write_parquet(path, embeddings_frame(f, labels[split], preds), {**meta, "split": split})
        write_parquet(p.unembeddings, unembeddings_frame(g_all[i]), {**meta, "split": "labels"})
        metrics = {
            "train_loss_steps": log.train_steps,
            "train_loss": [v[i] for v in log.train_loss],
            "test_loss_steps": log.test_steps,
            "test_loss": [v[i] for v in log.test_loss],
            "final_test_loss": finals["test_loss"][i],
            "final_test_loss_eval": finals["test_loss_eval"][i],
            "final_train_loss": (log.train_loss[-1][i] if paper else finals["train_loss_eval"][i]),
            "final_train_loss_eval": finals["train_loss_eval"][i],
            "test_accuracy": finals["test_accuracy"][i],
            "train_accuracy": finals["train_accuracy"][i],
            "wall_time_s": finals["wall_time_s"],
            "wall_time_note": f"one job trained {len(cfg.seeds)} model(s) together",
            "steps_run": finals["steps_run"],
            "steps_per_s": finals["steps_run"] / max(finals["wall_time_s"], 1e-9),
            "loss_note": LOSS_NOTE[train_cfg.protocol],
            **meta,
        }
        write_json(p.metrics, metrics)
        write_atomically(p.model, stack.state_dict_of(i))
        all_metrics.append(metrics)
    return all_metrics
