"""Roeder et al. (2021) §5.2 and App. A.3, Fig. 3: CPC models on image patches (models/cpc.py),
f and g compared by mean CCA over training (3b), training data (3c) and hidden units (3d). One
job trains one configuration's seeds stacked, each early-stopped on the validation loss."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from ...data.cifar10 import load_cifar10
from ...data.digits import load_digit_images
from ...data.patches import PatchSpec, random_patches
from ...io import provenance, write_npz
from ...io.host import to_host
from ...models.cpc import ContrastiveStack, build_cpc_model
from ...models.extract import extract
from ...training.early_stopping import EarlyStopping
from ...training.loop import RunOptions, TrainConfig, TrainData, TrainLog, evaluate
from ..synthetic.dynamics import Snapshots, run_with_snapshots
from ..outputs import SeedFiles, SeedRepresentations, write_seed
from .cpc_tables import SNAPSHOT_COLUMNS, SNAPSHOT_MEASURES, cca_coefficients

DATASETS = ("cifar10", "digits")


@dataclass(frozen=True)
class CPCModelConfig:
    """One configuration's models and data, from config.yaml's `roeder.cpc`."""

    dataset: str
    width: int
    depth: int
    rep_dim: int
    seeds: Sequence[int]
    data_fraction: float
    n_validation: int
    n_test: int
    split_seed: int
    patch: Sequence[int]
    augment: Mapping[str, float]
    shared_draws: bool = False  # the seeds share batches, patches and augmentation (models/cpc.py)

    @property
    def spec(self) -> PatchSpec:
        return PatchSpec(int(self.patch[0]), int(self.patch[1]), **self.augment)


@dataclass(frozen=True)
class CPCData:
    """Images (N, C, H, W) float32 in [0, 1]; `source` says what they are."""

    train: np.ndarray
    validation: np.ndarray
    test: np.ndarray
    source: str


@dataclass(frozen=True)
class CPCRun:
    """How a configuration trains beyond its settings (pairs index seeds; patience: passes)."""

    snapshot_steps: Sequence[int]
    pairs: Sequence[tuple[int, int]]
    patience: int
    checkpoint: str | Path | None = None
    device: str | torch.device = "cpu"


def cpc_data(cfg: CPCModelConfig, pool: np.ndarray, test: np.ndarray | None,
             source: str) -> CPCData:
    """Split by a permutation of `split_seed`: test first (from `pool` where `test` is None,
    else `test`'s first n_test), then validation; the training share is the first
    `data_fraction` of the rest, so a smaller share is part of every larger one."""
    rng = np.random.default_rng(cfg.split_seed)
    order = rng.permutation(len(pool))
    if test is None:
        test, order = pool[order[: cfg.n_test]], order[cfg.n_test :]
    else:
        test = test[: cfg.n_test]
    validation, rest = pool[order[: cfg.n_validation]], order[cfg.n_validation :]
    n_train = int(round(cfg.data_fraction * len(rest)))
    if len(test) < cfg.n_test or n_train < 1:
        raise ValueError(f"{source}: {len(pool)} images leave {len(test)} test images (want "
                         f"{cfg.n_test}) and {n_train} training images after {cfg.n_validation} "
                         "for validation")
    return CPCData(pool[rest[:n_train]], validation, test, source)


def load_cpc_data(cfg: CPCModelConfig, cifar_folder: str | Path | None) -> CPCData:
    """The configuration's images: scikit-learn's digits, or CIFAR-10 (or its stand-in)."""
    if cfg.dataset == "digits":
        return cpc_data(cfg, load_digit_images(), None, "scikit-learn's 8 x 8 digits")
    if cfg.dataset != "cifar10" or cifar_folder is None:
        raise ValueError(f"roeder.cpc.dataset must be one of {DATASETS} (cifar10 with its "
                         f"folder), got {cfg.dataset!r}")
    cifar = load_cifar10(cifar_folder)
    source = "the CIFAR-10 stand-in (generated)" if cifar.standin else "CIFAR-10"
    return cpc_data(cfg, _unit(cifar.train_images), _unit(cifar.test_images), source)


def _unit(images: np.ndarray) -> np.ndarray:
    """uint8 images as float32 in [0, 1]."""
    return images.astype(np.float32) / np.float32(255)


def cpc_stack(cfg: CPCModelConfig, channels: int, data_seed: int,
              train_images: np.ndarray | None = None) -> ContrastiveStack:
    """Every seed, seed s initialised by torch.manual_seed(s), each drawing its own batches,
    patches and augmentation from `train_images` (unless cfg.shared_draws or none given)."""
    spec = cfg.spec
    models = [build_cpc_model(seed, spec.features(channels), cfg.width, cfg.depth, cfg.rep_dim)
              for seed in cfg.seeds]
    if cfg.shared_draws or train_images is None:
        return ContrastiveStack(models, spec, data_seed)
    return ContrastiveStack(models, spec, data_seed, cfg.seeds, torch.from_numpy(train_images))


def train_data(data: CPCData, batch_size: int) -> TrainData:
    """The loop's view: validation as its test set; a label is a place in its batch."""
    n_val = len(data.validation)
    return TrainData(data.train, np.arange(len(data.train)), data.validation,
                     np.arange(n_val) % batch_size, np.zeros((1, 1), dtype=np.float32))


def train_cpc(cfg: CPCModelConfig, train_cfg: TrainConfig, data: CPCData, run: CPCRun,
              files: Sequence[SeedFiles], run_config: Mapping[str, Any]) -> pd.DataFrame:
    """Train the seeds, early-stopped, with snapshots; write each seed's files: f on the top and
    g on the bottom test patches, a fixed candidate set of K = n_test labels."""
    if len(files) != len(cfg.seeds):
        raise ValueError(f"{len(files)} output sets for {len(cfg.seeds)} seeds")
    stack = cpc_stack(cfg, data.train.shape[1], train_cfg.data_seed, data.train)
    x_test, y_test = (to_host(p) for p in stack.patch_pair(torch.from_numpy(data.test)))
    snapshots = Snapshots(lambda: extract(stack.stack, x_test, y_test), cfg.seeds,
                          run.snapshot_steps, {"measures": SNAPSHOT_MEASURES}, run.pairs,
                          SNAPSHOT_COLUMNS, cca_coefficients)
    options = RunOptions(checkpoint=run.checkpoint, device=run.device,
                         eval_batch_size=train_cfg.batch_size,
                         early_stopping=EarlyStopping(run.patience),
                         full_batches=True,  # S, the batch, the same size at every step
                         objective=None if stack.seeds is None else stack.objective,
                         identity={"model": asdict(cfg), "snapshots": sorted(snapshots.wanted)})
    result = run_with_snapshots(stack, train_data(data, train_cfg.batch_size), train_cfg,
                                snapshots, options)
    test = test_pass(stack, data.test, train_cfg.batch_size)
    f_all, g_all = extract(stack.stack, x_test, y_test)
    stack.cpu()
    shared = provenance(run_config)
    for i, (seed, out) in enumerate(zip(cfg.seeds, files, strict=True)):
        meta = {"experiment": "roeder_cpc", "dataset": cfg.dataset, "data": data.source,
                "M": cfg.rep_dim, "width": cfg.width, "data_fraction": cfg.data_fraction,
                "n_train": len(data.train), "steps": train_cfg.steps, **shared, "seed": int(seed)}
        reps = SeedRepresentations(g_all[i], {"test": f_all[i]},
                                   {"test": np.arange(len(data.test))})
        write_seed(out, reps, meta, cpc_metrics(result.log, result.finals, test, i),
                   stack.state_dict_of(i))
    return result.snapshots


def cpc_metadata(cfg: CPCModelConfig, train_cfg: TrainConfig, run: CPCRun,
                 data: CPCData) -> dict[str, Any]:
    """The snapshots table's parquet metadata."""
    return {"experiment": "roeder_cpc", "data": data.source, "n_train": len(data.train),
            "pairs": [list(p) for p in run.pairs], "patience": run.patience,
            "protocol": train_cfg.protocol, "measures": SNAPSHOT_MEASURES,
            **provenance(asdict(cfg))}


def test_pass(stack: ContrastiveStack, images: np.ndarray,
              batch_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Per model: contrastive loss and top-1 accuracy on the held-out test images."""
    device = next(stack.parameters()).device
    x = torch.from_numpy(images).to(device)
    labels = torch.arange(len(images), device=device) % batch_size
    return evaluate(stack, x, labels, torch.zeros((1, 1), device=device), batch_size)


def cpc_metrics(log: TrainLog, finals: Mapping[str, Any], test: tuple[np.ndarray, np.ndarray],
                i: int) -> dict[str, Any]:
    """Model i's curves, early stopping and final values."""
    stopping = finals["early_stopping"]
    return {"train_loss_steps": log.train_steps, "train_loss": [v[i] for v in log.train_loss],
            "validation_loss_steps": log.test_steps,
            "validation_loss": [v[i] for v in log.test_loss],
            "best_step": stopping["best_step"][i],
            "best_validation_loss": stopping["best_loss"][i],
            "stopped_step": stopping["stopped_step"][i], "steps_done": stopping["steps_done"],
            "final_validation_loss": finals["test_loss_eval"][i],
            "validation_accuracy": finals["test_accuracy"][i],
            "final_test_loss": float(test[0][i]), "test_accuracy": float(test[1][i]),
            "wall_time_s": finals["wall_time_s"],
            "loss_note": "contrastive losses in candidate sets of the batch size; the model is "
                         "the one of its best validation pass (best_step); stopped_step None: "
                         "it ran to the last step"}


def write_examples(path: str | Path, data: CPCData, cfg: CPCModelConfig, data_seed: int,
                   n: int = 6) -> None:
    """Fig. 3a's material: n training images, one augmented draw of their patches, corners."""
    images = torch.from_numpy(data.train[:n])
    generator = torch.Generator().manual_seed(data_seed)
    (top, top_at), (bottom, bottom_at) = random_patches(images, cfg.spec, generator)
    arrays = {"top": top, "bottom": bottom, "top_at": top_at, "bottom_at": bottom_at}
    write_npz(path, {"images": data.train[:n], **{k: to_host(v) for k, v in arrays.items()}},
              {"experiment": "roeder_cpc", "data": data.source, "patch": list(cfg.patch)})
