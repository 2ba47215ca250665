"""CIFAR-10 experiments (paper §5, Fig. 3 left, Fig. 5, App. F.4-F.5; the original's
`src/training/train.py` with `configs/cifar10_*`): ResNet-18 embeddings of 2, 3 or 5
dimensions; the seeds of a job trained together as one stacked network (each with its own
weights and BatchNorm statistics), representations extracted once, every pair compared."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ...data.cifar10 import CIFAR10, normalise
from ...data.radial import label_codes
from ...training.devices import resolve_device, set_cuda_float32
from ...io import provenance
from ...models.extract import extract
from ...models.resnet import build_cifar_model, effective_bn_momentum
from ...models.stacked import StackedModelClass
from ...training.loop import RunOptions, TrainConfig, TrainData, TrainLog, train
from ..outputs import SeedFiles, SeedRepresentations, write_seed
from ..synthetic.training import seed_metrics, speed_metrics

NUM_CLASSES = 10
DEFAULT_BN_MOMENTUM = 0.1  # PyTorch's


@dataclass(frozen=True)
class CifarModelConfig:
    """One CIFAR-10 job's models; every value comes from config.yaml's `cifar10`."""

    rep_dim: int | Sequence[int]  # one M, or several: every seed at each (the stack across M)
    seeds: Sequence[int]
    base_width: int
    g_width: int
    bn_momentum: float | str  # "protocol", "original" (1 - 0.9^(K+1)) or a number
    device: str  # auto | cpu | cuda
    tf32: str  # CUDA only: convolutions | none | all (training.devices.set_cuda_float32)
    channels_last: bool  # CUDA only
    eval_batch_size: int
    cuda_graph: bool  # CUDA: the step replayed from CUDA graphs (RunOptions.cuda_graph)

    @property
    def models(self) -> list[tuple[int, int]]:
        """The job's models as (M, seed), M-major: every seed at each of its M."""
        dims = [self.rep_dim] if isinstance(self.rep_dim, int) else list(self.rep_dim)
        return [(int(m), int(seed)) for m in dims for seed in self.seeds]


def resolve_bn_momentum(value: float | str, protocol: str) -> float:
    """The BatchNorm momentum of f evaluated once per step. The original evaluated f K+1 = 11
    times per step in train mode, an effective momentum of 1 - 0.9^11 = 0.686: the
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
        warnings.warn("no CUDA device: training ResNet-18 on the CPU, far slower than on a GPU "
                      "(docs/gpu.md); use a GPU node for the paper scale", RuntimeWarning,
                      stacklevel=2)
    return device


LOSS_NOTE = {
    "paper": "final_test_loss: as the original recorded it, the last test pass during training "
             "(BatchNorm in train mode, test batches of the training batch size in order, mean "
             "of the batch means; step 20,000 of 20,319 at paper scale); final_train_loss: the "
             "last logged window of training losses; *_eval: eval mode on the whole split after "
             "training",
    "clean": "final_test_loss, final_train_loss: eval mode (BatchNorm running statistics) on the "
             "whole split after training, as *_eval",
}


def cifar_stack(cfg: CifarModelConfig, momentum: float) -> StackedModelClass:
    """The (ResNet-18 f, MLP g) models of the job (cfg.models) as one stack, each initialised as
    the original's seed s at its M, with BatchNorm momentum `momentum` (resolve_bn_momentum)."""
    return StackedModelClass([
        build_cifar_model(seed, m, NUM_CLASSES, cfg.g_width, cfg.base_width, momentum)
        for m, seed in cfg.models
    ])


def cifar_identity(cfg: CifarModelConfig, data: CIFAR10, momentum: float,
                   on_cuda: bool) -> dict[str, Any]:
    """What a CIFAR job's checkpoint must match besides the training settings."""
    rep_dim = cfg.rep_dim if isinstance(cfg.rep_dim, int) else list(cfg.rep_dim)
    return {"model": {"rep_dim": rep_dim, "seeds": list(cfg.seeds), "base_width": cfg.base_width,
                      "g_width": cfg.g_width, "bn_momentum": momentum,
                      **({"tf32": cfg.tf32} if on_cuda else {})},
            "data": {"n_train": len(data.train_labels), "n_test": len(data.test_labels),
                     "standin": data.standin}}


def train_cifar_models(cfg: CifarModelConfig, train_cfg: TrainConfig, data: CIFAR10,
                       files: Sequence[SeedFiles], run_config: Mapping[str, Any],
                       checkpoint: str | Path | None = None) -> list[dict[str, Any]]:
    """Train cfg.models as one stack, then write each model's weights, metrics and test and train
    representations to `files` (in cfg.models' order) as if trained alone; return the metrics."""
    if len(files) != len(cfg.models):
        raise ValueError(f"{len(files)} output sets for {len(cfg.models)} models")
    device = training_device(cfg.device)
    on_cuda = device.type == "cuda"
    if on_cuda:
        set_cuda_float32(cfg.tf32)
    momentum = resolve_bn_momentum(cfg.bn_momentum, train_cfg.protocol)
    stack = cifar_stack(cfg, momentum)
    codes = label_codes(np.arange(NUM_CLASSES), NUM_CLASSES)
    splits = {"test": (normalise(data.test_images), data.test_labels),
              "train": (normalise(data.train_images), data.train_labels)}
    train_data = TrainData(splits["train"][0], data.train_labels, splits["test"][0],
                           data.test_labels, codes)
    options = RunOptions(checkpoint=checkpoint, device=device, eval_batch_size=cfg.eval_batch_size,
                         channels_last=cfg.channels_last and on_cuda, final_train_eval=True,
                         cuda_graph=cfg.cuda_graph,
                         identity=cifar_identity(cfg, data, momentum, on_cuda))
    log, finals = train(stack, train_data, train_cfg, options)
    f_all = {}
    for split, (images, _) in splits.items():
        f_all[split], g_all = extract(stack, images, codes, cfg.eval_batch_size,
                                      options.channels_last)
    stack.cpu()
    shared = {"experiment": "cifar10", "standin_data": data.standin, "K": NUM_CLASSES,
              "M": None, "width": cfg.g_width, "base_width": cfg.base_width,  # M: each model's
              "bn_momentum": momentum, "fix_g": 0.0, "fix_f": 0.0, "steps": train_cfg.steps,
              "steps_total": finals["steps_total"], "protocol": train_cfg.protocol,
              "device": device.type, **provenance(run_config)}
    all_metrics = []
    for i, ((m, seed), out) in enumerate(zip(cfg.models, files, strict=True)):
        meta = {**shared, "M": m, "seed": seed}
        reps = SeedRepresentations(g_all[i, :, :m], {s: f_all[s][i, :, :m] for s in splits},
                                   {s: labels for s, (_, labels) in splits.items()})
        metrics = cifar_seed_metrics(log, finals, i, train_cfg, len(cfg.models))
        write_seed(out, reps, meta, metrics, stack.state_dict_of(i))
        all_metrics.append({**metrics, **meta})
    return all_metrics


def cifar_seed_metrics(log: TrainLog, finals: Mapping[str, Any], i: int,
                       train_cfg: TrainConfig, n_models: int) -> dict[str, Any]:
    """Seed i's curves, final losses (the protocol's and eval mode) and accuracies."""
    paper = train_cfg.rules.train_mode_test_loss
    return {**seed_metrics(log, finals, i),
            "final_train_loss": log.train_loss[-1][i] if paper else finals["train_loss_eval"][i],
            "final_train_loss_eval": finals["train_loss_eval"][i],
            "train_accuracy": finals["train_accuracy"][i],
            "wall_time_note": f"one job trained {n_models} model(s) together",
            **speed_metrics(finals), "loss_note": LOSS_NOTE[train_cfg.protocol]}
